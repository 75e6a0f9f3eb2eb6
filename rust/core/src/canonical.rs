//! RFC 8785 (JSON Canonicalization Scheme) output primitives.
//!
//! Every front end writes canonical JSON through these functions: [`Value::to_canonical`]
//! here, the Python object walker in the binding crate, and the RunContext digest document.
//! See `docs/FORMAT.md` § "Canonical JSON" for the rules and why each was chosen.
//!
//! One job, canonical JSON output (numbers, member order, containers), in one file of about
//! 780 lines of code; the rest is its unit tests (the number writers against the general
//! formatter, member order against UTF-16 sorting on generated keys), kept beside the code
//! they pin.

use std::cmp::Ordering;
use std::fmt;

pub use crate::output::Output;
use crate::path::JsonPath;
pub(crate) use crate::string::quoted;
pub use crate::string::write_str;
use crate::value::Value;

/// Containers (arrays and objects) may nest this deep; one more level is refused.
///
/// The limit keeps recursion bounded (no stack overflow in any thread) and is far above
/// anything a chat transcript needs.
pub const MAX_DEPTH: usize = 512;

/// Largest integer magnitude that survives a round trip through an IEEE 754 double exactly.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// What made a value impossible to write as canonical JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum CanonicalErrorKind {
    /// NaN or ±Infinity: JSON has no such numbers.
    NonFinite(f64),
    /// An integer outside ±(2**53 − 1), in its decimal form.
    IntegerOutOfRange(String),
    /// A string holding a lone UTF-16 surrogate.
    LoneSurrogate,
    /// An object key that is not a string; carries the front end's type name.
    NonStringKey(String),
    /// A value with no JSON form; carries the front end's type name.
    UnsupportedType(String),
    /// Containers nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// Two members of one object with the same name.
    DuplicateKey(String),
}

impl CanonicalErrorKind {
    /// A stable identifier of the rule broken (`non-finite`, `duplicate-key`, …).
    pub fn id(&self) -> &'static str {
        match self {
            Self::NonFinite(_) => "non-finite",
            Self::IntegerOutOfRange(_) => "integer-out-of-range",
            Self::LoneSurrogate => "lone-surrogate",
            Self::NonStringKey(_) => "non-string-key",
            Self::UnsupportedType(_) => "unsupported-type",
            Self::TooDeep => "too-deep",
            Self::DuplicateKey(_) => "duplicate-key",
        }
    }
}

impl fmt::Display for CanonicalErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonFinite(v) => {
                let name = if v.is_nan() {
                    "NaN"
                } else if *v > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                };
                write!(f, "{name} is not a JSON number (RFC 8785 refuses NaN and ±Infinity); send it as a string or null")
            }
            Self::IntegerOutOfRange(v) => write!(
                f,
                "integer {v} is outside ±(2**53 − 1) and would not survive a round trip through an IEEE 754 double; send it as a string"
            ),
            Self::LoneSurrogate => f.write_str(
                "string contains a lone surrogate, which is not Unicode text and has no UTF-8 form",
            ),
            Self::NonStringKey(t) => {
                write!(f, "object key of type {t} is not a string; JSON object keys must be strings")
            }
            Self::UnsupportedType(t) => write!(
                f,
                "a value of type {t} has no JSON form; convert it to a dict, list, tuple, str, int, float, bool or None first"
            ),
            Self::TooDeep => write!(f, "nesting deeper than {MAX_DEPTH} arrays and objects"),
            Self::DuplicateKey(k) => write!(f, "duplicate object key {}", quoted(k)),
        }
    }
}

/// A value that cannot be written as canonical JSON, and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct CanonicalError {
    pub kind: CanonicalErrorKind,
    pub path: JsonPath,
}

impl CanonicalError {
    /// An error at the root; enclosing containers add their segments with [`Self::in_index`]
    /// and [`Self::in_key`] as it unwinds.
    pub fn new(kind: CanonicalErrorKind) -> Self {
        Self {
            kind,
            path: JsonPath::root(),
        }
    }

    pub fn in_index(mut self, index: usize) -> Self {
        self.path = self.path.in_index(index);
        self
    }

    pub fn in_key(mut self, key: &str) -> Self {
        self.path = self.path.in_key(key);
        self
    }
}

impl fmt::Display for CanonicalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.kind)
    }
}

impl std::error::Error for CanonicalError {}

/// Writes a double as ECMAScript `Number.prototype.toString` does (RFC 8785 § 3.2.2.3):
/// shortest round-trip digits, exponent forms below 1e-6 and from 1e21, `-0` as `0`.
pub fn write_f64<O: Output>(out: &mut O, v: f64) -> Result<(), CanonicalError> {
    if !v.is_finite() {
        return Err(CanonicalError::new(CanonicalErrorKind::NonFinite(v)));
    }
    out.reserve(F64_STORE);
    let len = out.len();
    // SAFETY: F64_STORE bytes of capacity are free past `len`, and `v` is finite; `set_len`
    // covers the bytes write_finite_f64 reports written.
    unsafe {
        let n = write_finite_f64(out.as_mut_ptr().add(len), v);
        out.set_len(len + n);
    }
    Ok(())
}

/// Writes the finite `v` as [`write_f64`] does at `dst` and returns its length (at most
/// [`F64_TEXT_MAX`]); [`F64_STORE`] bytes may be stored, those past the length being
/// scratch.
///
/// # Safety
/// `v` must be finite, and [`F64_STORE`] bytes writable at `dst`.
#[inline(always)]
unsafe fn write_finite_f64(dst: *mut u8, v: f64) -> usize {
    // SAFETY: the caller's promise is write_es_number's.
    unsafe { crate::number::write_es_number(dst, v) }
}

use crate::number::{F64_STORE, F64_TEXT_MAX};

/// At most this many numbers are written by one call of [`write_int_run`] or
/// [`write_float_run`], after one reservation.
pub const NUMBER_RUN: usize = 32;

