//! RFC 8785 (JSON Canonicalization Scheme) output primitives.
//!
//! Every front end writes canonical JSON through these functions: [`Value::to_canonical`]
//! here, the Python object walker in the binding crate, and the RunContext digest document.
//! See `docs/FORMAT.md` § "Canonical JSON" for the rules and why each was chosen.

use std::cmp::Ordering;
use std::fmt;

use crate::path::JsonPath;
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

// For each byte: 0 = copy as is, b'u' = write as \u00xx, anything else = write backslash + it.
const ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// For each byte that needs an escape, its escape padded to eight bytes and its length, so
/// an escape is one eight-byte store (built from [`ESCAPES`] at compile time).
const ESCAPED: [([u8; 8], u8); 256] = {
    let mut table = [([0u8; 8], 0u8); 256];
    let mut b = 0;
    while b < 256 {
        let escape = ESCAPES[b];
        if escape == b'u' {
            let hex = [HEX[b >> 4], HEX[b & 0xf]];
            table[b] = ([b'\\', b'u', b'0', b'0', hex[0], hex[1], 0, 0], 6);
        } else if escape != 0 {
            table[b] = ([b'\\', escape, 0, 0, 0, 0, 0, 0], 2);
        }
        b += 1;
    }
    table
};

/// Writes `s` as a JSON string: `"` and `\` and U+0000–U+001F escaped (short forms where
/// JSON has them, else `\u00xx` in lowercase hex), everything else as raw UTF-8.
///
/// Unescaped runs are copied in bulk; a short run between two escapes (the common case in
/// text dense with quotes or line breaks) is one sixteen-byte copy, of which only the run's
/// length is kept, and each escape one eight-byte store: no call and no capacity check per
/// byte (issue 13 measured ~89 instructions per escaped character before).
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0; // the first byte not yet written
    for at in Escapes::new(bytes) {
        let run = &bytes[start..at];
        // The sixteen-byte copy may read past the run, not past the string.
        if run.len() <= 16 && start + 16 <= bytes.len() {
            out.reserve(16 + 8);
            // SAFETY: `start + 16 <= bytes.len()`, so sixteen bytes from `start` are readable;
            // the reserve makes room for sixteen bytes and then eight more past the length.
            // Only the run is kept (set_len), and it is initialised by the copy.
            unsafe {
                let end = out.as_mut_ptr().add(out.len());
                std::ptr::copy_nonoverlapping(bytes.as_ptr().add(start), end, 16);
                out.set_len(out.len() + run.len());
            }
        } else {
            out.extend_from_slice(run);
            out.reserve(8);
        }
        let (escape, len) = ESCAPED[bytes[at] as usize];
        // SAFETY: eight bytes of capacity were reserved past the length just above; the
        // `len` (2 or 6) kept are initialised by the store.
        unsafe {
            let end = out.as_mut_ptr().add(out.len());
            std::ptr::copy_nonoverlapping(escape.as_ptr(), end, 8);
            out.set_len(out.len() + usize::from(len));
        }
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// The positions of the bytes of a string that need an escape, in order.
struct Escapes<'a> {
    bytes: &'a [u8],
    /// The start of the block of sixteen bytes that `mask` describes.
    block: usize,
    /// One bit for each byte of the block not yet yielded that needs an escape.
    mask: u32,
}

impl<'a> Escapes<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            block: 0,
            mask: escape_mask(bytes, 0),
        }
    }
}

impl Iterator for Escapes<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        while self.mask == 0 {
            self.block += 16;
            if self.block >= self.bytes.len() {
                return None;
            }
            self.mask = escape_mask(self.bytes, self.block);
        }
        let at = self.block + self.mask.trailing_zeros() as usize;
        self.mask &= self.mask - 1; // the lowest bit, yielded now
        Some(at)
    }
}

/// One bit for each of the sixteen bytes from `from` (fewer at the end) that needs an escape.
fn escape_mask(bytes: &[u8], from: usize) -> u32 {
    let rest = &bytes[from.min(bytes.len())..];
    match rest.get(..16) {
        Some(block) => block_mask(block.try_into().unwrap_or(&[0; 16])),
        None => {
            // The last few bytes, padded with a byte that needs no escape.
            let mut tail = [b'a'; 16];
            tail[..rest.len()].copy_from_slice(rest);
            block_mask(&tail)
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn block_mask(block: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // Sixteen bytes at a time with SSE2, which every x86_64 processor has.
    // A byte needs an escape when it is a quote, a backslash, or at most 0x1f (max(b, 0x1f)
    // == 0x1f, unsigned).
    // SAFETY: SSE2 is part of x86_64; the load reads exactly the 16 bytes of `block`.
    unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
        let limit = _mm_set1_epi8(0x1f);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, limit), limit);
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(control, quote), backslash)) as u32
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn block_mask(block: &[u8; 16]) -> u32 {
    block
        .iter()
        .enumerate()
        .filter(|(_, &b)| ESCAPES[b as usize] != 0)
        .fold(0, |mask, (i, _)| mask | 1 << i)
}

/// `text` as a JSON string, for messages: quotes added, control characters made visible.
pub(crate) fn quoted(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len() + 2);
    write_str(&mut out, text);
    String::from_utf8(out).unwrap_or_default()
}

