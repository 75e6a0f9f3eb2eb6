//! Every raw access to CPython of the binding, behind safe functions and types; no other
//! module of this crate has an `unsafe` block.
//!
//! The binding reads Python objects in place where pyo3's safe API would copy or call back
//! into Python: the canonical JSON walk reads dicts, lists, tuples, strings and numbers
//! through their C structures; texts are read as the UTF-8 bytes CPython keeps; the outputs
//! are written straight into the `bytes` or `str` returned. Each `unsafe` block below says
//! why it is sound (`// SAFETY:`), from these invariants:
//!
//! * **The GIL is held** wherever an object is touched: every entry point takes a `Python`
//!   token or a `Bound` (which proves it), and the types it hands out ([`Obj`], [`BytesOut`])
//!   are neither `Send` nor usable after it returns. The extension declares itself not safe
//!   for free-threaded builds (`gil_used = true` in `lib.rs`).
//! * **Types are checked before layouts are read**: a list's items are read only after its
//!   type says list, a float's value only after its type says float, an int's digit only
//!   after its type says int and [`small_ints`] has checked CPython's digit size.
//! * **Borrowed references live as long as their owner, unchanged**: a str's UTF-8 form is
//!   its own data (ASCII) or a cache CPython frees only with the object, and a str is
//!   immutable, so text borrowed from a str lives as long as the borrow of the str. The items
//!   of a container walked by [`walk`] are borrowed references, valid while the container is
//!   not changed; [`walk`] holds the root for the whole walk and pauses the cyclic collector
//!   (so no `__del__` runs), and the walk's code (`canonical.rs`) calls no Python code: it
//!   gets no `Python` token, and what it reaches of CPython through [`Obj`] runs no Python
//!   code either (flag and field reads, `PyDict_Next`, `PyLong_AsLongLongAndOverflow`, and on
//!   the error paths the type's name and the int's decimal text). Code that needs to run
//!   Python code during a walk must take strong references instead.
//! * **New objects are ours alone until returned**: the `bytes` of [`BytesOut`] and the
//!   `str` of [`new_ascii_str`] are written before anyone else can see them, and a buffer
//!   export ([`BufferView`]) is released exactly once.

use std::marker::PhantomData;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use runcontext_core::canonical::Output;

use crate::errors::type_name;

// --- strings -----------------------------------------------------------------------------

/// The UTF-8 text of a str (or str subclass), for as long as it is borrowed; `None` when it
/// holds a lone surrogate (it then has no UTF-8 form). The one reader of a str's text in
/// this crate.
///
/// Compact ASCII strings (most keys and many values) are their own UTF-8, read in place
/// without a call into CPython; any other str keeps its UTF-8 form beside its characters
/// once it has been asked for, read in place too (as orjson does) rather than through a call
/// for each string (CJK and emoji text, payload (h) of `benches/bench_canonical.py`).
#[inline(always)]
pub fn utf8<'a>(text: &'a Bound<'_, PyString>) -> Option<&'a str> {
    // SAFETY: `text` is a live str with the GIL held (its `Bound`), borrowed for 'a.
    unsafe { utf8_of(text.as_ptr()) }
}