/// Writes the ints of `values`, each after a `,` but the first, until one is `None`, one is
/// outside ±[`MAX_SAFE_INTEGER`] (left unwritten, for the caller to write, or refuse, the
/// general way) or [`NUMBER_RUN`] are written; returns how many were. For a front end
/// writing an array whose elements are mostly numbers: one reservation for the run, then no
/// capacity checks for each number and its comma.
#[inline(always)]
pub fn write_int_run<O: Output>(
    out: &mut O,
    values: impl IntoIterator<Item = Option<i64>>,
) -> usize {
    let safe = |v: &i64| v.unsigned_abs() <= MAX_SAFE_INTEGER as u64;
    // SAFETY: every value written passed `safe`, which is write_safe_int's promise; it
    // stores INT_STORE bytes and writes at most INT_TEXT_MAX.
    unsafe {
        write_run(out, (INT_TEXT_MAX, INT_STORE), values, safe, |dst, v| {
            write_safe_int(dst, v)
        })
    }
}

/// [`write_int_run`] for doubles: the run stops at a value that is not finite, which the
/// caller then refuses through [`write_f64`].
#[inline(always)]
pub fn write_float_run<O: Output>(
    out: &mut O,
    values: impl IntoIterator<Item = Option<f64>>,
) -> usize {
    // SAFETY: every value written is finite, which is write_finite_f64's promise; it stores
    // F64_STORE bytes and writes at most F64_TEXT_MAX.
    unsafe {
        write_run(
            out,
            (F64_TEXT_MAX, F64_STORE),
            values,
            |v| v.is_finite(),
            |dst, v| write_finite_f64(dst, v),
        )
    }
}

/// The loop of [`write_int_run`] and [`write_float_run`].
///
/// # Safety
/// `write` must store at most `store` bytes at its destination and return a length of at
/// most `text_max`, for any value `accept` accepts.
#[inline(always)]
unsafe fn write_run<O: Output, T: Copy>(
    out: &mut O,
    (text_max, store): (usize, usize),
    values: impl IntoIterator<Item = Option<T>>,
    accept: impl Fn(&T) -> bool,
    write: impl Fn(*mut u8, T) -> usize,
) -> usize {
    out.reserve(NUMBER_RUN * (1 + text_max) + store);
    let base = out.len();
    // SAFETY: element k of the run (k < NUMBER_RUN) starts at most k * (1 + text_max) bytes
    // past `base`, and its comma and the `store` bytes of its text end within the
    // reservation (the caller's promise for `write`). `set_len` covers the commas and texts
    // written.
    unsafe {
        let run = out.as_mut_ptr().add(base);
        let mut dst = run;
        let mut written = 0;
        for value in values.into_iter().take(NUMBER_RUN) {
            let Some(value) = value.filter(&accept) else {
                break;
            };
            if written > 0 {
                *dst = b',';
                dst = dst.add(1);
            }
            dst = dst.add(write(dst, value));
            written += 1;
        }
        out.set_len(base + dst.offset_from(run) as usize);
        written
    }
}

/// Writes an integer in plain decimal; refuses magnitudes above [`MAX_SAFE_INTEGER`].
/// Within that range the output equals [`write_f64`] of the same number.
#[inline(always)]
pub fn write_i64<O: Output>(out: &mut O, v: i64) -> Result<(), CanonicalError> {
    let magnitude = v.unsigned_abs();
    if magnitude > MAX_SAFE_INTEGER as u64 {
        return Err(integer_out_of_range(v));
    }
    out.reserve(INT_STORE);
    let len = out.len();
    // SAFETY: INT_STORE bytes of capacity are free past `len`, and the magnitude is safe;
    // `set_len` covers the bytes write_safe_int reports written.
    unsafe {
        let n = write_safe_int(out.as_mut_ptr().add(len), v);
        out.set_len(len + n);
    }
    Ok(())
}

/// How many bytes [`write_safe_int`] stores, whatever the length of the number.
const INT_STORE: usize = 24;

/// The longest integer [`write_safe_int`] writes: a sign and sixteen digits.
const INT_TEXT_MAX: usize = 17;

/// Writes `v` in plain decimal at `dst` and returns its length (at most [`INT_TEXT_MAX`]);
/// [`INT_STORE`] bytes are stored, those past the length being scratch ([`write_i64`] and
/// [`write_int_run`] are this, checked).
///
/// # Safety
/// `v` must be within ±[`MAX_SAFE_INTEGER`], and [`INT_STORE`] bytes writable at `dst`.
#[inline(always)]
unsafe fn write_safe_int(dst: *mut u8, v: i64) -> usize {
    let magnitude = v.unsigned_abs();
    if magnitude < 100_000_000 {
        // SAFETY: a sign and at most eight digits: nine of the INT_STORE bytes at `dst`.
        return unsafe { write_small_int(dst, v < 0, magnitude as u32) };
    }
    // The digits are written backwards into a scratch buffer, ending at `END`, then one
    // fixed copy of 24 bytes moves them (a sign and at most sixteen digits) to `dst`: no
    // count of the digits beforehand, no call to memcpy.
    const END: usize = 24;
    let mut scratch = std::mem::MaybeUninit::<[u8; 48]>::uninit();
    let buf = scratch.as_mut_ptr().cast::<u8>();
    // SAFETY: the stores stay within `buf[END - 17..END]` (a sign and sixteen digits at
    // most, as the caller keeps the magnitude below 2**53); the copy reads
    // `buf[start..start + 24]`, within the 48 bytes (start >= 7), and writes the INT_STORE
    // bytes the caller makes writable at `dst`.
    unsafe {
        let mut start = END;
        let mut rest = magnitude;
        if rest >= 100_000_000 {
            // The low eight digits, then the rest (below 10**8, as 2**53 < 10**16).
            let low = (rest % 100_000_000) as u32;
            rest /= 100_000_000;
            start -= 8;
            four_digits(buf.add(start), low / 10_000);
            four_digits(buf.add(start + 4), low % 10_000);
        }
        // Below 10**8: the low four digits when there are more than four, then the others.
        let mut rest = rest as u32;
        if rest >= 10_000 {
            start -= 4;
            four_digits(buf.add(start), rest % 10_000);
            rest /= 10_000;
        }
        if rest >= 100 {
            start -= 2;
            buf.add(start)
                .cast::<[u8; 2]>()
                .write_unaligned(PAIRS[(rest % 100) as usize]);
            rest /= 100;
        }
        if rest >= 10 {
            start -= 2;
            buf.add(start)
                .cast::<[u8; 2]>()
                .write_unaligned(PAIRS[rest as usize]);
        } else {
            start -= 1;
            *buf.add(start) = b'0' + rest as u8;
        }
        if v < 0 {
            start -= 1;
            *buf.add(start) = b'-';
        }
        std::ptr::copy_nonoverlapping(buf.add(start), dst, INT_STORE);
        END - start
    }
}

