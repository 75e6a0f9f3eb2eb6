//! Canonical JSON of Python objects, written straight from the objects into one buffer
//! through the core's primitives (no intermediate tree), and the digest functions.
//!
//! The walk runs no Python code: dicts are read with `PyDict_Next` (a dict subclass's
//! `__iter__`/`keys` are not consulted), strings through their UTF-8 form (a `str` subclass
//! is its text), numbers through their C values, type names from the type's own string, all
//! through `ffi.rs` (`ffi::walk`, `ffi::Obj`), which pauses the cyclic collector for the walk
//! and states why the borrowed pointers stay valid.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use runcontext_core::canonical::{
    enter, write_array, write_f64, write_float_run, write_i64, write_int_run, write_object,
    write_str, Output,
};
use runcontext_core::{CanonicalError, CanonicalErrorKind, ParseErrorKind};

use crate::errors::{canonical_error, parse_error, type_name};
use crate::ffi::{self, Dict, Int, Kind, Obj, Str};

/// Above this many bytes, hashing releases the GIL (as blake3-py does).
const DETACH_THRESHOLD: usize = 2048;

fn kind_error(kind: CanonicalErrorKind) -> CanonicalError {
    CanonicalError::new(kind)
}

/// Writes one value, by its kind (exact built-in types first, then subclasses by the same
/// rules: `ffi::Obj::kind`).
fn write_value<O: Output>(out: &mut O, obj: Obj<'_>, depth: usize) -> Result<(), CanonicalError> {
    write_kind(out, obj, obj.kind(), depth)
}

#[inline(always)]
fn write_kind<'a, O: Output>(
    out: &mut O,
    obj: Obj<'a>,
    kind: Kind<'a>,
    depth: usize,
) -> Result<(), CanonicalError> {
    match kind {
        Kind::Int(int) => write_int(out, int),
        Kind::Float(v) => write_f64(out, v),
        Kind::Str(text) => write_text(out, text),
        Kind::Dict(dict) => write_dict(out, dict, depth),
        Kind::Seq(items) => write_sequence(out, items, depth),
        Kind::Null => {
            out.extend_from_slice(b"null");
            Ok(())
        }
        Kind::Bool(b) => {
            out.extend_from_slice(if b { b"true" } else { b"false" });
            Ok(())
        }
        Kind::Other => Err(unsupported(obj)),
    }
}

#[cold]
fn unsupported(obj: Obj<'_>) -> CanonicalError {
    kind_error(CanonicalErrorKind::UnsupportedType(obj.type_name()))
}

/// Writes a str or str subclass as its text.
fn write_text<O: Output>(out: &mut O, text: Str<'_>) -> Result<(), CanonicalError> {
    let text = text
        .utf8()
        .ok_or_else(|| kind_error(CanonicalErrorKind::LoneSurrogate))?;
    write_str(out, text);
    Ok(())
}

/// Writes an int or int subclass (never a bool) by value.
#[inline(always)]
fn write_int<O: Output>(out: &mut O, int: Int<'_>) -> Result<(), CanonicalError> {
    match int.value() {
        Some(value) => write_i64(out, value),
        None => Err(kind_error(CanonicalErrorKind::IntegerOutOfRange(
            int.decimal(),
        ))),
    }
}

