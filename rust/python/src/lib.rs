//! `runcontext._core`: the PyO3 binding of `runcontext-core`.
//!
//! Each function converts its arguments, calls the core and maps the core's error to a
//! Python exception (`errors.rs`). No format rule lives in this crate. Raw CPython access
//! (every `unsafe` block) is in `ffi.rs`, with the invariants it relies on.

use pyo3::prelude::*;

mod canonical;
mod digest;
mod errors;
mod ffi;
mod records;
mod runcontext;
mod transcript;

// The raw walk over dicts and lists relies on the GIL: no free-threaded build.
#[pymodule(gil_used = true)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_DEPTH", runcontext_core::MAX_DEPTH)?;
    m.add("MAX_ENTRIES", runcontext_core::MAX_ENTRIES)?;
    m.add("FORMAT_VERSION", runcontext_core::FORMAT_VERSION)?;
    m.add_function(wrap_pyfunction!(canonical::canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(canonical::canonicalize_text, m)?)?;
    m.add_function(wrap_pyfunction!(digest::digest, m)?)?;
    m.add_function(wrap_pyfunction!(digest::digest_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(digest::keyed_digest, m)?)?;
    m.add_function(wrap_pyfunction!(digest::keyed_digest_bytes, m)?)?;
    m.add("KEYED_DIGEST_PREFIX", runcontext_core::KEYED_DIGEST_PREFIX)?;
    m.add("KEY_BYTES", runcontext_core::KEY_LEN)?;
    m.add_class::<runcontext::RunContext>()?;
    m.add_class::<transcript::Transcript>()?;
    m.add_class::<records::Section>()?;
    m.add_class::<records::Run>()?;
    m.add_class::<records::TornTail>()?;
    m.add_class::<records::Compaction>()?;
    m.add_class::<records::Elision>()?;
    m.add_function(wrap_pyfunction!(transcript::json_value, m)?)?;
    m.add(
        "TRANSCRIPT_VERSION",
        runcontext_core::transcript::TRANSCRIPT_VERSION,
    )?;
    m.add(
        "DEFAULT_MAX_LINE_BYTES",
        runcontext_core::transcript::DEFAULT_MAX_LINE_BYTES,
    )?;
    Ok(())
}