/// Writes `-` (if `negative`) and `m` (below 10**8) straight to `dst`, returning the length.
///
/// Ints below 10**8 skip the scratch buffer: its 24-byte copy loads bytes stored a moment
/// before by narrower stores, which the processor cannot forward, so each int would wait
/// for its own digits to reach the cache.
///
/// # Safety
/// Nine bytes must be writable at `dst`.
#[inline(always)]
unsafe fn write_small_int(dst: *mut u8, negative: bool, m: u32) -> usize {
    // SAFETY: the caller makes nine bytes writable; the sign takes one, the digits eight at
    // most (up to four, then four more).
    unsafe {
        *dst = b'-';
        let p = dst.add(usize::from(negative));
        let digits = if m >= 10_000 {
            let high = up_to_four_digits(p, m / 10_000);
            four_digits(p.add(high), m % 10_000);
            high + 4
        } else {
            up_to_four_digits(p, m)
        };
        digits + usize::from(negative)
    }
}

/// Writes `m` (below 10**4) in as many digits as it has at `dst`, returning their count.
///
/// # Safety
/// Four bytes must be writable at `dst`.
#[inline(always)]
unsafe fn up_to_four_digits(dst: *mut u8, m: u32) -> usize {
    // SAFETY: the caller makes four bytes writable; each branch writes at most four.
    unsafe {
        if m < 10 {
            *dst = b'0' + m as u8;
            1
        } else if m < 100 {
            dst.cast::<[u8; 2]>().write_unaligned(PAIRS[m as usize]);
            2
        } else if m < 1000 {
            *dst = b'0' + (m / 100) as u8;
            dst.add(1)
                .cast::<[u8; 2]>()
                .write_unaligned(PAIRS[(m % 100) as usize]);
            3
        } else {
            four_digits(dst, m);
            4
        }
    }
}

#[cold]
fn integer_out_of_range(v: i64) -> CanonicalError {
    CanonicalError::new(CanonicalErrorKind::IntegerOutOfRange(v.to_string()))
}

/// Writes `v` (below 10**4) as exactly four digits at `dst`.
///
/// # Safety
/// Four bytes must be writable at `dst`.
#[inline(always)]
unsafe fn four_digits(dst: *mut u8, v: u32) {
    // SAFETY: the caller makes the four bytes writable.
    unsafe {
        dst.cast::<[u8; 2]>()
            .write_unaligned(PAIRS[(v / 100) as usize]);
        dst.add(2)
            .cast::<[u8; 2]>()
            .write_unaligned(PAIRS[(v % 100) as usize]);
    }
}

/// "00" to "99", for writing two digits at a time.
const PAIRS: [[u8; 2]; 100] = {
    let mut table = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        table[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    table
};

/// Orders object keys by their UTF-16 code units, as RFC 8785 § 3.2.3 requires.
///
/// UTF-8 byte order equals code point order, which differs from UTF-16 order only where a
/// character above U+FFFF (a surrogate pair, 0xD800..) meets one in U+E000–U+FFFF; so the
/// bytes decide, except for that pair of cases at the first differing byte.
pub fn cmp_keys(a: &str, b: &str) -> Ordering {
    let (ab, bb) = (a.as_bytes(), b.as_bytes());
    let Some(i) = first_difference(ab, bb) else {
        return ab.len().cmp(&bb.len());
    };
    // A continuation byte differs only inside characters with the same lead byte, whose
    // order bytes get right. Lead bytes 0xEE/0xEF start U+E000–U+FFFF (one UTF-16 unit
    // E000–FFFF); 0xF0–0xF4 start characters above U+FFFF (a surrogate, D800–DBFF, first).
    let (x, y) = (ab[i], bb[i]);
    let astral = |b: u8| b >= 0xF0;
    let high_bmp = |b: u8| b == 0xEE || b == 0xEF;
    if high_bmp(x) && astral(y) {
        Ordering::Greater
    } else if astral(x) && high_bmp(y) {
        Ordering::Less
    } else {
        x.cmp(&y)
    }
}

/// The index of the first byte at which `a` and `b` differ, within their common length.
///
/// Eight bytes at a time: keys often share long prefixes (`key_00017`, `key_00018`), and a
/// sort of n keys compares about n·log2(n) pairs.
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    let len = a.len().min(b.len());
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap_or([0; 8]));
    let mut i = 0;
    while i + 8 <= len {
        let diff = word(a, i) ^ word(b, i);
        if diff != 0 {
            // Little-endian: the lowest set bit lies in the first byte that differs.
            return Some(i + (diff.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    a[i..len]
        .iter()
        .zip(&b[i..len])
        .position(|(x, y)| x != y)
        .map(|p| i + p)
}

/// Sorts `(key, value)` members into canonical order and refuses duplicate keys.
pub(crate) fn sort_members<V>(members: &mut [(&str, V)]) -> Result<(), CanonicalError> {
    // Unstable is enough: equal keys are refused just below.
    members.sort_unstable_by(|x, y| cmp_keys(x.0, y.0));
    match members.windows(2).find(|w| w[0].0 == w[1].0) {
        Some(w) => Err(CanonicalError::new(CanonicalErrorKind::DuplicateKey(
            w[0].0.to_owned(),
        ))),
        None => Ok(()),
    }
}

/// Objects of at most this many members (most of a chat transcript's) take
/// [`sort_small_members`].
const SMALL_SORT_AT_MOST: usize = 8;

/// [`sort_members`] for at most [`SMALL_SORT_AT_MOST`] members: an insertion sort on each
/// key's first eight bytes in UTF-16 order ([`utf16_order`]), whole keys compared only where
/// those are equal (calls to [`cmp_keys`] were most of the cost of the small objects of a
/// chat transcript). The order is [`cmp_keys`]'s, by the argument of [`prefix_order`] with
/// eight bytes for sixteen.
fn sort_small_members<V>(members: &mut [(&str, V)]) -> Result<(), CanonicalError> {
    let n = members.len();
    if n > SMALL_SORT_AT_MOST {
        return sort_members(members);
    }
    let mut prefixes = [0u64; SMALL_SORT_AT_MOST];
    let prefixes = &mut prefixes[..n];
    for (prefix, (key, _)) in prefixes.iter_mut().zip(members.iter()) {
        *prefix = utf16_order(key_prefix8(key.as_bytes()));
    }
    let before = |p: u64, a: &str, q: u64, b: &str| p < q || (p == q && cmp_keys(a, b).is_lt());
    for i in 1..n {
        let mut j = i;
        while j > 0 && before(prefixes[j], members[j].0, prefixes[j - 1], members[j - 1].0) {
            members.swap(j, j - 1);
            prefixes.swap(j, j - 1);
            j -= 1;
        }
    }
    // Equal keys are now next to each other; the first pair is the one sort_members names.
    match (1..n).find(|&i| prefixes[i] == prefixes[i - 1] && members[i].0 == members[i - 1].0) {
        Some(i) => Err(CanonicalError::new(CanonicalErrorKind::DuplicateKey(
            members[i].0.to_owned(),
        ))),
        None => Ok(()),
    }
}

/// The first eight bytes of `key` as a big-endian number, zero bytes past its end; short
/// keys with overlapping loads rather than a copy.
#[inline(always)]
fn key_prefix8(key: &[u8]) -> u64 {
    let n = key.len();
    let be32 = |at: usize| {
        u64::from(u32::from_be_bytes(
            key[at..at + 4].try_into().unwrap_or([0; 4]),
        ))
    };
    if n >= 8 {
        u64::from_be_bytes(key[..8].try_into().unwrap_or([0; 8]))
    } else if n >= 4 {
        // Bytes 0..4 and n-4..n (overlapping, equal where they do) in their places.
        (be32(0) << 32) | (be32(n - 4) << (8 * (8 - n)))
    } else if n > 0 {
        // The first, middle and last of one to three bytes.
        let byte = |at: usize| u64::from(key[at]) << (8 * (7 - at));
        byte(0) | byte(n / 2) | byte(n - 1)
    } else {
        0
    }
}

impl Value {
    /// The canonical JSON (RFC 8785) bytes of this value.
    pub fn to_canonical(&self) -> Result<Vec<u8>, CanonicalError> {
        let mut out = Vec::new();
        self.write_canonical(&mut out)?;
        Ok(out)
    }

    /// Appends the canonical JSON of this value to `out`.
    pub fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
        write_value(out, self, 0)
    }
}

fn write_value(out: &mut Vec<u8>, value: &Value, depth: usize) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(v) => write_f64(out, *v)?,
        Value::String(s) => write_str(out, s),
        Value::Array(items) => write_array(out, items.len(), depth, |out, i, depth| {
            write_value(out, &items[i], depth).map(|()| 1)
        })?,
        Value::Object(members) => {
            let mut members: Vec<(&str, &Value)> =
                members.iter().map(|(k, v)| (k.as_str(), v)).collect();
            write_object(out, &mut members, depth, |out, v, depth| {
                write_value(out, v, depth)
            })?
        }
    }
    Ok(())
}