/// [`utf8`] of a raw str pointer.
///
/// # Safety
/// `obj` is a str or str subclass, the GIL is held, and the object lives for 'a.
#[inline(always)]
unsafe fn utf8_of<'a>(obj: *mut ffi::PyObject) -> Option<&'a str> {
    // SAFETY: `obj` is a str (the caller's promise). A compact ASCII str's data is its
    // `len` bytes of ASCII, which is UTF-8; a non-null `utf8` field of any other str (every
    // such str has the fields of a PyCompactUnicodeObject) is its UTF-8 form, `utf8_length`
    // bytes; PyUnicode_AsUTF8AndSize returns that form, or null with an exception set. Each
    // form lives and stays unchanged as long as the str does.
    unsafe {
        if ffi::PyUnicode_IS_COMPACT_ASCII(obj) != 0 {
            let len = ffi::PyUnicode_GET_LENGTH(obj) as usize;
            let data = ffi::PyUnicode_DATA(obj).cast::<u8>();
            return Some(std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                data, len,
            )));
        }
        #[cfg(not(any(Py_GIL_DISABLED, PyPy, GraalPy, Py_LIMITED_API)))]
        {
            let compact = obj.cast::<ffi::PyCompactUnicodeObject>();
            let data = (*compact).utf8;
            if !data.is_null() {
                let len = (*compact).utf8_length as usize;
                return Some(std::str::from_utf8_unchecked(std::slice::from_raw_parts(
                    data.cast::<u8>(),
                    len,
                )));
            }
        }
        let mut size: ffi::Py_ssize_t = 0;
        let data = ffi::PyUnicode_AsUTF8AndSize(obj, &mut size);
        if data.is_null() {
            // A lone surrogate: clear the UnicodeEncodeError, the caller reports its own.
            ffi::PyErr_Clear();
            return None;
        }
        Some(std::str::from_utf8_unchecked(std::slice::from_raw_parts(
            data.cast::<u8>(),
            size as usize,
        )))
    }
}

/// Whether a str holds ASCII characters only (a flag of the object, no scan).
pub fn is_ascii(text: &Bound<'_, PyString>) -> bool {
    // SAFETY: `text` is a live str with the GIL held; the macro reads its state flags.
    unsafe { ffi::PyUnicode_IS_ASCII(text.as_ptr()) != 0 }
}

/// Where [`new_ascii_str`]'s fill writes: the str's `len` bytes, front to back.
pub struct AsciiWriter {
    data: *mut u8,
    len: usize,
    at: usize,
    ok: bool,
}

// SAFETY: the str `data` points into is referenced by no one but `new_ascii_str`, which
// waits for the fill to finish (on whichever thread it runs); only the fill writes through
// it.
unsafe impl Send for AsciiWriter {}

impl AsciiWriter {
    /// Appends `piece`; a piece that is not ASCII or does not fit is not written, and
    /// [`new_ascii_str`] then returns `None`.
    #[inline]
    pub fn push(&mut self, piece: &str) {
        if !self.ok || piece.len() > self.len - self.at || !piece.is_ascii() {
            self.ok = false;
            return;
        }
        // SAFETY: `at + piece.len() <= len`, so the copy stays within the str's `len`
        // bytes, which nothing else reads or writes until the fill returns.
        unsafe {
            std::ptr::copy_nonoverlapping(piece.as_ptr(), self.data.add(self.at), piece.len())
        };
        self.at += piece.len();
    }
}

/// A new str of `len` ASCII characters written by `fill` (with the GIL released when
/// `detach`), without an intermediate copy; `None` when `fill` did not write exactly `len`
/// bytes of ASCII.
pub fn new_ascii_str<'py>(
    py: Python<'py>,
    len: usize,
    detach: bool,
    fill: impl FnOnce(&mut AsciiWriter) + Send,
) -> PyResult<Option<Bound<'py, PyString>>> {
    // SAFETY: PyUnicode_New with maximum character 127 makes a compact ASCII str of `len`
    // characters, one byte each, uninitialised, with its terminating NUL written; it is
    // this function's alone.
    let obj = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyUnicode_New(len as ffi::Py_ssize_t, 127))?
            .cast_into_unchecked::<PyString>()
    };
    let mut writer = AsciiWriter {
        // SAFETY: as above; the data pointer of the new str.
        data: unsafe { ffi::PyUnicode_DATA(obj.as_ptr()) }.cast::<u8>(),
        len,
        at: 0,
        ok: true,
    };
    let run = |writer: &mut AsciiWriter| fill(writer);
    if detach {
        writer = py.detach(move || {
            let mut writer = writer;
            run(&mut writer);
            writer
        });
    } else {
        run(&mut writer);
    }
    // A str whose bytes were not all written (or not ASCII) is dropped unseen.
    Ok((writer.ok && writer.at == len).then_some(obj))
}

