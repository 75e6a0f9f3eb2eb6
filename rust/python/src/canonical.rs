//! Canonical JSON of Python objects, written straight from the objects into one buffer
//! through the core's primitives (no intermediate tree), and the digest functions.
//!
//! The walk runs no Python code: dicts are read with `PyDict_Next` (a dict subclass's
//! `__iter__`/`keys` are not consulted), strings through their UTF-8 form (a `str` subclass
//! is its text), numbers through their C values, type names from the type's own string. The
//! one way code could still run is a garbage collection, which CPython 3.11 may start when an
//! error path allocates an exception (a lone surrogate raises `UnicodeEncodeError` inside
//! CPython), and which would run any `__del__`; so the collector is paused for the walk
//! ([`CollectorPaused`]). Hence no container can change while it is read, and borrowed
//! pointers stay valid for the whole walk.

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use runcontext_core::canonical::{
    enter, write_array, write_f64, write_i64, write_object, write_str,
};
use runcontext_core::{CanonicalError, CanonicalErrorKind, ParseErrorKind};

use crate::errors::{canonical_error, parse_error, type_name};

/// Above this many bytes, hashing releases the GIL (as blake3-py does).
const DETACH_THRESHOLD: usize = 2048;

fn kind_error(kind: CanonicalErrorKind) -> CanonicalError {
    CanonicalError::new(kind)
}

// The UTF-8 text of a str (or str subclass) with the lifetime of the object it belongs to.
// SAFETY: the caller keeps `obj` alive and unmodified (str objects are immutable) for 'a.
unsafe fn utf8<'a>(obj: *mut ffi::PyObject) -> Option<&'a str> {
    // Compact ASCII strings (most keys and many values) are their own UTF-8: read them in
    // place, without a call into CPython.
    if unsafe { ffi::PyUnicode_IS_COMPACT_ASCII(obj) } != 0 {
        let len = unsafe { ffi::PyUnicode_GET_LENGTH(obj) } as usize;
        let data = unsafe { ffi::PyUnicode_DATA(obj) }.cast::<u8>();
        let bytes = unsafe { std::slice::from_raw_parts(data, len) };
        return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    let mut size: ffi::Py_ssize_t = 0;
    let data = unsafe { ffi::PyUnicode_AsUTF8AndSize(obj, &mut size) };
    if data.is_null() {
        // A lone surrogate: clear the UnicodeEncodeError, the caller reports its own.
        unsafe { ffi::PyErr_Clear() };
        return None;
    }
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size as usize) };
    Some(unsafe { std::str::from_utf8_unchecked(bytes) })
}

fn int_text(int: &Bound<'_, PyAny>) -> String {
    // int.__repr__ of the value itself, whatever a subclass overrides.
    let text =
        unsafe { Bound::from_owned_ptr_or_err(int.py(), ffi::PyNumber_ToBase(int.as_ptr(), 10)) };
    text.map(|t| t.to_string())
        .unwrap_or_else(|_| "(too many digits to print)".to_owned())
}

fn write_value(
    out: &mut Vec<u8>,
    obj: &Bound<'_, PyAny>,
    depth: usize,
) -> Result<(), CanonicalError> {
    if obj.is_exact_instance_of::<PyFloat>() {
        // Exact floats and ints first: a pointer comparison each, and arrays of numbers are
        // common (an int's value costs less than the chain of checks below would).
        // SAFETY: `obj` is exactly a float.
        write_f64(out, unsafe { ffi::PyFloat_AS_DOUBLE(obj.as_ptr()) })?;
    } else if obj.is_exact_instance_of::<PyInt>() {
        write_int(out, obj)?;
    } else if obj.is_instance_of::<PyString>() {
        let text = unsafe { utf8(obj.as_ptr()) }
            .ok_or_else(|| kind_error(CanonicalErrorKind::LoneSurrogate))?;
        write_str(out, text);
    } else if let Ok(dict) = obj.cast::<PyDict>() {
        write_dict(out, dict, depth)?;
    } else if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        write_sequence(out, obj, depth)?;
    } else if obj.is_none() {
        out.extend_from_slice(b"null");
    } else if let Ok(b) = obj.cast::<PyBool>() {
        out.extend_from_slice(if b.is_true() { b"true" } else { b"false" });
    } else if obj.is_instance_of::<PyInt>() {
        write_int(out, obj)?;
    } else if let Ok(float) = obj.cast::<PyFloat>() {
        write_f64(out, float.value())?;
    } else {
        return Err(kind_error(CanonicalErrorKind::UnsupportedType(type_name(
            obj,
        ))));
    }
    Ok(())
}