/// Writes a double as ECMAScript `Number.prototype.toString` does (RFC 8785 § 3.2.2.3):
/// shortest round-trip digits, exponent forms below 1e-6 and from 1e21, `-0` as `0`.
pub fn write_f64(out: &mut Vec<u8>, v: f64) -> Result<(), CanonicalError> {
    if !v.is_finite() {
        return Err(CanonicalError::new(CanonicalErrorKind::NonFinite(v)));
    }
    if v == 0.0 {
        out.push(b'0'); // both zeros: ECMAScript writes -0 as "0"
        return Ok(());
    }
    crate::number::write_es_number(out, v);
    Ok(())
}

/// Writes an integer in plain decimal; refuses magnitudes above [`MAX_SAFE_INTEGER`].
/// Within that range the output equals [`write_f64`] of the same number.
pub fn write_i64(out: &mut Vec<u8>, v: i64) -> Result<(), CanonicalError> {
    if v.unsigned_abs() > MAX_SAFE_INTEGER as u64 {
        return Err(CanonicalError::new(CanonicalErrorKind::IntegerOutOfRange(
            v.to_string(),
        )));
    }
    let mut buffer = itoa::Buffer::new();
    out.extend_from_slice(buffer.format(v).as_bytes());
    Ok(())
}

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
            write_value(out, &items[i], depth)
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
/// by `write_element(out, i, depth + 1)`, and an error in it is located at `[i]`.
///
/// Front ends with their own values (the Python binding) write through this and
/// [`write_object`], so the structure rules (depth limit, separators, paths) live here once.
pub fn write_array(
    out: &mut Vec<u8>,
    len: usize,
    depth: usize,
    mut write_element: impl FnMut(&mut Vec<u8>, usize, usize) -> Result<(), CanonicalError>,
) -> Result<(), CanonicalError> {
    enter(depth)?;
    out.push(b'[');
    for i in 0..len {
        if i > 0 {
            out.push(b',');
        }
        write_element(out, i, depth + 1).map_err(|e| e.in_index(i))?;
    }
    out.push(b']');
    Ok(())
}

/// Writes an object found at `depth` containers deep: members in canonical order, duplicate
/// keys refused, each value written by `write_member(out, value, depth + 1)`, and an error in
/// it located at the member's key.
pub fn write_object<V>(
    out: &mut Vec<u8>,
    members: &mut [(&str, V)],
    depth: usize,
    mut write_member: impl FnMut(&mut Vec<u8>, &V, usize) -> Result<(), CanonicalError>,
) -> Result<(), CanonicalError> {
    enter(depth)?;
    sort_members(members)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    fn n(v: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, v).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_only_quote_backslash_and_controls() {
        assert_eq!(s("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(s("\u{8}\t\n\u{c}\r"), r#""\b\t\n\f\r""#);
        assert_eq!(s("\u{0}\u{1f}\u{b}"), r#""\u0000\u001f\u000b""#);
        assert_eq!(s("/\u{7f}\u{2028}€😀"), "\"/\u{7f}\u{2028}€😀\"");
    }

    #[test]
    fn escapes_in_every_position_of_a_word() {
        // The eight-byte skip must find an escape wherever it sits, and never skip one.
        for special in ['"', '\\', '\u{0}', '\u{1f}', '\n'] {
            for at in 0..20 {
                let mut text = "a".repeat(20);
                text.replace_range(at..at + 1, &special.to_string());
                let expected = format!(
                    "\"{}\"",
                    text.replace('\\', "\\\\")
                        .replace('"', "\\\"")
                        .replace('\u{0}', "\\u0000")
                        .replace('\u{1f}', "\\u001f")
                        .replace('\n', "\\n")
                );
                assert_eq!(s(&text), expected, "{special:?} at {at}");
            }
        }
        // Bytes at or above 0x80 (UTF-8) and 0x20..0x7f other than quote and backslash pass.
        assert_eq!(s("ééééé~~~ \u{7f}"), "\"ééééé~~~ \u{7f}\"");
    }

    /// Escapes byte by byte, the obvious way: the reference for the block-wise writer.
    fn naive(v: &str) -> String {
        let mut out = String::from("\"");
        for c in v.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\u{8}' => out.push_str("\\b"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\u{c}' => out.push_str("\\f"),
                '\r' => out.push_str("\\r"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    #[test]
    fn escapes_agree_with_the_naive_writer() {
        // Random strings of every length up to 100 over an alphabet dense in escapes, so
        // runs of every length meet block boundaries and the end of the string.
        let alphabet = [
            'a', 'Z', ' ', '"', '\\', '\n', '\u{0}', '\u{1f}', 'é', '€', '😀',
        ];
        let mut state = 0x1234_5678_u64;
        for len in 0..=100 {
            for density in [1, 3, 11] {
                let text: String = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        let pick = (state % alphabet.len() as u64) as usize;
                        if pick < 3 || state % density == 0 {
                            alphabet[pick]
                        } else {
                            'x'
                        }
                    })
                    .collect();
                assert_eq!(s(&text), naive(&text), "{text:?}");
            }
        }
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