// --- the canonical JSON walk -------------------------------------------------------------

/// A Python object borrowed for a [`walk`] (see the module's invariants).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Obj<'a> {
    ptr: *mut ffi::PyObject,
    _walk: PhantomData<Python<'a>>,
}

/// What an [`Obj`] is, as canonical JSON sees it: exact built-in types first, then
/// subclasses by the same rules (a bool is never an int here).
pub enum Kind<'a> {
    Int(Int<'a>),
    Float(f64),
    Str(Str<'a>),
    Dict(Dict<'a>),
    /// A list's or a tuple's items.
    Seq(&'a [Obj<'a>]),
    Null,
    Bool(bool),
    Other,
}

/// An int or int subclass of a walk.
#[derive(Clone, Copy)]
pub struct Int<'a>(Obj<'a>);

/// A str or str subclass of a walk.
#[derive(Clone, Copy)]
pub struct Str<'a>(Obj<'a>);

/// A dict or dict subclass of a walk.
#[derive(Clone, Copy)]
pub struct Dict<'a>(Obj<'a>);

/// Runs `write` on `value` as an [`Obj`], the cyclic collector paused (restored after),
/// with the GIL held for the whole walk.
pub fn walk<R>(value: &Bound<'_, PyAny>, write: impl for<'a> FnOnce(Obj<'a>) -> R) -> R {
    check_small_ints();
    let _paused = CollectorPaused::new(value.py());
    write(Obj {
        ptr: value.as_ptr(),
        _walk: PhantomData,
    })
}

impl<'a> Obj<'a> {
    /// The object's kind. The exact built-in types are told apart by comparing the type
    /// pointer with each (a chain of `is_instance_of` checks cost a small int more than its
    /// digits); subclasses then take the checks in the order the rules give.
    #[inline(always)]
    pub fn kind(self) -> Kind<'a> {
        let obj = self.ptr;
        // SAFETY: `obj` is live for the walk with the GIL held; its type pointer is read and
        // compared, and a value read only once the type is known exactly (a float's double,
        // a list's or tuple's items).
        unsafe {
            let ty = ffi::Py_TYPE(obj);
            if ty == &raw mut ffi::PyLong_Type {
                Kind::Int(Int(self))
            } else if ty == &raw mut ffi::PyFloat_Type {
                Kind::Float(ffi::PyFloat_AS_DOUBLE(obj))
            } else if ty == &raw mut ffi::PyUnicode_Type {
                Kind::Str(Str(self))
            } else if ty == &raw mut ffi::PyDict_Type {
                Kind::Dict(Dict(self))
            } else if ty == &raw mut ffi::PyList_Type {
                Kind::Seq(list_items(obj))
            } else if ty == &raw mut ffi::PyTuple_Type {
                Kind::Seq(tuple_items(obj))
            } else if obj == ffi::Py_None() {
                Kind::Null
            } else if ty == &raw mut ffi::PyBool_Type {
                Kind::Bool(obj == ffi::Py_True())
            } else {
                self.subclass_kind()
            }
        }
    }

    /// [`Self::kind`] of an object whose type is not exactly a built-in JSON type.
    #[cold]
    fn subclass_kind(self) -> Kind<'a> {
        let obj = self.ptr;
        // SAFETY: as in `kind`; the checks read the type's flags, and each layout is read
        // only after its check (a subclass has its base's layout at the start).
        unsafe {
            if ffi::PyUnicode_Check(obj) != 0 {
                Kind::Str(Str(self))
            } else if ffi::PyDict_Check(obj) != 0 {
                Kind::Dict(Dict(self))
            } else if ffi::PyList_Check(obj) != 0 {
                Kind::Seq(list_items(obj))
            } else if ffi::PyTuple_Check(obj) != 0 {
                Kind::Seq(tuple_items(obj))
            } else if ffi::PyLong_Check(obj) != 0 {
                // bool cannot be subclassed, and exact bools were told apart by `kind`.
                Kind::Int(Int(self))
            } else if ffi::PyFloat_Check(obj) != 0 {
                Kind::Float(ffi::PyFloat_AS_DOUBLE(obj))
            } else {
                Kind::Other
            }
        }
    }

    /// The value of an exact float, else `None` (the test of a run of floats).
    #[inline(always)]
    pub fn exact_float(self) -> Option<f64> {
        // SAFETY: as in `kind`: the double is read once the type is exactly float.
        unsafe {
            (ffi::Py_TYPE(self.ptr) == &raw mut ffi::PyFloat_Type)
                .then(|| ffi::PyFloat_AS_DOUBLE(self.ptr))
        }
    }

    /// The object's type name, for an error message.
    #[cold]
    pub fn type_name(self) -> String {
        // SAFETY: the GIL is held for the walk, and the object is live; reading the type's
        // name runs no Python code.
        unsafe {
            let py = Python::assume_attached();
            type_name(&pyo3::Borrowed::from_ptr(py, self.ptr))
        }
    }
}