/// Writes an int or int subclass (never a bool: the caller has checked for those) by value.
fn write_int(out: &mut Vec<u8>, int: &Bound<'_, PyAny>) -> Result<(), CanonicalError> {
    // The overflow flag, not an OverflowError: raising would allocate an exception.
    let mut overflow = 0;
    // SAFETY: `int` is an int (or subclass); this reads its value and runs no code.
    let value = unsafe { ffi::PyLong_AsLongLongAndOverflow(int.as_ptr(), &mut overflow) };
    if overflow != 0 {
        return Err(kind_error(CanonicalErrorKind::IntegerOutOfRange(int_text(
            int,
        ))));
    }
    write_i64(out, value)
}

fn write_sequence(
    out: &mut Vec<u8>,
    seq: &Bound<'_, PyAny>,
    depth: usize,
) -> Result<(), CanonicalError> {
    let py = seq.py();
    let ptr = seq.as_ptr();
    let is_list = seq.is_instance_of::<PyList>();
    // SAFETY: `seq` is a list or tuple; no Python code runs during the walk, so its length
    // and items cannot change, and borrowed items stay alive while `seq` does.
    let len = unsafe {
        if is_list {
            ffi::PyList_GET_SIZE(ptr)
        } else {
            ffi::PyTuple_GET_SIZE(ptr)
        }
    };
    write_array(out, len as usize, depth, |out, i, depth| {
        let item = unsafe {
            let i = i as ffi::Py_ssize_t;
            let item = if is_list {
                ffi::PyList_GET_ITEM(ptr, i)
            } else {
                ffi::PyTuple_GET_ITEM(ptr, i)
            };
            Borrowed::from_ptr(py, item)
        };
        write_value(out, &item, depth)
    })
}

fn write_dict(
    out: &mut Vec<u8>,
    dict: &Bound<'_, PyDict>,
    depth: usize,
) -> Result<(), CanonicalError> {
    // Depth first, then the keys in iteration order, then (sorted) duplicates and values.
    enter(depth)?;
    let py = dict.py();
    let len = dict.len();
    // Small dicts (most of a chat transcript) sort their members on the stack, not the heap.
    const INLINE: usize = 8;
    let mut inline: [(&str, *mut ffi::PyObject); INLINE] = [("", std::ptr::null_mut()); INLINE];
    let mut heap: Vec<(&str, *mut ffi::PyObject)> = Vec::new();
    let members: &mut [(&str, *mut ffi::PyObject)] = if len <= INLINE {
        &mut inline[..len]
    } else {
        heap.resize(len, ("", std::ptr::null_mut()));
        &mut heap
    };
    let (mut pos, mut key, mut value): (ffi::Py_ssize_t, *mut ffi::PyObject, *mut ffi::PyObject) =
        (0, std::ptr::null_mut(), std::ptr::null_mut());
    let mut count = 0;
    // SAFETY: PyDict_Next yields borrowed references that live as long as the dict, which
    // nothing can modify during the walk (so it yields exactly `len` members).
    while count < len
        && unsafe { ffi::PyDict_Next(dict.as_ptr(), &mut pos, &mut key, &mut value) } != 0
    {
        let key_obj = unsafe { Borrowed::from_ptr(py, key) };
        if !key_obj.is_instance_of::<PyString>() {
            return Err(kind_error(CanonicalErrorKind::NonStringKey(type_name(
                &key_obj,
            ))));
        }
        // SAFETY: the dict holds the key (an immutable str) for the whole walk.
        let text =
            unsafe { utf8(key) }.ok_or_else(|| kind_error(CanonicalErrorKind::LoneSurrogate))?;
        members[count] = (text, value);
        count += 1;
    }
    write_object(out, &mut members[..count], depth, |out, value, depth| {
        // SAFETY: the dict holds the value for the whole walk.
        let item = unsafe { Borrowed::from_ptr(py, *value) };
        write_value(out, &item, depth)
    })
}

/// Pauses CPython's cyclic garbage collector while it lives (restoring its former state), so
/// that no `__del__` can run in the middle of a walk.
struct CollectorPaused {
    was_enabled: bool,
}

impl CollectorPaused {
    fn new() -> Self {
        // SAFETY: called with the GIL held; returns whether the collector was enabled.
        Self {
            was_enabled: unsafe { ffi::PyGC_Disable() } != 0,
        }
    }
}

