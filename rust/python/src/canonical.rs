//! Canonical JSON of Python objects, written straight from the objects into one buffer
//! through the core's primitives (no intermediate tree), and the digest functions.
//!
//! The walk runs no Python code: dicts are read with `PyDict_Next` (a dict subclass's
//! `__iter__`/`keys` are not consulted), strings through their UTF-8 form (a `str` subclass
//! is its text), numbers through their C values. So nothing can mutate a container while
//! it is read, and borrowed pointers stay valid for the whole walk.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use runcontext_core::canonical::{write_array, write_f64, write_i64, write_object, write_str};
use runcontext_core::{CanonicalError, CanonicalErrorKind};

use crate::errors::{canonical_error, parse_error};

/// Above this many bytes, hashing releases the GIL (as blake3-py does).
const DETACH_THRESHOLD: usize = 2048;

fn kind_error(kind: CanonicalErrorKind) -> CanonicalError {
    CanonicalError::new(kind)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "<unknown>".to_owned())
}

// The UTF-8 text of a str (or str subclass) with the lifetime of the object it belongs to.
// SAFETY: the caller keeps `obj` alive and unmodified (str objects are immutable) for 'a.
unsafe fn utf8<'a>(obj: *mut ffi::PyObject) -> Option<&'a str> {
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

fn int_text(int: &Bound<'_, PyInt>) -> String {
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
    if obj.is_instance_of::<PyString>() {
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
    } else if let Ok(int) = obj.cast::<PyInt>() {
        match int.extract::<i64>() {
            Ok(v) => write_i64(out, v)?,
            Err(_) => {
                return Err(kind_error(CanonicalErrorKind::IntegerOutOfRange(int_text(
                    int,
                ))))
            }
        }
    } else if let Ok(float) = obj.cast::<PyFloat>() {
        write_f64(out, float.value())?;
    } else {
        return Err(kind_error(CanonicalErrorKind::UnsupportedType(type_name(
            obj,
        ))));
    }
    Ok(())
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
    let py = dict.py();
    let mut members: Vec<(&str, *mut ffi::PyObject)> = Vec::with_capacity(dict.len());
    let (mut pos, mut key, mut value): (ffi::Py_ssize_t, *mut ffi::PyObject, *mut ffi::PyObject) =
        (0, std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: PyDict_Next yields borrowed references that live as long as the dict, which
    // nothing can modify during the walk.
    while unsafe { ffi::PyDict_Next(dict.as_ptr(), &mut pos, &mut key, &mut value) } != 0 {
        let key_obj = unsafe { Borrowed::from_ptr(py, key) };
        if !key_obj.is_instance_of::<PyString>() {
            return Err(kind_error(CanonicalErrorKind::NonStringKey(type_name(
                &key_obj,
            ))));
        }
        let text =
            unsafe { utf8(key) }.ok_or_else(|| kind_error(CanonicalErrorKind::LoneSurrogate))?;
        members.push((text, value));
    }
    write_object(out, &mut members, depth, |out, value, depth| {
        let item = unsafe { Borrowed::from_ptr(py, *value) };
        write_value(out, &item, depth)
    })
}

fn to_canonical(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    write_value(&mut out, value, 0).map_err(|e| canonical_error(py, e))?;
    Ok(out)
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
    Ok(PyBytes::new(py, &to_canonical(py, value)?))
}

/// `blake3:` + hex of BLAKE3-256 of the canonical JSON of `value`.
#[pyfunction]
#[pyo3(signature = (value, /))]
pub fn digest(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(hash(py, &to_canonical(py, value)?))
}

/// `blake3:` + hex of BLAKE3-256 of raw bytes (any contiguous buffer).
#[pyfunction]
#[pyo3(signature = (data, /))]
pub fn digest_bytes(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(bytes) = data.cast::<PyBytes>() {
        // bytes are immutable, so the GIL can go while they are hashed.
        return Ok(hash(py, bytes.as_bytes()));
    }
    let buffer = PyBuffer::<u8>::get(data).map_err(|_| {
        PyTypeError::new_err(format!(
            "digest_bytes() takes bytes or a bytes-like object, got {}",
            type_name(data)
        ))
    })?;
    if !buffer.is_c_contiguous() {
        return Err(PyTypeError::new_err(
            "digest_bytes() needs a C-contiguous buffer; pass bytes(data)",
        ));
    }
    // SAFETY: the buffer is exported (so it cannot be resized) and the GIL is held
    // throughout, so no Python thread writes to it while it is hashed.
    let slice =
        unsafe { std::slice::from_raw_parts(buffer.buf_ptr().cast::<u8>(), buffer.len_bytes()) };
    Ok(runcontext_core::digest_bytes(slice))
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
        match unsafe { utf8(data.as_ptr()) } {
            Some(text) => text.as_bytes(),
            None => {
                return Err(canonical_error(
                    py,
                    kind_error(CanonicalErrorKind::LoneSurrogate),
                ))
            }
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