/// The items of a list.
///
/// # Safety
/// `list` is a list or list subclass, live and unchanged for 'a (the walk's invariant).
#[inline(always)]
unsafe fn list_items<'a>(list: *mut ffi::PyObject) -> &'a [Obj<'a>] {
    // SAFETY: a list's `ob_item` holds `ob_size` live item pointers (null only while empty)
    // that stay as they are while the list is unchanged; `Obj` is a pointer, transparently.
    unsafe {
        let len = ffi::PyList_GET_SIZE(list) as usize;
        let items = (*list.cast::<ffi::PyListObject>()).ob_item;
        if len == 0 || items.is_null() {
            return &[];
        }
        std::slice::from_raw_parts(items.cast::<Obj<'a>>(), len)
    }
}

/// The items of a tuple.
///
/// # Safety
/// `tuple` is a tuple or tuple subclass, live for 'a.
#[inline(always)]
unsafe fn tuple_items<'a>(tuple: *mut ffi::PyObject) -> &'a [Obj<'a>] {
    // SAFETY: a tuple's `ob_size` item pointers are stored inline from `ob_item` and never
    // change; `Obj` is a pointer, transparently.
    unsafe {
        let len = ffi::PyTuple_GET_SIZE(tuple) as usize;
        let items = (&raw mut (*tuple.cast::<ffi::PyTupleObject>()).ob_item).cast::<Obj<'a>>();
        std::slice::from_raw_parts(items, len)
    }
}

impl<'a> Str<'a> {
    /// The text ([`utf8`]), for the rest of the walk.
    #[inline(always)]
    pub fn utf8(self) -> Option<&'a str> {
        // SAFETY: a str of the walk, live for 'a with the GIL held.
        unsafe { utf8_of(self.0.ptr) }
    }
}

impl<'a> Int<'a> {
    /// The value, or `None` when it does not fit an `i64` (no exception is raised).
    #[inline(always)]
    pub fn value(self) -> Option<i64> {
        if let Some(small) = small_ints() {
            // SAFETY: an int of the walk.
            if let Some(value) = unsafe { small.compact_value(self.0.ptr) } {
                return Some(value);
            }
        }
        self.long_value()
    }

    #[cold]
    fn long_value(self) -> Option<i64> {
        // The overflow flag, not an OverflowError: raising would allocate an exception.
        let mut overflow = 0;
        // SAFETY: an int of the walk; this reads its value and runs no code.
        let value = unsafe { ffi::PyLong_AsLongLongAndOverflow(self.0.ptr, &mut overflow) };
        (overflow == 0).then_some(value)
    }

