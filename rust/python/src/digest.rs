//! `digest` and `digest_bytes`: hashing with the GIL released wherever the input cannot
//! change or go away meanwhile, and on several threads when asked.
//!
//! When the GIL can go (docs/FORMAT.md § 2, *Threads*):
//!
//! * a `str` (the whole value of `digest`): CPython strings are immutable, and the function
//!   holds a strong reference for the whole call, so neither the text nor its UTF-8 form
//!   (the object's own data for an ASCII string, else a cache the object owns and frees only
//!   with itself) can change or be freed;
//! * a `bytes` object (`digest_bytes`), or a `memoryview` of one: immutable, and referenced
//!   (or, for the view, exported) for the whole call.
//!
//! Every other buffer (`bytearray`, `memoryview`, `array`, `mmap`, numpy arrays) is writable
//! or is a view of something writable: with the GIL released, another Python thread could
//! change it while it is read, and the digest would be of bytes that were never there
//! together. It is hashed in place **with the GIL held**, which no Python code can get past;
//! the buffer export pins its memory (a `bytearray` cannot be resized, an `mmap` not
//! closed, while exported). Native code that writes to a buffer without the GIL races with
//! every reader, and a copy taken first would race the same way, so copying would buy
//! nothing but the copy: none is made.
//!
//! Containers (`digest` of a dict or list) are walked with the GIL held, because they are
//! mutable and read through borrowed pointers (`canonical.rs`); only the hashing of the
//! canonical bytes, which by then belong to this thread, happens without it.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMemoryView, PyString};

use crate::errors::type_name;
use crate::ffi;

/// Above this many bytes, hashing releases the GIL (as blake3-py does above 2 KiB): below it,
/// releasing and taking the GIL back costs more than other threads gain.
pub(crate) const DETACH_THRESHOLD: usize = 2048;

fn hash(data: &[u8], parallel: bool) -> String {
    if parallel {
        runcontext_core::digest_bytes_parallel(data)
    } else {
        runcontext_core::digest_bytes(data)
    }
}

/// True for a `memoryview` whose memory belongs to a `bytes` object (immutable).
fn is_view_of_bytes(data: &Bound<'_, PyAny>) -> bool {
    data.cast::<PyMemoryView>().is_ok_and(|view| {
        view.getattr(pyo3::intern!(data.py(), "obj"))
            .is_ok_and(|obj| obj.is_instance_of::<PyBytes>())
    })
}

/// `blake3:` + hex of BLAKE3-256 of the canonical JSON of `value`.
#[pyfunction]
#[pyo3(signature = (value, /))]
pub fn digest(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = value.cast::<PyString>() {
        // A str's canonical JSON is its JSON string: escaped and hashed a block at a time,
        // with no copy. A lone surrogate has no text, and the walk below reports it.
        if let Some(text) = ffi::utf8(text) {
            if text.len() <= DETACH_THRESHOLD {
                return Ok(runcontext_core::digest_json_str(text));
            }
            // SAFETY (of reading `text` without the GIL): it borrows `value`, a str this
            // call holds a strong reference to until it returns; str objects are immutable
            // and their UTF-8 form lives as long as they do (see the module comment).
            return Ok(py.detach(|| runcontext_core::digest_json_str(text)));
        }
    }
    crate::canonical::digest(py, value)
}

/// `blake3:` + hex of BLAKE3-256 of raw bytes (any contiguous buffer); `parallel=True`
/// hashes an input of 128 KiB or more on several threads.
#[pyfunction]
#[pyo3(signature = (data, /, *, parallel = false))]
pub fn digest_bytes(py: Python<'_>, data: &Bound<'_, PyAny>, parallel: bool) -> PyResult<String> {
    if let Ok(bytes) = data.cast::<PyBytes>() {
        let bytes = bytes.as_bytes();
        if bytes.len() <= DETACH_THRESHOLD {
            return Ok(hash(bytes, parallel));
        }
        // SAFETY (of reading `bytes` without the GIL): a bytes object (or subclass) is
        // immutable and this call holds a strong reference to it until it returns.
        return Ok(py.detach(|| hash(bytes, parallel)));
    }
    let Some(view) = ffi::BufferView::new(data) else {
        return Err(PyTypeError::new_err(format!(
            "digest_bytes() takes bytes or a contiguous bytes-like object, got {}; {}",
            type_name(data),
            if data.is_instance_of::<PyString>() {
                "encode text first, e.g. data.encode()"
            } else {
                "pass bytes(data)"
            }
        )));
    };
    // The export keeps the bytes where they are until the view is dropped, and the GIL stays
    // held while they are read (no Python code can change them; see the module comment), so
    // they are hashed in place, not copied.
    let bytes = view.as_bytes();
    let digest = if bytes.len() > DETACH_THRESHOLD && is_view_of_bytes(data) {
        // Without the GIL: a memoryview of a bytes object shows immutable memory, which the
        // export keeps alive until the view is dropped.
        py.detach(|| hash(bytes, parallel))
    } else {
        hash(bytes, parallel)
    };
    Ok(digest)
}