/// Refuses a container found at `depth` containers deep when that is [`MAX_DEPTH`] or more.
/// [`write_array`] and [`write_object`] call it first; a front end that looks at an
/// object's keys before calling [`write_object`] calls it before that, so that depth comes
/// before the keys (docs/FORMAT.md § 1.6).
pub fn enter(depth: usize) -> Result<(), CanonicalError> {
    if depth >= MAX_DEPTH {
        Err(CanonicalError::new(CanonicalErrorKind::TooDeep))
    } else {
        Ok(())
    }
}

/// Writes an array of `len` elements found at `depth` containers deep: element `i` is written
/// by `write_elements(out, i, depth + 1)`, and an error in it is located at `[i]`.
///
/// `write_elements` returns how many elements it wrote, at least one: it may go on past
/// element `i` with the elements that follow, each after its `,` (the Python binding writes
/// runs of small ints after one reservation). It fails only on element `i` itself, before
/// writing any other.
///
/// Front ends with their own values (the Python binding) write through this and
/// [`write_object`], so the structure rules (depth limit, separators, paths) live here once.
pub fn write_array<O: Output>(
    out: &mut O,
    len: usize,
    depth: usize,
    mut write_elements: impl FnMut(&mut O, usize, usize) -> Result<usize, CanonicalError>,
) -> Result<(), CanonicalError> {
    enter(depth)?;
    out.push(b'[');
    let mut i = 0;
    while i < len {
        if i > 0 {
            out.push(b',');
        }
        let written = write_elements(out, i, depth + 1).map_err(|e| e.in_index(i))?;
        debug_assert!(written >= 1 && i + written <= len);
        i += written;
    }
    out.push(b']');
    Ok(())
}

/// Writes an object found at `depth` containers deep: members in canonical order, duplicate
/// keys refused, each value written by `write_member(out, value, depth + 1)`, and an error in
/// it located at the member's key.
pub fn write_object<O: Output, V>(
    out: &mut O,
    members: &mut [(&str, V)],
    depth: usize,
    mut write_member: impl FnMut(&mut O, &V, usize) -> Result<(), CanonicalError>,
) -> Result<(), CanonicalError> {
    enter(depth)?;
    if members.len() >= PREFIX_SORT_FROM {
        if let Some(order) = prefix_order(members) {
            return write_in_order(out, members, &order, depth, write_member);
        }
    }
    if members.len() < PREFIX_SORT_FROM {
        sort_small_members(members)?;
    } else {
        sort_members(members)?;
    }
    out.push(b'{');
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        write_member(out, value, depth + 1).map_err(|e| e.in_key(key))?;
    }
    out.push(b'}');
    Ok(())
}