impl Drop for CollectorPaused {
    fn drop(&mut self) {
        if self.was_enabled {
            // SAFETY: called with the GIL held, undoing the PyGC_Disable above.
            unsafe { ffi::PyGC_Enable() };
        }
    }
}

/// A buffer larger than this is freed after the call rather than kept for the next one.
const KEEP_AT_MOST: usize = 16 << 20;

thread_local! {
    /// The output buffer of this thread, kept (cleared) between calls.
    ///
    /// A fresh buffer per call was the cliff of issue 13: a large output grew one buffer and
    /// was then copied into a `bytes` of the same size, and freeing both left more free memory
    /// at the top of the heap than glibc's trim threshold, so it went back to the kernel and
    /// every call faulted its pages in again (a 1 MB string: ~1.2 ms a call instead of tens
    /// of µs). With one buffer kept, each call allocates only its `bytes`, which the heap
    /// reuses.
    static OUTPUT: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(4096));
}

/// Runs `finish` on the canonical JSON of `value`, written into this thread's kept buffer.
fn with_canonical<T>(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    finish: impl FnOnce(&[u8]) -> T,
) -> PyResult<T> {
    let walk = |out: &mut Vec<u8>| -> PyResult<T> {
        out.clear();
        let walked = {
            let _paused = CollectorPaused::new();
            write_value(out, value, 0)
        };
        walked.map_err(|e| canonical_error(py, e))?;
        Ok(finish(out))
    };
    OUTPUT.with(|cell| match cell.try_borrow_mut() {
        Ok(mut out) => {
            let result = walk(&mut out);
            if out.capacity() > KEEP_AT_MOST {
                *out = Vec::with_capacity(4096);
            }
            result
        }
        // Only reachable if `finish` called back into this function on the same thread;
        // nothing does, but a fresh buffer is correct there too.
        Err(_) => walk(&mut Vec::new()),
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
    with_canonical(py, value, |out| PyBytes::new(py, out))
}

/// `blake3:` + hex of BLAKE3-256 of the canonical JSON of `value`.
#[pyfunction]
#[pyo3(signature = (value, /))]
pub fn digest(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    with_canonical(py, value, |out| hash(py, out))
}

/// `blake3:` + hex of BLAKE3-256 of raw bytes (any contiguous buffer).
#[pyfunction]
#[pyo3(signature = (data, /))]
pub fn digest_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(bytes) = data.cast::<PyBytes>() {
        // bytes are immutable, so the GIL can go while they are hashed.
        return Ok(hash(py, bytes.as_bytes()));
    }
    let mut view = std::mem::MaybeUninit::<ffi::Py_buffer>::uninit();
    // SAFETY: a PyBUF_SIMPLE request asks for one contiguous run of bytes of any format.
    if unsafe { ffi::PyObject_GetBuffer(data.as_ptr(), view.as_mut_ptr(), ffi::PyBUF_SIMPLE) } != 0
    {
        // SAFETY: PyObject_GetBuffer failed and set an exception, which is replaced here.
        unsafe { ffi::PyErr_Clear() };
        return Err(PyTypeError::new_err(format!(
            "digest_bytes() takes bytes or a contiguous bytes-like object, got {}; {}",
            type_name(data),
            if data.is_instance_of::<PyString>() {
                "encode text first, e.g. data.encode()"
            } else {
                "pass bytes(data)"
            }
        )));
    }
    // SAFETY: the export succeeded, so `view` is initialised until PyBuffer_Release.
    let mut view = unsafe { view.assume_init() };
    let len = usize::try_from(view.len).unwrap_or(0);
    // A writable buffer could be changed while it is read by code that does not hold the
    // GIL (numpy, a shared mmap), so it is copied first; a read-only one is hashed in place.
    let digest = if len == 0 || view.buf.is_null() {
        runcontext_core::digest_bytes(&[])
    } else {
        // SAFETY: the exporter guarantees `len` readable bytes at `buf` until release.
        let bytes = unsafe { std::slice::from_raw_parts(view.buf.cast::<u8>(), len) };
        if view.readonly != 0 {
            hash(py, bytes)
        } else {
            let copy = bytes.to_vec();
            hash(py, &copy)
        }
    };
    // SAFETY: releases the export made above, once.
    unsafe { ffi::PyBuffer_Release(&mut view) };
    Ok(digest)
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
    } else if data.is_instance_of::<PyString>() {
        // SAFETY: `data` is a str the caller holds for the whole call.
        match unsafe { utf8(data.as_ptr()) } {
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