/// Writes a list's or a tuple's items.
fn write_sequence<O: Output>(
    out: &mut O,
    items: &[Obj<'_>],
    depth: usize,
) -> Result<(), CanonicalError> {
    let small_ints = ffi::small_ints();
    write_array(out, items.len(), depth, |out, i, depth| {
        let first = items[i];
        let rest = &items[i..];
        // Arrays of numbers are common (and cheap to write): a run of small exact ints or of
        // finite exact floats shares one reservation (the core's write_int_run and
        // write_float_run); the first value the run does not take is written alone.
        match first.kind() {
            Kind::Int(int) => {
                if let Some(small) = small_ints {
                    let written = write_int_run(out, rest.iter().map(|o| small.exact_value(*o)));
                    if written > 0 {
                        return Ok(written);
                    }
                }
                write_int(out, int).map(|()| 1)
            }
            Kind::Float(v) => {
                let written = write_float_run(out, rest.iter().map(|o| o.exact_float()));
                if written > 0 {
                    return Ok(written);
                }
                // Not finite (or a subclass): write_f64 writes or refuses it.
                write_f64(out, v).map(|()| 1)
            }
            kind => write_kind(out, first, kind, depth).map(|()| 1),
        }
    })
}

fn write_dict<O: Output>(out: &mut O, dict: Dict<'_>, depth: usize) -> Result<(), CanonicalError> {
    // Depth first, then the keys in iteration order, then (sorted) duplicates and values.
    enter(depth)?;
    let len = dict.len();
    // Small dicts (most of a chat transcript) sort their members on the stack, not the heap.
    const INLINE: usize = 8;
    let unused = ("", dict.obj());
    let mut inline = [unused; INLINE];
    let mut heap = Vec::new();
    let members: &mut [(&str, Obj<'_>)] = if len <= INLINE {
        &mut inline[..len]
    } else {
        heap.resize(len, unused);
        &mut heap
    };
    let mut count = 0;
    for (key, value) in dict.members() {
        let Some(key) = key.as_str() else {
            return Err(kind_error(CanonicalErrorKind::NonStringKey(
                key.type_name(),
            )));
        };
        let text = key
            .utf8()
            .ok_or_else(|| kind_error(CanonicalErrorKind::LoneSurrogate))?;
        members[count] = (text, value);
        count += 1;
    }
    write_object(out, &mut members[..count], depth, |out, value, depth| {
        write_value(out, *value, depth)
    })
}

/// A buffer larger than this is freed after the call rather than kept for the next one.
const KEEP_AT_MOST: usize = 16 << 20;

thread_local! {
    /// The output buffer of this thread for `digest` (which needs no `bytes`), kept (cleared)
    /// between calls; canonical_json writes into its `bytes` instead (`ffi::BytesOut`).
    ///
    /// With a fresh buffer per call, a large output grew one buffer and was then copied into
    /// a `bytes` of the same size, and freeing both left more free memory at the top of the
    /// heap than glibc's trim threshold, so it went back to the kernel and every call faulted
    /// its pages in again (a 1 MB string: ~1.2 ms a call instead of tens of µs). With one
    /// buffer kept, each call allocates only its `bytes`, which the heap reuses.
    static OUTPUT: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(4096));
}

/// Writes the canonical JSON of `value` into `out` (`ffi::walk`: the collector paused, no
/// Python code run).
fn walk<O: Output>(py: Python<'_>, out: &mut O, value: &Bound<'_, PyAny>) -> PyResult<()> {
    ffi::walk(value, |obj| write_value(out, obj, 0)).map_err(|e| canonical_error(py, e))
}

/// Runs `finish` on the canonical JSON of `value`, written into this thread's kept buffer.
fn with_canonical<T>(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    finish: impl FnOnce(&[u8]) -> T,
) -> PyResult<T> {
    let run = |out: &mut Vec<u8>| -> PyResult<T> {
        out.clear();
        walk(py, out, value)?;
        Ok(finish(out))
    };
    OUTPUT.with(|cell| match cell.try_borrow_mut() {
        Ok(mut out) => {
            let result = run(&mut out);
            if out.capacity() > KEEP_AT_MOST {
                *out = Vec::with_capacity(4096);
            }
            result
        }
        // Only reachable if `finish` called back into this function on the same thread;
        // nothing does, but a fresh buffer is correct there too.
        Err(_) => run(&mut Vec::new()),
    })
}

fn hash(py: Python<'_>, data: &[u8]) -> String {
    if data.len() > DETACH_THRESHOLD {
        py.detach(|| runcontext_core::digest_bytes(data))
    } else {
        runcontext_core::digest_bytes(data)
    }
}

/// Canonical JSON (RFC 8785) of a JSON-compatible Python value.
#[pyfunction]
#[pyo3(signature = (value, /))]
pub fn canonical_json<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    ffi::write_bytes(py, |out| walk(py, out, value))
}

/// `blake3:` + hex of BLAKE3-256 of the canonical JSON of `value` (for `digest::digest`,
/// which takes a top-level str itself).
pub fn digest(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    with_canonical(py, value, |out| hash(py, out))
}

/// A str holding a lone surrogate, located like any other error: its surrogatepass encoding
/// is parsed, and the parser stops at the surrogate's bytes (offsets count UTF-8 bytes).
fn lone_surrogate_in_text(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyErr {
    let encoded = match text.call_method1("encode", ("utf-8", "surrogatepass")) {
        Ok(encoded) => encoded,
        Err(error) => return error,
    };
    let Ok(bytes) = encoded.cast::<PyBytes>() else {
        return canonical_error(py, kind_error(CanonicalErrorKind::LoneSurrogate));
    };
    match runcontext_core::canonicalize_text(bytes.as_bytes()) {
        Err(mut error) => {
            // The first problem in the text wins; where that is the surrogate's bytes, say so.
            if error.kind == ParseErrorKind::InvalidUtf8 {
                error.kind = ParseErrorKind::Canonical(CanonicalErrorKind::LoneSurrogate);
            }
            parse_error(py, error)
        }
        Ok(_) => canonical_error(py, kind_error(CanonicalErrorKind::LoneSurrogate)),
    }
}

/// Canonical JSON of a JSON text, parsed strictly in Rust (duplicate names, unsafe
/// integers and more are refused with line and column).
#[pyfunction]
#[pyo3(signature = (data, /))]
pub fn canonicalize_text<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let text: &[u8] = if let Ok(bytes) = data.cast::<PyBytes>() {
        bytes.as_bytes()
    } else if let Ok(text) = data.cast::<PyString>() {
        match ffi::utf8(text) {
            Some(text) => text.as_bytes(),
            None => return Err(lone_surrogate_in_text(py, data)),
        }
    } else {
        return Err(PyTypeError::new_err(format!(
            "canonicalize_text() takes bytes or str, got {}",
            type_name(data)
        )));
    };
    let result = if text.len() > DETACH_THRESHOLD {
        py.detach(|| runcontext_core::canonicalize_text(text))
    } else {
        runcontext_core::canonicalize_text(text)
    };
    result
        .map(|out| PyBytes::new(py, &out))
        .map_err(|e| parse_error(py, e))
}