/// [`write_object`] for members sorted by [`prefix_order`]: duplicates refused (the first
/// in canonical order named, as [`sort_members`] names it), then the members in `order`.
/// Kept out of line so that the loop of small objects stays as it was.
#[inline(never)]
fn write_in_order<O: Output, V>(
    out: &mut O,
    members: &[(&str, V)],
    order: &[PrefixEntry],
    depth: usize,
    mut write_member: impl FnMut(&mut O, &V, usize) -> Result<(), CanonicalError>,
) -> Result<(), CanonicalError> {
    let key = |entry: &PrefixEntry| members[entry.index as usize].0;
    if let Some(w) = order
        .windows(2)
        .find(|w| (w[0].hi, w[0].lo) == (w[1].hi, w[1].lo) && key(&w[0]) == key(&w[1]))
    {
        return Err(CanonicalError::new(CanonicalErrorKind::DuplicateKey(
            key(&w[0]).to_owned(),
        )));
    }
    out.push(b'{');
    for (i, entry) in order.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let (key, value) = &members[entry.index as usize];
        write_str(out, key);
        out.push(b':');
        write_member(out, value, depth + 1).map_err(|e| e.in_key(key))?;
    }
    out.push(b'}');
    Ok(())
}

/// Objects with at least this many members are sorted on their keys' first sixteen bytes
/// ([`prefix_order`]); smaller ones compare whole keys, which is as fast for so few.
const PREFIX_SORT_FROM: usize = 32;

/// A member's place in a [`prefix_order`]: the first sixteen bytes of its key as two
/// big-endian numbers (zero bytes past its end), and its index in the members.
struct PrefixEntry {
    hi: u64,
    lo: u64,
    index: u32,
}

/// The members' indices in canonical key order, sorted on a sixteen-byte prefix of each key
/// with its bytes in UTF-16 order ([`utf16_order`]), comparing whole keys only where two
/// prefixes are equal (comparing whole keys through [`cmp_keys`] is most of the cost of
/// sorting a large dict). None when there are more members than a `u32` counts;
/// the caller then sorts with [`cmp_keys`].
///
/// Why the prefix order is the canonical order: let two keys' prefixes differ first at byte
/// `i` (< 16).
/// - If both keys have a byte at `i`, their first differing byte is `i`, and [`utf16_order`]
///   maps the two bytes to numbers in the order [`cmp_keys`] gives them.
/// - If key `a` ends at `k <= i`, its prefix is zero from `k` on, so `b`'s bytes `k..i` are
///   zero (which [`utf16_order`] keeps) and its byte `i` is not: `a` is a proper prefix of
///   `b` and sorts first, as its prefix does.
///
/// Equal prefixes (equal bytes, as [`utf16_order`] is one-to-one) fall back to
/// [`cmp_keys`], so the comparison is [`cmp_keys`] everywhere, a total order; duplicate keys
/// end up next to each other, as they do with it.
fn prefix_order<V>(members: &[(&str, V)]) -> Option<Vec<PrefixEntry>> {
    u32::try_from(members.len()).ok()?;
    let mut order = Vec::with_capacity(members.len());
    for (index, (key, _)) in members.iter().enumerate() {
        let (hi, lo) = key_prefix(key.as_bytes());
        order.push(PrefixEntry {
            hi: utf16_order(hi),
            lo: utf16_order(lo),
            index: index as u32,
        });
    }
    order.sort_unstable_by(|a, b| {
        (a.hi, a.lo)
            .cmp(&(b.hi, b.lo))
            .then_with(|| cmp_keys(members[a.index as usize].0, members[b.index as usize].0))
    });
    Some(order)
}

/// The eight UTF-8 bytes in `w` (big-endian) mapped one to one, so that comparing two such
/// words at their first differing byte gives [`cmp_keys`]'s order: bytes F0–FF become EE–FD
/// and EE–EF become FE–FF, every other byte stays.
///
/// Two keys equal up to a byte differ there either in two continuation bytes (80–BF, which
/// stay, under the same lead byte) or in two lead bytes, where UTF-8 order is UTF-16 order
/// except that a character above U+FFFF (lead F0–F4, a surrogate D800–DBFF in UTF-16) sorts
/// before one in U+E000–U+FFFF (lead EE–EF). The map moves just those two leads above the
/// astral ones and keeps the order of the rest; F5–FF are never in UTF-8 and go along with
/// F0–F4. Without any byte from EE (ASCII keys, most text) it returns `w` itself, and an
/// ASCII word takes one test; a few astral keys among many cost what the others cost.
#[inline(always)]
fn utf16_order(w: u64) -> u64 {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    if w & HIGH == 0 {
        return w;
    }
    // Bit 7 of a byte from EE: its own bit 7 and bit 7 of its low seven bits plus 0x12
    // (at most 0x7F + 0x12 = 0x91, so no carry leaves the byte).
    let from_ee = w & ((w & !HIGH) + 0x1212_1212_1212_1212) & HIGH;
    let from_f0 = high_nibble_set(w);
    let ee_ef = from_ee & !from_f0;
    // EE/EF + 0x10 and F0–FF − 2 stay within their bytes: no carry and no borrow.
    (w + (ee_ef >> 3)) - (from_f0 >> 6)
}

/// The first sixteen bytes of `key` as two big-endian numbers, zero bytes past its end.
#[inline(always)]
fn key_prefix(key: &[u8]) -> (u64, u64) {
    let mut bytes = [0u8; 16];
    let n = key.len().min(16);
    bytes[..n].copy_from_slice(&key[..n]);
    let (hi, lo) = bytes.split_at(8);
    let word = |s: &[u8]| u64::from_be_bytes(s.try_into().unwrap_or([0; 8]));
    (word(hi), word(lo))
}