    /// The decimal text of the value, whatever a subclass's `__repr__` says.
    #[cold]
    pub fn decimal(self) -> String {
        // SAFETY: the GIL is held for the walk; PyNumber_ToBase of an int (or subclass)
        // formats its value without calling Python code and returns a new str or null.
        let text = unsafe {
            let py = Python::assume_attached();
            Bound::from_owned_ptr_or_err(py, ffi::PyNumber_ToBase(self.0.ptr, 10))
        };
        text.map(|t| t.to_string())
            .unwrap_or_else(|_| "(too many digits to print)".to_owned())
    }
}

impl<'a> Dict<'a> {
    /// The object itself.
    #[inline(always)]
    pub fn obj(self) -> Obj<'a> {
        self.0
    }

    /// The number of members.
    #[inline(always)]
    pub fn len(self) -> usize {
        // SAFETY: a dict of the walk.
        unsafe { ffi::PyDict_Size(self.0.ptr) as usize }
    }

    /// The members in iteration order, read with `PyDict_Next` (a subclass's `__iter__` or
    /// `keys` is not consulted), at most [`Self::len`] of them.
    #[inline(always)]
    pub fn members(self) -> DictMembers<'a> {
        DictMembers {
            dict: self.0,
            pos: 0,
            left: self.len(),
        }
    }
}

/// [`Dict::members`].
pub struct DictMembers<'a> {
    dict: Obj<'a>,
    pos: ffi::Py_ssize_t,
    left: usize,
}

impl<'a> Iterator for DictMembers<'a> {
    type Item = (Obj<'a>, Obj<'a>);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let (mut key, mut value) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: a dict of the walk; PyDict_Next yields borrowed references that live as
        // long as the dict, which nothing changes during the walk.
        if unsafe { ffi::PyDict_Next(self.dict.ptr, &mut self.pos, &mut key, &mut value) } == 0 {
            self.left = 0;
            return None;
        }
        self.left -= 1;
        let obj = |ptr| Obj {
            ptr,
            _walk: PhantomData,
        };
        Some((obj(key), obj(value)))
    }
}

impl<'a> Obj<'a> {
    /// The object as a str, when it is one (or a subclass).
    #[inline(always)]
    pub fn as_str(self) -> Option<Str<'a>> {
        // SAFETY: an object of the walk; the check reads its type's flags.
        (unsafe { ffi::PyUnicode_Check(self.ptr) } != 0).then_some(Str(self))
    }
}

/// Whether ints of one digit can be read from the object itself: CPython's digits are 30
/// bits (its default on every 64-bit platform; 15-bit digits are a build option), checked
/// once against `PyLong_FromLong(2**15)`, which has one digit only with 30-bit digits.
static SMALL_INTS: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
const SMALL_UNKNOWN: u8 = 0;
const SMALL_YES: u8 = 1;
const SMALL_NO: u8 = 2;

/// Proof that the ints of this interpreter have the layout [`SmallInts::compact_value`]
/// reads: only [`small_ints`] makes one.
#[derive(Clone, Copy)]
pub struct SmallInts(());

/// [`SmallInts`] once [`check_small_ints`] has found the layout, else `None`.
#[inline(always)]
pub fn small_ints() -> Option<SmallInts> {
    (SMALL_INTS.load(std::sync::atomic::Ordering::Relaxed) == SMALL_YES).then_some(SmallInts(()))
}

/// Decides [`SMALL_INTS`] (with the GIL held: [`walk`] calls it) if not yet decided.
fn check_small_ints() {
    use std::sync::atomic::Ordering::Relaxed;
    if SMALL_INTS.load(Relaxed) != SMALL_UNKNOWN {
        return;
    }
    // SAFETY: called with the GIL held; the new int is read as the walk reads ints, then
    // released.
    let verdict = unsafe {
        let probe = ffi::PyLong_FromLong(1 << 15);
        if probe.is_null() {
            ffi::PyErr_Clear();
            SMALL_NO
        } else {
            let ok = SmallInts(()).compact_value(probe) == Some(1 << 15);
            ffi::Py_DECREF(probe);
            if ok {
                SMALL_YES
            } else {
                SMALL_NO
            }
        }
    };
    SMALL_INTS.store(verdict, Relaxed);
}

