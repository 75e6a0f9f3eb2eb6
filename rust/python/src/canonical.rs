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
use pyo3::types::{PyBytes, PyString};
use runcontext_core::canonical::{
    enter, write_array, write_f64, write_finite_f64, write_i64, write_object, write_safe_int,
    write_str, Output, F64_STORE, F64_TEXT_MAX, INT_STORE, INT_TEXT_MAX,
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
    // Any other str keeps its UTF-8 form beside its characters once it has been asked for
    // (by an earlier call, ours included): read it in place then too, as orjson does, rather than
    // call PyUnicode_AsUTF8AndSize for each string (issue 13, payload (h)). Every str that is
    // not compact ASCII has the fields of a PyCompactUnicodeObject.
    #[cfg(not(any(Py_GIL_DISABLED, PyPy, GraalPy, Py_LIMITED_API)))]
    {
        let compact = obj.cast::<ffi::PyCompactUnicodeObject>();
        let data = unsafe { (*compact).utf8 };
        if !data.is_null() {
            let len = unsafe { (*compact).utf8_length } as usize;
            let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
            return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
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

/// Writes one value. The exact built-in types are told apart by comparing the type pointer
/// with each (issue 13: the chain of `is_instance_of` checks cost a small int more than its
/// digits); subclasses then take the checks in the order the rules give (bool before int).
fn write_value<O: Output>(
    out: &mut O,
    obj: *mut ffi::PyObject,
    depth: usize,
) -> Result<(), CanonicalError> {
    // SAFETY: `obj` is a live object for the whole walk (the caller holds it or its container
    // does, and no Python code runs); its type pointer is read and compared, nothing else.
    let ty = unsafe { ffi::Py_TYPE(obj) };
    unsafe {
        if ty == &raw mut ffi::PyLong_Type {
            return write_int(out, obj);
        }
        if ty == &raw mut ffi::PyFloat_Type {
            return write_f64(out, ffi::PyFloat_AS_DOUBLE(obj));
        }
        if ty == &raw mut ffi::PyUnicode_Type {
            return write_text(out, obj);
        }
        if ty == &raw mut ffi::PyDict_Type {
            return write_dict(out, obj, depth);
        }
        if ty == &raw mut ffi::PyList_Type {
            return write_sequence::<O, true>(out, obj, depth);
        }
        if ty == &raw mut ffi::PyTuple_Type {
            return write_sequence::<O, false>(out, obj, depth);
        }
        if obj == ffi::Py_None() {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        if ty == &raw mut ffi::PyBool_Type {
            out.extend_from_slice(if obj == ffi::Py_True() {
                b"true"
            } else {
                b"false"
            });
            return Ok(());
        }
    }
    write_subclass(out, obj, depth)
}

/// The values that are not exactly a built-in JSON type: subclasses, by the same rules, and
/// everything else refused.
#[cold]
fn write_subclass<O: Output>(
    out: &mut O,
    obj: *mut ffi::PyObject,
    depth: usize,
) -> Result<(), CanonicalError> {
    // SAFETY: as in write_value; the checks read the type's flags and bases only.
    unsafe {
        if ffi::PyUnicode_Check(obj) != 0 {
            write_text(out, obj)
        } else if ffi::PyDict_Check(obj) != 0 {
            write_dict(out, obj, depth)
        } else if ffi::PyList_Check(obj) != 0 {
            write_sequence::<O, true>(out, obj, depth)
        } else if ffi::PyTuple_Check(obj) != 0 {
            write_sequence::<O, false>(out, obj, depth)
        } else if ffi::PyLong_Check(obj) != 0 {
            // bool cannot be subclassed, and exact bools were written by the caller.
            write_int(out, obj)
        } else if ffi::PyFloat_Check(obj) != 0 {
            write_f64(out, ffi::PyFloat_AS_DOUBLE(obj))
        } else {
            let py = Python::assume_attached();
            let bound = Borrowed::from_ptr(py, obj);
            Err(kind_error(CanonicalErrorKind::UnsupportedType(type_name(
                &bound,
            ))))
        }
    }
}

/// Writes a str or str subclass as its text.
fn write_text<O: Output>(out: &mut O, obj: *mut ffi::PyObject) -> Result<(), CanonicalError> {
    // SAFETY: `obj` is a str the walk holds (see write_value).
    let text = unsafe { utf8(obj) }.ok_or_else(|| kind_error(CanonicalErrorKind::LoneSurrogate))?;
    write_str(out, text);
    Ok(())
}

/// Whether ints of one digit can be read from the object itself: CPython's digits are 30
/// bits (its default on every 64-bit platform; 15-bit digits are a build option), checked
/// once against `PyLong_FromLong(2**15)`, which has one digit only with 30-bit digits.
static COMPACT_INTS: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
const COMPACT_UNKNOWN: u8 = 0;
const COMPACT_YES: u8 = 1;
const COMPACT_NO: u8 = 2;

/// Decides [`COMPACT_INTS`] (with the GIL held) if not yet decided.
fn check_compact_ints() {
    use std::sync::atomic::Ordering::Relaxed;
    if COMPACT_INTS.load(Relaxed) != COMPACT_UNKNOWN {
        return;
    }
    // SAFETY: called with the GIL held; the new int is read as write_int reads ints, then
    // released.
    let verdict = unsafe {
        let probe = ffi::PyLong_FromLong(1 << 15);
        if probe.is_null() {
            ffi::PyErr_Clear();
            COMPACT_NO
        } else {
            let ok = compact_value(probe) == Some(1 << 15);
            ffi::Py_DECREF(probe);
            if ok {
                COMPACT_YES
            } else {
                COMPACT_NO
            }
        }
    };
    COMPACT_INTS.store(verdict, Relaxed);
}

/// The value of an int of at most one 30-bit digit, read from the object, or None (more
/// digits, or an interpreter whose layout this does not know).
///
/// The layouts (CPython's `Include/cpython/longintrepr.h`): after the object header, 3.11
/// has `ob_size`, the digit count with the sign of the value; 3.12 and later have `lv_tag`,
/// the digit count shifted left by 3 over a 2-bit sign (0 positive, 1 zero, 2 negative). The
/// first digit follows, at the same offset in both.
///
/// # Safety
/// `obj` must be a live int (or int subclass) and the GIL held.
#[inline(always)]
unsafe fn compact_value(obj: *mut ffi::PyObject) -> Option<i64> {
    #[cfg(any(Py_GIL_DISABLED, PyPy, GraalPy, Py_LIMITED_API))]
    {
        let _ = obj;
        None
    }
    #[cfg(not(any(Py_GIL_DISABLED, PyPy, GraalPy, Py_LIMITED_API)))]
    // SAFETY: the fields read are the tag/size word after the header and the first digit,
    // which every int has (CPython allocates at least one digit, zero included).
    unsafe {
        let base = obj.cast::<u8>();
        let head = std::mem::size_of::<ffi::PyObject>();
        let tag = base.add(head).cast::<isize>().read();
        let digit = i64::from(base.add(head + 8).cast::<u32>().read());
        #[cfg(not(Py_3_12))]
        {
            // ob_size in -1..=1: the value is the digit with that sign (0 for zero).
            if (-1..=1).contains(&tag) {
                return Some(tag as i64 * digit);
            }
            None
        }
        #[cfg(Py_3_12)]
        {
            let tag = tag as usize;
            // Compact: at most one digit (tag < 2 << 3); the sign is 1 - (tag & 3).
            if tag < (2 << 3) {
                return Some((1 - (tag & 3) as i64) * digit);
            }
            None
        }
    }
}

/// Writes an int or int subclass (never a bool: the caller has checked for those) by value.
#[inline(always)]
fn write_int<O: Output>(out: &mut O, int: *mut ffi::PyObject) -> Result<(), CanonicalError> {
    use std::sync::atomic::Ordering::Relaxed;
    // SAFETY: `int` is an int (or subclass) the walk holds.
    if COMPACT_INTS.load(Relaxed) == COMPACT_YES {
        if let Some(value) = unsafe { compact_value(int) } {
            return write_i64(out, value);
        }
    }
    write_long(out, int)
}

/// An int of more than one digit (or when digits cannot be read in place).
#[cold]
fn write_long<O: Output>(out: &mut O, int: *mut ffi::PyObject) -> Result<(), CanonicalError> {
    // The overflow flag, not an OverflowError: raising would allocate an exception.
    let mut overflow = 0;
    // SAFETY: `int` is an int (or subclass); this reads its value and runs no code.
    let value = unsafe { ffi::PyLong_AsLongLongAndOverflow(int, &mut overflow) };
    if overflow != 0 {
        // SAFETY: the GIL is held for the whole walk.
        let py = unsafe { Python::assume_attached() };
        let bound = unsafe { Borrowed::from_ptr(py, int) };
        return Err(kind_error(CanonicalErrorKind::IntegerOutOfRange(int_text(
            &bound,
        ))));
    }
    write_i64(out, value)
}

/// Writes a list (`IS_LIST`) or a tuple; one copy of the loop for each, so the kind is not
/// tested again for every item.
fn write_sequence<O: Output, const IS_LIST: bool>(
    out: &mut O,
    ptr: *mut ffi::PyObject,
    depth: usize,
) -> Result<(), CanonicalError> {
    let is_list = IS_LIST;
    // SAFETY: `ptr` is a list or tuple (as `IS_LIST` says); no Python code runs during the
    // walk, so its length and items cannot change, and borrowed items stay alive while it
    // does.
    let len = unsafe {
        if is_list {
            ffi::PyList_GET_SIZE(ptr)
        } else {
            ffi::PyTuple_GET_SIZE(ptr)
        }
    } as usize;
    // SAFETY: called with `i < len` only (write_array's indices, and runs stop at `len`).
    let item = |i: usize| unsafe {
        let i = i as ffi::Py_ssize_t;
        if is_list {
            ffi::PyList_GET_ITEM(ptr, i)
        } else {
            ffi::PyTuple_GET_ITEM(ptr, i)
        }
    };
    write_array(out, len, depth, |out, i, depth| {
        let first = item(i);
        // Arrays of numbers are common (and cheap to write): they skip the call and the
        // dispatch, and a run of small ints or of finite floats shares one reservation.
        // SAFETY: `first` is a live object held by the sequence; its type is read, and its
        // value once the type says it is an exact float.
        let ty = unsafe { ffi::Py_TYPE(first) };
        if ty == &raw mut ffi::PyLong_Type {
            let written = write_int_run(out, &item, i, len);
            if written > 0 {
                return Ok(written);
            }
            return write_int(out, first).map(|()| 1);
        }
        if ty == &raw mut ffi::PyFloat_Type {
            let written = write_float_run(out, &item, i, len);
            if written > 0 {
                return Ok(written);
            }
            // Not finite: write_f64 says so.
            return write_f64(out, unsafe { ffi::PyFloat_AS_DOUBLE(first) }).map(|()| 1);
        }
        write_value(out, first, depth).map(|()| 1)
    })
}

/// At most this many numbers are written after one reservation.
const RUN: usize = 32;

/// Writes the items from `start` on that `read` takes (each after a `,` but the first), at
/// most [`RUN`] and up to `len`, and returns how many: none when `read` declines item `start`.
/// One reservation for the run, then no capacity checks (issue 13: the checks of each number
/// and of its comma were a sixth of an int's instructions and a fifth of a float's time).
///
/// # Safety
/// `item` must give live objects for indices below `len`; `write` must store at most `store`
/// bytes at its destination and return a length of at most `text_max` for any value `read`
/// gives.
#[inline(always)]
unsafe fn write_run<O: Output, T>(
    out: &mut O,
    item: &impl Fn(usize) -> *mut ffi::PyObject,
    (start, len): (usize, usize),
    (text_max, store): (usize, usize),
    read: impl Fn(*mut ffi::PyObject) -> Option<T>,
    write: unsafe fn(*mut u8, T) -> usize,
) -> usize {
    let end = len.min(start + RUN);
    out.reserve(RUN * (1 + text_max) + store);
    let base = out.len();
    // SAFETY: element k of the run (k < RUN) starts at most k * (1 + text_max) bytes past
    // `base`, and its comma and the `store` bytes of its text end within the reservation (the
    // caller's promise for `write`). `set_len` covers the commas and texts written.
    unsafe {
        let run = out.as_mut_ptr().add(base);
        let mut dst = run;
        let mut i = start;
        while i < end {
            let Some(value) = read(item(i)) else {
                break;
            };
            if i > start {
                *dst = b',';
                dst = dst.add(1);
            }
            dst = dst.add(write(dst, value));
            i += 1;
        }
        out.set_len(base + dst.offset_from(run) as usize);
        i - start
    }
}

/// Writes a run of the exact ints of one digit from item `start` on ([`write_run`]).
#[inline(always)]
fn write_int_run<O: Output>(
    out: &mut O,
    item: &impl Fn(usize) -> *mut ffi::PyObject,
    start: usize,
    len: usize,
) -> usize {
    use std::sync::atomic::Ordering::Relaxed;
    if COMPACT_INTS.load(Relaxed) != COMPACT_YES {
        return 0;
    }
    // SAFETY: the sequence's items are live (write_sequence); each one's type is read first
    // and its digit only when it is an exact int. A value of one 30-bit digit is a safe
    // integer, which write_safe_int writes in at most INT_TEXT_MAX bytes, storing INT_STORE.
    unsafe {
        write_run(
            out,
            item,
            (start, len),
            (INT_TEXT_MAX, INT_STORE),
            |obj| {
                if ffi::Py_TYPE(obj) == &raw mut ffi::PyLong_Type {
                    compact_value(obj)
                } else {
                    None
                }
            },
            write_safe_int,
        )
    }
}

/// Writes a run of the finite exact floats from item `start` on ([`write_run`]).
#[inline(always)]
fn write_float_run<O: Output>(
    out: &mut O,
    item: &impl Fn(usize) -> *mut ffi::PyObject,
    start: usize,
    len: usize,
) -> usize {
    // SAFETY: the sequence's items are live (write_sequence); each one's type is read first
    // and its value only when it is an exact float. A finite double is what
    // write_finite_f64 takes; it writes at most F64_TEXT_MAX bytes, storing F64_STORE.
    unsafe {
        write_run(
            out,
            item,
            (start, len),
            (F64_TEXT_MAX, F64_STORE),
            |obj| {
                if ffi::Py_TYPE(obj) == &raw mut ffi::PyFloat_Type {
                    Some(ffi::PyFloat_AS_DOUBLE(obj)).filter(|v| v.is_finite())
                } else {
                    None
                }
            },
            write_finite_f64,
        )
    }
}

fn write_dict<O: Output>(
    out: &mut O,
    dict: *mut ffi::PyObject,
    depth: usize,
) -> Result<(), CanonicalError> {
    // Depth first, then the keys in iteration order, then (sorted) duplicates and values.
    enter(depth)?;
    // SAFETY: `dict` is a dict or subclass the walk holds.
    let len = unsafe { ffi::PyDict_Size(dict) } as usize;
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
    while count < len && unsafe { ffi::PyDict_Next(dict, &mut pos, &mut key, &mut value) } != 0 {
        // SAFETY: `key` is a live object held by the dict.
        if unsafe { ffi::PyUnicode_Check(key) } == 0 {
            let py = unsafe { Python::assume_attached() };
            let key_obj = unsafe { Borrowed::from_ptr(py, key) };
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
        write_value(out, *value, depth)
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
    /// The output buffer of this thread for `digest` (which needs no `bytes`), kept (cleared)
    /// between calls; canonical_json writes into its `bytes` instead ([`BytesOut`]).
    ///
    /// A fresh buffer per call was the cliff of issue 13: a large output grew one buffer and
    /// was then copied into a `bytes` of the same size, and freeing both left more free memory
    /// at the top of the heap than glibc's trim threshold, so it went back to the kernel and
    /// every call faulted its pages in again (a 1 MB string: ~1.2 ms a call instead of tens
    /// of µs). With one buffer kept, each call allocates only its `bytes`, which the heap
    /// reuses.
    static OUTPUT: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(Vec::with_capacity(4096));
}

/// Writes the canonical JSON of `value` into `out`, the collector paused.
fn walk<O: Output>(py: Python<'_>, out: &mut O, value: &Bound<'_, PyAny>) -> PyResult<()> {
    check_compact_ints();
    let walked = {
        let _paused = CollectorPaused::new();
        write_value(out, value.as_ptr(), 0)
    };
    walked.map_err(|e| canonical_error(py, e))
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

extern "C" {
    // CPython's own way to grow or shrink a `bytes` nobody else holds yet (in every CPython
    // 3.x; orjson writes its output the same way). Not in pyo3-ffi's public items.
    fn _PyBytes_Resize(bytes: *mut *mut ffi::PyObject, size: ffi::Py_ssize_t) -> std::ffi::c_int;
}

/// canonical_json's output: written on the stack while it is small, then straight into the
/// `bytes` object it returns, so a large output is neither copied nor held in a second
/// buffer (issue 13: copying a kept buffer into a new `bytes` was a third of the time of a
/// large string, and more of its instructions), and a small one costs one `bytes` of its
/// exact size. The `bytes` grows as a `Vec` does, by `_PyBytes_Resize` (a `realloc`).
///
/// Until [`BytesOut::finish`] the object is referenced only by this struct (a new object,
/// reference count 1, not tracked by the collector). Every method runs with the GIL held.
struct BytesOut {
    /// The `bytes` once the output outgrew `local`, else null.
    obj: *mut ffi::PyObject,
    /// Where the output is: `local` or the data of `obj` (set by [`BytesOut::start`], after
    /// which the struct must not move until it is finished).
    ptr: *mut u8,
    len: usize,
    cap: usize,
    local: std::mem::MaybeUninit<[u8; LOCAL]>,
}

/// Outputs up to this many bytes are written on the stack and copied into their `bytes`.
const LOCAL: usize = 2048;

/// How much unused room a finished `bytes` of `len` bytes keeps rather than being shrunk:
/// a sixteenth and 64 bytes. Shrinking by `realloc` made each output's freed block a little
/// smaller than the next call's request for the same input, so with the previous output still
/// alive (`out = canonical_json(v)` in a loop) glibc could never reuse it and every large
/// call took fresh pages: a 1 MB string cost 200-500 µs against 50 µs (issue 13, no cliff).
///
/// From 64 KiB an output keeps its whole block (at most twice its size, as doubling leaves
/// it). Such a block may be one glibc maps for itself (from 128 KiB at first), and freeing a
/// mapped block raises glibc's mapping threshold to that block's size only: shrunk, it
/// stayed below the next call's largest block for the same input, so every call mapped and
/// faulted in fresh pages even with nothing kept (10,000 floats: 520 µs a call against
/// 350). Kept whole, the threshold passes the largest block and later calls reuse the heap;
/// the pages of a mapped block past the output are never touched. (orjson keeps more: its
/// 187 KB output of payload (c) holds a 2 MB block.)
fn kept_slack(len: usize) -> usize {
    if len >= 64 << 10 {
        len
    } else {
        len / 16 + 64
    }
}

impl BytesOut {
    fn new() -> Self {
        Self {
            obj: std::ptr::null_mut(),
            ptr: std::ptr::null_mut(),
            len: 0,
            cap: 0,
            local: std::mem::MaybeUninit::uninit(),
        }
    }

    /// Points the output at `local`, where the struct now is.
    fn start(&mut self) -> &mut Self {
        self.ptr = self.local.as_mut_ptr().cast::<u8>();
        self.cap = LOCAL;
        self
    }

    /// The written `bytes`.
    fn finish<'py>(&mut self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let len = self.len;
        if self.obj.is_null() {
            // SAFETY: the first `len` bytes of `local` are written.
            let local =
                unsafe { std::slice::from_raw_parts(self.local.as_ptr().cast::<u8>(), len) };
            return PyBytes::new(py, local);
        }
        // SAFETY: the object is ours alone, its data has room for `cap` bytes and the NUL
        // after them, and its first `len` (<= cap) bytes are written. Setting a smaller size
        // and writing the NUL at `len` leaves a `bytes` of exactly those bytes in a larger
        // block (its hash is not yet cached; the allocator frees the block whatever the
        // size says); shrinking it by `_PyBytes_Resize` also writes the NUL.
        unsafe {
            if self.cap - len <= kept_slack(len) {
                (*self.obj.cast::<ffi::PyVarObject>()).ob_size = len as ffi::Py_ssize_t;
                *self.ptr.add(len) = 0;
            } else if _PyBytes_Resize(&mut self.obj, len as ffi::Py_ssize_t) != 0 {
                out_of_memory(len);
            }
            let obj = std::mem::replace(&mut self.obj, std::ptr::null_mut());
            Bound::from_owned_ptr(py, obj).cast_into_unchecked()
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, additional: usize) {
        let cap = (self.cap * 2).max(self.len + additional);
        // SAFETY: the GIL is held (every method runs with it); the object, when there is one,
        // is ours alone, and a new one (never the shared empty bytes: cap > 0) receives the
        // bytes written so far.
        unsafe {
            if self.obj.is_null() {
                let obj = ffi::PyBytes_FromStringAndSize(std::ptr::null(), cap as ffi::Py_ssize_t);
                if obj.is_null() {
                    out_of_memory(cap);
                }
                let data = ffi::PyBytes_AS_STRING(obj) as *mut u8;
                std::ptr::copy_nonoverlapping(self.ptr, data, self.len);
                self.obj = obj;
            } else if _PyBytes_Resize(&mut self.obj, cap as ffi::Py_ssize_t) != 0 {
                out_of_memory(cap);
            }
            self.ptr = ffi::PyBytes_AS_STRING(self.obj) as *mut u8;
        }
        self.cap = cap;
    }
}

impl Drop for BytesOut {
    fn drop(&mut self) {
        if !self.obj.is_null() {
            // SAFETY: an error left the object unreturned; the GIL is held.
            unsafe { ffi::Py_DECREF(self.obj) };
        }
    }
}

/// As `Vec` does when it cannot grow: the process cannot go on writing the value.
#[cold]
fn out_of_memory(size: usize) -> ! {
    std::alloc::handle_alloc_error(
        std::alloc::Layout::from_size_align(size.max(1), 1)
            .unwrap_or(std::alloc::Layout::new::<u8>()),
    )
}

// SAFETY: `ptr` points to `cap` writable bytes (`local`, or the data of `obj`), of which the
// first `len` have been written; growing moves them (a copy out of `local`, or a realloc).
unsafe impl Output for BytesOut {
    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }
    #[inline(always)]
    fn capacity(&self) -> usize {
        self.cap
    }
    #[inline(always)]
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }
    #[inline(always)]
    fn reserve(&mut self, additional: usize) {
        if self.cap - self.len < additional {
            self.grow(additional);
        }
    }
    #[inline(always)]
    unsafe fn set_len(&mut self, len: usize) {
        self.len = len;
    }
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
    let mut out = BytesOut::new();
    walk(py, out.start(), value)?;
    Ok(out.finish(py))
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