/// Nonzero when a byte of `w` is F0 or above (its four high bits set).
#[inline(always)]
fn high_nibble_set(w: u64) -> u64 {
    // Bit 7 of each byte ANDed with bits 6, 5 and 4 of the same byte (shifting left by at
    // most three moves no bit out of its byte's high four).
    w & (w << 1) & (w << 2) & (w << 3) & 0x8080_8080_8080_8080
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn integers_of_every_length_and_sign() {
        let mut values = vec![
            0,
            1,
            -1,
            9,
            10,
            99,
            100,
            MAX_SAFE_INTEGER,
            -MAX_SAFE_INTEGER,
        ];
        let mut p = 1i64;
        while p <= MAX_SAFE_INTEGER / 10 {
            p *= 10;
            values.extend([p - 1, p, p + 1, -(p - 1), -p, -(p + 1)]);
        }
        for v in values {
            let mut out = b"[".to_vec();
            write_i64(&mut out, v).unwrap();
            assert_eq!(out, format!("[{v}").into_bytes());
        }
        for v in [
            MAX_SAFE_INTEGER + 1,
            -MAX_SAFE_INTEGER - 1,
            i64::MAX,
            i64::MIN,
        ] {
            let err = write_i64(&mut Vec::new(), v).unwrap_err();
            assert_eq!(
                err.kind,
                CanonicalErrorKind::IntegerOutOfRange(v.to_string())
            );
        }
    }

    /// The eight-digit lanes against `format!`: every value below 10**6 and around each
    /// power of ten, then a spread over the whole safe range, both signs.
    #[test]
    fn integers_agree_with_format() {
        let check = |v: i64| {
            let mut out = b"[".to_vec();
            write_i64(&mut out, v).unwrap();
            assert_eq!(out, format!("[{v}").into_bytes(), "{v}");
        };
        for v in -1_000_000..=1_000_000 {
            check(v);
        }
        let mut p = 1i64;
        while p <= MAX_SAFE_INTEGER / 10 {
            p *= 10;
            for d in -3..=3 {
                check(p + d);
                check(-(p + d));
            }
        }
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..200_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Magnitudes of every length: a random value cut to a random number of bits.
            let bits = state % 54;
            let v = ((state >> 8) & ((1u64 << bits) - 1)).min(MAX_SAFE_INTEGER as u64) as i64;
            check(if state & 1 == 0 { v } else { -v });
        }
    }

    /// The runs write what write_i64 and write_f64 write, comma-separated, and stop at the
    /// first value they do not take (left for the caller), or after NUMBER_RUN.
    #[test]
    fn number_runs_stop_where_they_must() {
        let mut out = b"[".to_vec();
        let ints = [0, -1, MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 123_456_789, 7];
        assert_eq!(write_int_run(&mut out, ints.map(Some)), 6);
        let expected: Vec<String> = ints.iter().map(|v| v.to_string()).collect();
        assert_eq!(out, format!("[{}", expected.join(",")).into_bytes());

        for stop in [None, Some(MAX_SAFE_INTEGER + 1), Some(i64::MIN)] {
            let mut out = Vec::new();
            assert_eq!(
                write_int_run(&mut out, [Some(1), Some(2), stop, Some(3)]),
                2
            );
            assert_eq!(out, b"1,2");
            assert_eq!(write_int_run(&mut out, [stop, Some(3)]), 0);
            assert_eq!(out, b"1,2");
        }

        let floats = [0.5, -0.0, 1e21, 1e-7, 123.25, f64::MAX];
        let mut out = Vec::new();
        assert_eq!(write_float_run(&mut out, floats.map(Some)), 6);
        let expected: Vec<String> = floats.iter().map(|v| n(*v)).collect();
        assert_eq!(out, expected.join(",").into_bytes());
        for stop in [
            None,
            Some(f64::NAN),
            Some(f64::INFINITY),
            Some(f64::NEG_INFINITY),
        ] {
            let mut out = Vec::new();
            assert_eq!(write_float_run(&mut out, [Some(1.5), stop, Some(2.0)]), 1);
            assert_eq!(out, b"1.5");
        }

        // At most NUMBER_RUN, each of the longest text, after one reservation.
        let mut out = Vec::new();
        let many = std::iter::repeat(Some(-MAX_SAFE_INTEGER));
        assert_eq!(write_int_run(&mut out, many), NUMBER_RUN);
        let one = (-MAX_SAFE_INTEGER).to_string();
        assert_eq!(out, vec![one.as_str(); NUMBER_RUN].join(",").into_bytes());
        let mut out = Vec::new();
        let many = std::iter::repeat(Some(-1.2345678901234567e-300));
        assert_eq!(write_float_run(&mut out, many), NUMBER_RUN);
        let one = n(-1.2345678901234567e-300);
        assert_eq!(one.len(), 24);
        assert_eq!(out, vec![one.as_str(); NUMBER_RUN].join(",").into_bytes());
    }

    #[test]
    fn first_difference_in_every_position() {
        let a = "abcdefghijklmnopqrstuvwxyz";
        for at in 0..a.len() {
            let mut b = a.as_bytes().to_vec();
            b[at] = b'#';
            assert_eq!(first_difference(a.as_bytes(), &b), Some(at));
            assert_eq!(first_difference(a.as_bytes(), &a.as_bytes()[..at]), None);
        }
    }

    #[test]
    fn numbers_follow_ecmascript() {
        assert_eq!(n(0.0), "0");
        assert_eq!(n(-0.0), "0");
        assert_eq!(n(1.0), "1");
        assert_eq!(n(-1.5), "-1.5");
        assert_eq!(n(1e21), "1e+21");
        assert_eq!(n(1e20), "100000000000000000000");
        assert_eq!(n(1e-7), "1e-7");
        assert_eq!(n(1e-6), "0.000001");
        assert_eq!(n(5e-324), "5e-324");
        assert_eq!(n(f64::MAX), "1.7976931348623157e+308");
        assert_eq!(n(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(n(9007199254740992.0), "9007199254740992");
    }

    #[test]
    fn refuses_non_finite_and_unsafe_integers() {
        let mut out = Vec::new();
        for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let err = write_f64(&mut out, v).unwrap_err();
            assert!(matches!(err.kind, CanonicalErrorKind::NonFinite(_)));
        }
        assert!(write_i64(&mut out, MAX_SAFE_INTEGER).is_ok());
        assert!(write_i64(&mut out, -MAX_SAFE_INTEGER).is_ok());
        let err = write_i64(&mut out, MAX_SAFE_INTEGER + 1).unwrap_err();
        assert_eq!(
            err.kind,
            CanonicalErrorKind::IntegerOutOfRange("9007199254740992".into())
        );
        assert!(write_i64(&mut out, i64::MIN).is_err());
    }

    #[test]
    fn keys_sort_by_utf16_code_units() {
        // U+1F600 is D83D DE00 in UTF-16, which sorts before U+E000; UTF-8 says the opposite.
        assert_eq!(cmp_keys("\u{1F600}", "\u{E000}"), Ordering::Less);
        assert_eq!(cmp_keys("a\u{1F600}", "a\u{FFFF}"), Ordering::Less);
        assert_eq!(cmp_keys("\u{E000}", "\u{D7FF}"), Ordering::Greater);
        assert_eq!(cmp_keys("ab", "abc"), Ordering::Less);
        assert_eq!(cmp_keys("é", "e"), Ordering::Greater);
        assert_eq!(cmp_keys("\u{10000}", "\u{10001}"), Ordering::Less);
        assert_eq!(cmp_keys("same", "same"), Ordering::Equal);
    }

    /// Keys that meet at every byte around the prefix's end: equal prefixes, keys that are
    /// prefixes of others, NUL bytes against padding, U+E000–U+FFFF against characters above
    /// U+FFFF, and the empty key.
    fn prefix_sort_keys(astral: bool) -> Vec<String> {
        let mut keys: Vec<String> = ["", "\0", "\0\0", "a", "a\0", "a\0b", "ab"]
            .map(String::from)
            .to_vec();
        let base = "p".repeat(20);
        let mut tails = vec!["\u{E000}", "\u{FFFF}", "\u{D7FF}", "é", "\0", "~"];
        if astral {
            tails.extend(["\u{1F600}", "\u{10000}"]);
        }
        for cut in 0..=20 {
            keys.push(base[..cut].to_owned());
            for tail in &tails {
                keys.push(format!("{}{tail}", &base[..cut]));
                keys.push(format!("{}{tail}x", &base[..cut]));
            }
        }
        keys.extend((0..100).map(|i| format!("key_{i:05}")));
        keys.sort();
        keys.dedup();
        keys
    }

    #[test]
    fn prefix_order_is_the_order_of_cmp_keys() {
        for astral in [false, true] {
            let keys = prefix_sort_keys(astral);
            let mut expected = keys.clone();
            expected.sort_by(|a, b| cmp_keys(a, b));
            let mut state = 0x9e37_79b9_u64;
            let mut shuffled = keys.clone();
            for i in (1..shuffled.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                shuffled.swap(i, (state % (i as u64 + 1)) as usize);
            }
            let members: Vec<(&str, ())> = shuffled.iter().map(|k| (k.as_str(), ())).collect();
            let order = prefix_order(&members).unwrap();
            let sorted: Vec<&str> = order.iter().map(|e| members[e.index as usize].0).collect();
            assert_eq!(sorted, expected);
            // Through write_object: the same bytes as the whole-key sort.
            let value = Value::Object(shuffled.iter().map(|k| (k.clone(), Value::Null)).collect());
            let mut out = b"{".to_vec();
            for (i, k) in expected.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(&mut out, k);
                out.extend_from_slice(b":null");
            }
            out.push(b'}');
            assert_eq!(value.to_canonical().unwrap(), out);
        }
    }

    #[test]
    fn prefix_sort_finds_the_same_duplicate() {
        // Duplicates with equal prefixes, the first in canonical order reported, as the
        // whole-key sort reports it; a key differing only past sixteen bytes is no duplicate.
        let mut members: Vec<(String, Value)> = (0..40)
            .map(|i| (format!("key_{i:02}_and_a_long_tail"), Value::Null))
            .collect();
        members.push(("key_07_and_a_long_tail".into(), Value::Null));
        members.push(("key_03_and_a_long_tail".into(), Value::Null));
        members.push(("key_03_and_a_long_tai".into(), Value::Null));
        let err = Value::Object(members).to_canonical().unwrap_err();
        assert_eq!(
            err.kind,
            CanonicalErrorKind::DuplicateKey("key_03_and_a_long_tail".into())
        );
        let members: Vec<(String, Value)> = (0..40)
            .map(|i| (format!("{}{i:02}", "x".repeat(16)), Value::Null))
            .chain([(String::new(), Value::Null), (String::new(), Value::Null)])
            .collect();
        let err = Value::Object(members).to_canonical().unwrap_err();
        assert_eq!(err.kind, CanonicalErrorKind::DuplicateKey(String::new()));
    }

    #[test]
    fn errors_in_large_objects_name_their_key() {
        let mut members: Vec<(String, Value)> =
            (0..40).map(|i| (format!("k{i}"), Value::Null)).collect();
        members.push(("bad".into(), Value::Number(f64::NAN)));
        let err = Value::Object(members).to_canonical().unwrap_err();
        assert_eq!(err.path.to_string(), "$.bad");
    }

    #[test]
    fn small_sort_is_the_order_of_cmp_keys() {
        // Every prefix length 0..=8 meets every other, with the bytes around the cases
        // cmp_keys treats apart; shuffled windows of every size below the prefix sort's.
        let mut keys: Vec<String> = prefix_sort_keys(true)
            .into_iter()
            .map(|k| k.replace(&"p".repeat(9), ""))
            .collect();
        keys.extend(
            [
                "tool_calls",
                "tool_call_id",
                "to",
                "t",
                "\u{7f}",
                "é",
                "\u{E000}x",
            ]
            .map(String::from),
        );
        keys.sort_by(|a, b| cmp_keys(a, b));
        keys.dedup();
        let mut state = 0x9e37_79b9_u64;
        for size in 0..=SMALL_SORT_AT_MOST + 1 {
            for start in (0..keys.len().saturating_sub(size)).step_by(7) {
                let mut window: Vec<&str> = keys[start..start + size]
                    .iter()
                    .map(String::as_str)
                    .collect();
                let expected = window.clone();
                for i in (1..window.len()).rev() {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    window.swap(i, (state % (i as u64 + 1)) as usize);
                }
                let mut members: Vec<(&str, ())> = window.iter().map(|k| (*k, ())).collect();
                sort_small_members(&mut members).unwrap();
                let sorted: Vec<&str> = members.iter().map(|m| m.0).collect();
                assert_eq!(sorted, expected);
            }
        }
        for p in 0..8 {
            let a: String = "abcdefgh"[..p].to_owned();
            assert_eq!(
                key_prefix8(a.as_bytes()),
                u64::from_be_bytes(*b"abcdefgh")
                    & !(u64::MAX.checked_shr(8 * p as u32).unwrap_or(0))
            );
        }
        let mut dup = vec![("b", ()), ("tool_calls", ()), ("a", ()), ("tool_calls", ())];
        let err = sort_small_members(&mut dup).unwrap_err();
        assert_eq!(
            err.kind,
            CanonicalErrorKind::DuplicateKey("tool_calls".into())
        );
    }

    /// Every pair of bytes at every position of a word: [`utf16_order`] orders them as
    /// [`cmp_keys`] orders two keys that first differ in them (for bytes that can meet
    /// there: two lead bytes, or two continuation bytes), and is one to one.
    #[test]
    fn utf16_order_orders_bytes_as_cmp_keys() {
        let lead = |b: u8| b < 0x80 || (0xC2..=0xF4).contains(&b);
        // The character whose UTF-8 form starts with lead byte `b`.
        let key_with = |b: u8| -> String {
            let c = match b {
                0x00..=0x7F => u32::from(b),
                0xC2..=0xDF => u32::from(b & 0x1F) << 6,
                0xE0 => 0x800,
                0xE1..=0xEF => u32::from(b & 0x0F) << 12,
                0xF0 => 0x10000,
                _ => u32::from(b & 0x07) << 18,
            };
            char::from_u32(c).unwrap().to_string()
        };
        let mut seen = std::collections::HashSet::new();
        for x in 0..=255u8 {
            assert!(
                seen.insert(utf16_order(u64::from(x))),
                "{x:#x} maps onto another byte"
            );
            for y in 0..=255u8 {
                let both_lead = lead(x) && lead(y);
                let both_continuation = (0x80..0xC0).contains(&x) && (0x80..0xC0).contains(&y);
                if !(both_lead || both_continuation) {
                    continue;
                }
                let expected = if both_lead {
                    let (a, b) = (key_with(x), key_with(y));
                    assert_eq!(a.as_bytes()[0], x);
                    assert_eq!(b.as_bytes()[0], y);
                    a.encode_utf16().cmp(b.encode_utf16())
                } else {
                    x.cmp(&y)
                };
                for at in 0..8 {
                    let w = |b: u8| {
                        utf16_order(
                            0x4142_4344_4546_4748 & !(0xff << (8 * at)) | u64::from(b) << (8 * at),
                        )
                    };
                    assert_eq!(w(x).cmp(&w(y)), expected, "{x:#x} {y:#x} at {at}");
                }
            }
        }
    }

    /// Keys mixing ASCII, U+E000–U+FFFF and characters above U+FFFF, in objects of every
    /// size around the sorts' thresholds and of 10,000 members: the order of their UTF-16
    /// code units, and duplicates found.
    #[test]
    fn mixed_keys_sort_by_utf16_at_every_size() {
        let alphabet = [
            "a",
            "b",
            "~",
            "\u{7f}",
            "é",
            "\u{D7FF}",
            "\u{E000}",
            "\u{FFFF}",
            "\u{10000}",
            "\u{1F600}",
            "\u{10FFFF}",
            "\0",
        ];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut sizes: Vec<usize> = (0..=PREFIX_SORT_FROM + 2).collect();
        sizes.push(10_000);
        for size in sizes {
            for _ in 0..if size > 100 { 2 } else { 30 } {
                let mut keys = std::collections::BTreeSet::new();
                while keys.len() < size {
                    // Mostly ASCII with a shared stem, a few characters from the alphabet.
                    let mut key =
                        String::from(["", "key_", "key_0000000000000"][(next() % 3) as usize]);
                    for _ in 0..next() % 24 {
                        let r = next();
                        if r % 4 == 0 {
                            key.push_str(alphabet[(r / 4 % alphabet.len() as u64) as usize]);
                        } else {
                            key.push(char::from(b'0' + (r / 4 % 10) as u8));
                        }
                    }
                    keys.insert(key);
                }
                let keys: Vec<String> = keys.into_iter().collect();
                let mut expected = keys.clone();
                expected.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
                let mut members: Vec<(&str, ())> = keys.iter().map(|k| (k.as_str(), ())).collect();
                for i in (1..members.len()).rev() {
                    members.swap(i, (next() % (i as u64 + 1)) as usize);
                }
                let value = Value::Object(
                    members
                        .iter()
                        .map(|m| (m.0.to_owned(), Value::Null))
                        .collect(),
                );
                let mut out = b"{".to_vec();
                for (i, k) in expected.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_str(&mut out, k);
                    out.extend_from_slice(b":null");
                }
                out.push(b'}');
                assert_eq!(value.to_canonical().unwrap(), out, "{size} keys");
                if size > 0 {
                    let Value::Object(mut with_dup) = value else {
                        unreachable!()
                    };
                    let dup = with_dup[(next() % size as u64) as usize].clone();
                    with_dup.push(dup.clone());
                    let err = Value::Object(with_dup).to_canonical().unwrap_err();
                    assert_eq!(err.kind, CanonicalErrorKind::DuplicateKey(dup.0));
                }
            }
        }
    }

    #[test]
    fn high_nibble_marks_only_bytes_from_f0() {
        for b in 0..=255u8 {
            for at in 0..8 {
                let w = u64::from(b) << (8 * at) | 0x7f7f_7f7f_7f7f_7f7f & !(0xff << (8 * at));
                assert_eq!(high_nibble_set(w) != 0, b >= 0xF0, "{b:#x} at {at}");
            }
        }
    }

    #[test]
    fn objects_sort_and_refuse_duplicates() {
        let v = Value::Object(vec![
            ("b".into(), Value::Number(2.0)),
            (
                "a".into(),
                Value::Array(vec![Value::Null, Value::Bool(true)]),
            ),
        ]);
        assert_eq!(v.to_canonical().unwrap(), br#"{"a":[null,true],"b":2}"#);
        let dup = Value::Object(vec![("k".into(), Value::Null), ("k".into(), Value::Null)]);
        let err = dup.to_canonical().unwrap_err();
        assert_eq!(err.to_string(), "$: duplicate object key \"k\"");
    }

    #[test]
    fn errors_name_their_path() {
        let v = Value::Object(vec![(
            "messages".into(),
            Value::Array(vec![Value::Null, Value::Number(f64::NAN)]),
        )]);
        let err = v.to_canonical().unwrap_err();
        assert_eq!(err.path.to_string(), "$.messages[1]");
        assert!(err
            .to_string()
            .starts_with("$.messages[1]: NaN is not a JSON number"));
    }

    #[test]
    fn depth_is_bounded() {
        let mut v = Value::Null;
        for _ in 0..MAX_DEPTH {
            v = Value::Array(vec![v]);
        }
        assert!(v.to_canonical().is_ok());
        let v = Value::Array(vec![v]);
        assert_eq!(
            v.to_canonical().unwrap_err().kind,
            CanonicalErrorKind::TooDeep
        );
    }
}