impl SmallInts {
    /// The value of an exact int of at most one 30-bit digit, else `None` (the test of a
    /// run of ints).
    #[inline(always)]
    pub fn exact_value(self, obj: Obj<'_>) -> Option<i64> {
        // SAFETY: an object of the walk; its digit is read only once its type is int.
        unsafe {
            if ffi::Py_TYPE(obj.ptr) == &raw mut ffi::PyLong_Type {
                self.compact_value(obj.ptr)
            } else {
                None
            }
        }
    }

    /// The value of an int of at most one 30-bit digit, read from the object, or None (more
    /// digits, or an interpreter whose layout this does not know).
    ///
    /// The layouts (CPython's `Include/cpython/longintrepr.h`): after the object header,
    /// 3.11 has `ob_size`, the digit count with the sign of the value; 3.12 and later have
    /// `lv_tag`, the digit count shifted left by 3 over a 2-bit sign (0 positive, 1 zero,
    /// 2 negative). The first digit follows, at the same offset in both.
    ///
    /// # Safety
    /// `obj` must be a live int (or int subclass) and the GIL held.
    #[inline(always)]
    unsafe fn compact_value(self, obj: *mut ffi::PyObject) -> Option<i64> {
        #[cfg(any(Py_GIL_DISABLED, PyPy, GraalPy, Py_LIMITED_API))]
        {
            let _ = obj;
            None
        }
        #[cfg(not(any(Py_GIL_DISABLED, PyPy, GraalPy, Py_LIMITED_API)))]
        // SAFETY: the fields read are the tag/size word after the header and the first
        // digit, which every int has (CPython allocates at least one digit, zero included).
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
}

/// Pauses CPython's cyclic garbage collector while it lives (restoring its former state), so
/// that no `__del__` can run in the middle of a walk. CPython 3.11 may start a collection
/// when an error path allocates an exception (a lone surrogate raises `UnicodeEncodeError`
/// inside CPython).
struct CollectorPaused<'py> {
    was_enabled: bool,
    _gil: Python<'py>,
}

impl<'py> CollectorPaused<'py> {
    fn new(py: Python<'py>) -> Self {
        // SAFETY: the GIL is held (`py`); returns whether the collector was enabled.
        let was_enabled = unsafe { ffi::PyGC_Disable() } != 0;
        Self {
            was_enabled,
            _gil: py,
        }
    }
}

impl Drop for CollectorPaused<'_> {
    fn drop(&mut self) {
        if self.was_enabled {
            // SAFETY: the GIL is held (the token this holds), undoing the PyGC_Disable.
            unsafe { ffi::PyGC_Enable() };
        }
    }
}

// --- canonical_json's output -------------------------------------------------------------

extern "C" {
    // CPython's own way to grow or shrink a `bytes` nobody else holds yet (in every CPython
    // 3.x; orjson writes its output the same way). Not in pyo3-ffi's public items.
    fn _PyBytes_Resize(bytes: *mut *mut ffi::PyObject, size: ffi::Py_ssize_t) -> std::ffi::c_int;
}

/// Runs `write` on a [`BytesOut`] and returns what it wrote as a `bytes`, or `write`'s error.
pub fn write_bytes<'py, E>(
    py: Python<'py>,
    write: impl FnOnce(&mut BytesOut<'py>) -> Result<(), E>,
) -> Result<Bound<'py, PyBytes>, E> {
    let mut out = BytesOut {
        obj: std::ptr::null_mut(),
        ptr: std::ptr::null_mut(),
        len: 0,
        cap: 0,
        local: std::mem::MaybeUninit::uninit(),
        py,
    };
    // `out` stays where it is until it is finished: nothing outside this function can move
    // a BytesOut (it has no public constructor, so none can be swapped with it).
    out.ptr = out.local.as_mut_ptr().cast::<u8>();
    out.cap = LOCAL;
    write(&mut out)?;
    Ok(out.finish())
}

