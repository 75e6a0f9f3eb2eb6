//! Sets PyO3's interpreter cfgs (`Py_3_12`, `Py_GIL_DISABLED`, …) for this crate: the
//! canonical JSON walk reads a one-digit int in place, whose layout differs between 3.11 and
//! 3.12 (`src/canonical.rs`, `compact_value`).
fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
