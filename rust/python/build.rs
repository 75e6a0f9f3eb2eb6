//! Sets PyO3's interpreter cfgs (`Py_3_12`, `Py_GIL_DISABLED`, …) for this crate: the
//! canonical JSON walk reads a one-digit int in place, whose layout differs between 3.11 and
//! 3.12 (`src/canonical.rs`, `compact_value`).
//!
//! Copies the conformance vectors (`docs/vectors/*.json` and `*.txt`, their one committed
//! copy) into `OUT_DIR/vectors/`, from where maturin puts them in the wheel as
//! `runcontext/vectors/` (pyproject.toml, the `include` from `out-dir`), and an editable
//! install copies them into `python/runcontext/vectors/` (ignored by git): `runcontext
//! verify-vectors` with no path checks an installation against the vectors it was built with.
use std::path::Path;
use std::{env, fs};

fn main() {
    pyo3_build_config::use_pyo3_cfgs();

    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/vectors");
    println!("cargo::rerun-if-changed=build.rs");
    // A directory: cargo reruns this script when any file in it changes.
    println!("cargo::rerun-if-changed={}", source.display());
    let out = Path::new(&env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("vectors");
    if out.exists() {
        // A vectors file removed from docs/ must not stay in the wheel.
        fs::remove_dir_all(&out).expect("OUT_DIR/vectors can be removed");
    }
    fs::create_dir_all(&out).expect("OUT_DIR/vectors can be created");
    let entries = fs::read_dir(&source).unwrap_or_else(|err| {
        panic!(
            "{}: {err}; the wheel ships the conformance vectors of docs/vectors/: build from \
             the repository or its sdist",
            source.display()
        )
    });
    for entry in entries {
        let path = entry.expect("docs/vectors can be listed").path();
        let shipped = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("json" | "txt")
        );
        if shipped && path.is_file() {
            let name = path.file_name().expect("a file has a name");
            fs::copy(&path, out.join(name))
                .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        }
    }
}