/// canonical_json's output: written on the stack while it is small, then straight into the
/// `bytes` object it returns, so a large output is neither copied nor held in a second
/// buffer (copying a kept buffer into a new `bytes` was a third of the time of a large
/// string, and more of its instructions), and a small one costs one `bytes` of its exact
/// size. The `bytes` grows as a `Vec` does, by `_PyBytes_Resize` (a `realloc`).
///
/// Until it is finished the object is referenced only by this struct (a new object,
/// reference count 1, not tracked by the collector). Every method runs with the GIL held
/// (the token it holds).
pub struct BytesOut<'py> {
    /// The `bytes` once the output outgrew `local`, else null.
    obj: *mut ffi::PyObject,
    /// Where the output is: `local` or the data of `obj`.
    ptr: *mut u8,
    len: usize,
    cap: usize,
    local: std::mem::MaybeUninit<[u8; LOCAL]>,
    py: Python<'py>,
}

/// Outputs up to this many bytes are written on the stack and copied into their `bytes`.
const LOCAL: usize = 2048;

/// How much unused room a finished `bytes` of `len` bytes keeps rather than being shrunk:
/// a sixteenth and 64 bytes. Shrinking by `realloc` made each output's freed block a little
/// smaller than the next call's request for the same input, so with the previous output still
/// alive (`out = canonical_json(v)` in a loop) glibc could never reuse it and every large
/// call took fresh pages: a 1 MB string cost 200-500 µs against 50 µs.
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

impl<'py> BytesOut<'py> {
    /// The written `bytes`.
    fn finish(mut self) -> Bound<'py, PyBytes> {
        let (py, len) = (self.py, self.len);
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

impl Drop for BytesOut<'_> {
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
unsafe impl Output for BytesOut<'_> {
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

// --- buffers and the collector -----------------------------------------------------------

/// A contiguous buffer exported by an object (`PyBUF_SIMPLE`), released when dropped.
pub struct BufferView<'py> {
    view: ffi::Py_buffer,
    _gil: Python<'py>,
}

impl<'py> BufferView<'py> {
    /// The object's bytes, or `None` (its exception cleared) when it exports no contiguous
    /// buffer.
    pub fn new(obj: &Bound<'py, PyAny>) -> Option<Self> {
        let mut view = std::mem::MaybeUninit::<ffi::Py_buffer>::uninit();
        // SAFETY: the GIL is held (`obj`); a PyBUF_SIMPLE request asks for one contiguous
        // run of bytes of any format, and fills `view` when it succeeds.
        unsafe {
            if ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), ffi::PyBUF_SIMPLE) != 0 {
                ffi::PyErr_Clear();
                return None;
            }
            Some(Self {
                view: view.assume_init(),
                _gil: obj.py(),
            })
        }
    }

    /// The exported bytes, valid until the view is dropped.
    pub fn as_bytes(&self) -> &[u8] {
        let len = usize::try_from(self.view.len).unwrap_or(0);
        if len == 0 || self.view.buf.is_null() {
            return &[];
        }
        // SAFETY: the exporter guarantees `len` readable bytes at `buf` until the release in
        // `drop`, which the borrow of `self` precedes.
        unsafe { std::slice::from_raw_parts(self.view.buf.cast::<u8>(), len) }
    }
}

impl Drop for BufferView<'_> {
    fn drop(&mut self) {
        // SAFETY: releases the export `new` made, once, with the GIL held (the token).
        unsafe { ffi::PyBuffer_Release(&mut self.view) };
    }
}