// Keyed digests (docs/FORMAT.md § 2.1): safe PyO3 only. The canonical JSON of
// a value is made as a `bytes` (`canonical_json`), which this thread owns, so it is hashed
// with the GIL released above the threshold; a `bytes` argument is hashed in place as in
// `digest_bytes`, and any other contiguous buffer is copied first with the GIL held (its
// copy is then immutable and this call's own).

/// The 32-byte key of a keyed digest: a `bytes` object of exactly [`KEY_LEN`] bytes.
///
/// [`KEY_LEN`]: runcontext_core::KEY_LEN
pub(crate) fn key_of(key: &Bound<'_, PyAny>) -> PyResult<[u8; runcontext_core::KEY_LEN]> {
    let Ok(bytes) = key.cast::<PyBytes>() else {
        let hint = if key.is_instance_of::<PyString>() {
            "a key is random bytes, not a passphrase or hex text"
        } else {
            "convert a bytes-like key with bytes(key)"
        };
        return Err(PyTypeError::new_err(format!(
            "key: expected {} bytes (a bytes object), got {}; {hint}; make one with \
             secrets.token_bytes({}) and keep it secret",
            runcontext_core::KEY_LEN,
            type_name(key),
            runcontext_core::KEY_LEN
        )));
    };
    <[u8; runcontext_core::KEY_LEN]>::try_from(bytes.as_bytes()).map_err(|_| {
        PyValueError::new_err(format!(
            "key: expected exactly {len} bytes (BLAKE3's keyed mode), got {} bytes; make one \
             with secrets.token_bytes({len}) and keep it secret",
            bytes.as_bytes().len(),
            len = runcontext_core::KEY_LEN
        ))
    })
}

fn keyed_hash(key: &[u8; runcontext_core::KEY_LEN], data: &[u8], parallel: bool) -> String {
    if parallel {
        runcontext_core::keyed_digest_bytes_parallel(key, data)
    } else {
        runcontext_core::keyed_digest_bytes(key, data)
    }
}

/// Hashes `bytes` (which this call keeps alive and which cannot change), releasing the GIL
/// above the threshold.
fn keyed_hash_bytes(
    py: Python<'_>,
    key: &[u8; runcontext_core::KEY_LEN],
    bytes: &Bound<'_, PyBytes>,
    parallel: bool,
) -> String {
    let data = bytes.as_bytes();
    if data.len() <= DETACH_THRESHOLD {
        return keyed_hash(key, data, parallel);
    }
    py.detach(|| keyed_hash(key, data, parallel))
}

/// `blake3-keyed:` + hex of keyed BLAKE3-256 of the canonical JSON of `value`: the keyed
/// form of `digest`, over the same bytes.
#[pyfunction]
#[pyo3(signature = (key, value, /))]
pub fn keyed_digest(
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<String> {
    let key = key_of(key)?;
    let canonical = crate::canonical::canonical_json(py, value)?;
    Ok(keyed_hash_bytes(py, &key, &canonical, false))
}

/// `blake3-keyed:` + hex of keyed BLAKE3-256 of raw bytes (any contiguous buffer): the keyed
/// form of `digest_bytes`; `parallel=True` hashes 128 KiB or more on several threads.
#[pyfunction]
#[pyo3(signature = (key, data, /, *, parallel = false))]
pub fn keyed_digest_bytes(
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    data: &Bound<'_, PyAny>,
    parallel: bool,
) -> PyResult<String> {
    let key = key_of(key)?;
    if let Ok(bytes) = data.cast::<PyBytes>() {
        return Ok(keyed_hash_bytes(py, &key, bytes, parallel));
    }
    // Any other buffer: its bytes copied (in C order) with the GIL held; the copy is this
    // call's own, immutable `bytes`.
    let copy = PyMemoryView::from(data)
        .ok()
        .filter(|view| {
            view.getattr(pyo3::intern!(py, "c_contiguous"))
                .and_then(|flag| flag.is_truthy())
                .unwrap_or(false)
        })
        .and_then(|view| view.call_method0(pyo3::intern!(py, "tobytes")).ok())
        .and_then(|copy| copy.cast_into::<PyBytes>().ok());
    let Some(copy) = copy else {
        return Err(PyTypeError::new_err(format!(
            "keyed_digest_bytes() takes bytes or a contiguous bytes-like object as data, got \
             {}; {}",
            type_name(data),
            if data.is_instance_of::<PyString>() {
                "encode text first, e.g. data.encode()"
            } else {
                "pass bytes(data)"
            }
        )));
    };
    Ok(keyed_hash_bytes(py, &key, &copy, parallel))
}
