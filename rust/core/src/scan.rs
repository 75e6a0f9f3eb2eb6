//! Canonical JSON read in place: the transcript reader's fast path.
//!
//! A transcript line must be canonical JSON, and almost every line is. The general reader
//! proves it by parsing the line into a [`Value`](crate::Value), writing that back and
//! comparing, which allocates for every string and container. [`Scan`] walks the bytes once
//! instead and checks each token against the form the canonical writer gives it; it builds
//! nothing but the strings its caller asks for.
//!
//! It is conservative: it answers `None` for anything it does not recognise as plainly
//! canonical (whitespace, an escape the writer would not write, a number the writer would
//! write differently, keys out of order, an escaped key or one outside the range where byte
//! order is UTF-16 order, too deep a nesting), and the caller then reads the line with the
//! general parser, which accepts it or refuses it with the exact error. So a `Some` must
//! mean the general reader accepts the same text with the same result; a `None` only costs
//! time. (Debug builds check every `Some` against the general reader.)

use std::borrow::Cow;

use crate::canonical::{write_f64, MAX_DEPTH};
use crate::digest::DIGEST_PREFIX;
use crate::string::ESCAPES;

/// The canonical escape of a byte: `\` and its letter, or `\u00` and two lowercase hex
/// digits (string.rs writes the same from the same table).
fn canonical_escape(byte: u8) -> Option<([u8; 6], usize)> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match ESCAPES[usize::from(byte)] {
        0 => None,
        b'u' => Some((
            [
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ],
            6,
        )),
        letter => Some(([b'\\', letter, 0, 0, 0, 0], 2)),
    }
}

/// The byte a two-character escape stands for (`\u` escapes are decoded apart).
fn short_escape(letter: u8) -> Option<u8> {
    Some(match letter {
        b'"' => b'"',
        b'\\' => b'\\',
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        _ => return None,
    })
}

/// A cursor over one line that is valid UTF-8.
pub(crate) struct Scan<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl<'a> Scan<'a> {
    /// `None` unless `line` is UTF-8 (the general reader's first check).
    pub(crate) fn new(line: &'a [u8]) -> Option<Self> {
        let text = std::str::from_utf8(line).ok()?;
        Some(Self {
            bytes: line,
            text,
            pos: 0,
        })
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Moves past `literal` if the text continues with it.
    pub(crate) fn take(&mut self, literal: &[u8]) -> Option<()> {
        if self.bytes[self.pos..].starts_with(literal) {
            self.pos += literal.len();
            Some(())
        } else {
            None
        }
    }

    /// A string in canonical form, decoded; borrowed from the line when it has no escape.
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.pos + 1;
        let end = self.string_end()?;
        let raw = &self.text[start..end - 1];
        if !raw.as_bytes().contains(&b'\\') {
            return Some(Cow::Borrowed(raw));
        }
        let mut out = Vec::with_capacity(raw.len());
        let mut rest = raw.as_bytes();
        while let Some(at) = rest.iter().position(|&b| b == b'\\') {
            out.extend_from_slice(&rest[..at]);
            let (byte, len) = match rest[at + 1] {
                b'u' => (hex_byte(&rest[at + 4..at + 6]), 6),
                letter => (short_escape(letter).expect("checked"), 2),
            };
            out.push(byte);
            rest = &rest[at + len..];
        }
        out.extend_from_slice(rest);
        // Escapes stand for ASCII bytes, so the decoded text is as valid UTF-8 as the line.
        Some(Cow::Owned(
            String::from_utf8(out).expect("escapes decode to ASCII"),
        ))
    }

    /// Moves past a canonical string and returns the offset after its closing quote.
    fn string_end(&mut self) -> Option<usize> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let bytes = self.bytes;
        let mut at = self.pos + 1;
        loop {
            let b = *bytes.get(at)?;
            match b {
                b'"' => {
                    self.pos = at + 1;
                    return Some(self.pos);
                }
                b'\\' => at += self.escape_len(at)?,
                0x00..=0x1f => return None, // the writer escapes every control
                _ => at += 1,
            }
        }
    }

    /// The length of the escape at `at` if it is the one the canonical writer writes.
    fn escape_len(&self, at: usize) -> Option<usize> {
        let rest = &self.bytes[at..];
        let byte = match *rest.get(1)? {
            b'u' => hex_byte(rest.get(4..6).filter(|_| rest.get(2..4) == Some(b"00"))?),
            letter => short_escape(letter)?,
        };
        let (escape, len) = canonical_escape(byte)?;
        (rest.get(..len)? == &escape[..len]).then_some(len)
    }

    /// `"blake3:` and 64 lowercase hex digits `"`: the digest, without its quotes.
    pub(crate) fn digest(&mut self) -> Option<&'a str> {
        let start = self.pos + 1;
        let end = start + DIGEST_PREFIX.len() + 64;
        let body = self.bytes.get(start..end)?;
        let hex = &body[DIGEST_PREFIX.len()..];
        let ok = self.peek() == Some(b'"')
            && self.bytes.get(end) == Some(&b'"')
            && body.starts_with(DIGEST_PREFIX.as_bytes())
            // Every byte tested without an early exit, so the loop compiles to SIMD compares
            // (a digest is checked on every run and section record; `all` took ~15
            // instructions a digit).
            && hex.iter().fold(true, |ok, &b| {
                ok & ((b.wrapping_sub(b'0') < 10) | (b.wrapping_sub(b'a') < 6))
            });
        ok.then(|| {
            self.pos = end + 1;
            &self.text[start..end]
        })
    }

    /// A whole number from 0 to 2**53 − 1 in canonical form (its decimal digits).
    pub(crate) fn count(&mut self) -> Option<usize> {
        let digits = self.bytes[self.pos..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let text = &self.bytes[self.pos..self.pos + digits];
        if digits == 0 || digits > 16 || (digits > 1 && text[0] == b'0') {
            return None;
        }
        let value = text.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
        if value > crate::MAX_SAFE_INTEGER as u64 {
            return None;
        }
        self.pos += digits;
        usize::try_from(value).ok()
    }

    /// Moves past one canonical value at nesting `depth` (0 for a whole text).
    pub(crate) fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(depth, |scan, _| scan.value(depth + 1)),
            b'[' => self.array(depth, |scan| scan.value(depth + 1)),
            b'"' => self.string_end().map(drop),
            b't' => self.take(b"true"),
            b'f' => self.take(b"false"),
            b'n' => self.take(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    /// An array at `depth`, each element read by `element`.
    pub(crate) fn array(
        &mut self,
        depth: usize,
        mut element: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.take(b"[")?;
        if self.take(b"]").is_some() {
            return Some(());
        }
        loop {
            element(self)?;
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An object at `depth`, each member's value read by `member`, given the member's name.
    /// Names must be in canonical order, without escapes (so the bytes are the name) and below
    /// U+E000 (where UTF-8 byte order is UTF-16 order); anything else is left to the parser.
    pub(crate) fn object(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.take(b"{")?;
        if self.take(b"}").is_some() {
            return Some(());
        }
        let mut previous: Option<&'a [u8]> = None;
        loop {
            let start = self.pos + 1;
            let end = self.string_end()? - 1;
            let name = &self.bytes[start..end];
            if name.iter().any(|&b| b == b'\\' || b >= 0xee) || previous >= Some(name) {
                return None;
            }
            previous = Some(name);
            self.take(b":")?;
            member(self, name)?;
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A number the canonical writer would write exactly so: plain digits up to 2**53 − 1
    /// (no `-0`), or any other literal that reads as a finite double whose canonical form is
    /// the literal itself.
    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        let len = self.bytes[start..]
            .iter()
            .take_while(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .count();
        let literal = &self.text[start..start + len];
        let digits = literal.strip_prefix('-').unwrap_or(literal);
        let plain = !digits.is_empty()
            && digits.len() <= 15
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'))
            && literal != "-0";
        if !plain {
            // Canonical means the writer's text for the literal's value; that text is always
            // JSON's grammar, so Rust's laxer float syntax (`1.`, `+1`, `.5`) cannot pass.
            let value: f64 = literal.parse().ok()?;
            let mut canonical = Vec::with_capacity(32);
            write_f64(&mut canonical, value).ok()?;
            if canonical != literal.as_bytes() {
                return None;
            }
        }
        self.pos += len;
        Some(())
    }
}

/// Two lowercase hex digits as a byte (`None` for anything else).
fn hex_byte(pair: &[u8]) -> u8 {
    let nibble = |d: u8| match d {
        b'0'..=b'9' => d - b'0',
        b'a'..=b'f' => d - b'a' + 10,
        _ => 0xff,
    };
    match pair {
        [hi, lo] if nibble(*hi) < 16 && nibble(*lo) < 16 => nibble(*hi) << 4 | nibble(*lo),
        // Not hex: a byte no canonical escape stands for, so the check after refuses it.
        _ => b'a',
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    /// Whether the scanner takes `text` as one whole canonical value.
    fn scans(text: &[u8]) -> bool {
        Scan::new(text).is_some_and(|mut scan| scan.value(0).is_some() && scan.at_end())
    }

    /// What the general reader says: canonical JSON that reads back to itself.
    fn canonical(text: &[u8]) -> bool {
        parse(text).is_ok_and(|value| value.to_canonical().is_ok_and(|c| c == text))
    }

    #[test]
    fn takes_canonical_text_and_leaves_the_rest_to_the_parser() {
        let taken: &[&[u8]] = &[
            br#"{"a":[1,-2,0,true,false,null],"b":{"c":"d"},"e":""}"#,
            br#"[1.5,-0.25,1e+21,1e-7,123456789012345,9007199254740991]"#,
            br#""\"\\\b\f\n\r\t\u0000\u001f\u000b""#,
            "\"日本語 😀 \u{7f}\"".as_bytes(),
            br#"{"":1,"a":2,"aa":3,"b":4}"#,
            b"[]",
            b"{}",
        ];
        for text in taken {
            assert!(canonical(text), "{}", String::from_utf8_lossy(text));
            assert!(scans(text), "{}", String::from_utf8_lossy(text));
        }
        let left: &[&[u8]] = &[
            b"[1, 2]",
            b"[1.0]",
            b"[-0]",
            b"[01]",
            b"[1E+21]",
            b"[+1]",
            b"[.5]",
            b"[1e400]",
            b"[1e-400]",
            br#"["\/"]"#,
            br#"["\u0041"]"#,
            br#"["\u001F"]"#,
            br#"["\u00e9"]"#,
            br#"["\u000a"]"#,
            b"[\"\x01\"]",
            br#"{"b":1,"a":2}"#,
            br#"{"a":1,"a":2}"#,
            br#"{"\n":1}"#,
            "{\"\u{e000}\":1}".as_bytes(),
            b"[tru]",
            b"[1,]",
            b"{\"a\"}",
            b"\"abc",
            br#""\"#,
            br#""\u00"#,
        ];
        for text in left {
            assert!(!scans(text), "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn nesting_stops_where_the_parser_does() {
        let deep = |n: usize| [vec![b'['; n], vec![b']'; n]].concat();
        assert!(scans(&deep(MAX_DEPTH)) && canonical(&deep(MAX_DEPTH)));
        assert!(!scans(&deep(MAX_DEPTH + 1)) && !canonical(&deep(MAX_DEPTH + 1)));
    }

    #[test]
    fn strings_decode_as_the_parser_decodes_them() {
        for text in [
            r#""plain""#,
            r#""a\"b\\c\nd\u0001e\tf""#,
            "\"é\\n日\"",
            r#""\u001f""#,
        ] {
            let mut scan = Scan::new(text.as_bytes()).unwrap();
            let decoded = scan.string().unwrap();
            assert!(scan.at_end());
            assert_eq!(
                crate::Value::String(decoded.into_owned()),
                parse(text.as_bytes()).unwrap()
            );
        }
    }

    #[test]
    fn counts_are_safe_integers_in_canonical_digits() {
        let count = |text: &[u8]| {
            let mut scan = Scan::new(text).unwrap();
            scan.count().filter(|_| scan.at_end())
        };
        assert_eq!(count(b"0"), Some(0));
        assert_eq!(count(b"9007199254740991"), Some(9_007_199_254_740_991));
        for text in [&b"9007199254740992"[..], b"01", b"-1", b"1.5", b""] {
            assert_eq!(count(text), None, "{}", String::from_utf8_lossy(text));
        }
    }

    /// Every byte string up to three bytes over a small alphabet, and every one-byte change
    /// of some canonical texts: the scanner never takes what the general reader refuses.
    #[test]
    fn never_takes_what_the_reader_refuses() {
        let alphabet = b"{}[]\":,0-1.e+\\utnl\x01 a";
        let mut texts: Vec<Vec<u8>> = vec![vec![]];
        for _ in 0..3 {
            let longer: Vec<Vec<u8>> = texts
                .iter()
                .flat_map(|t| {
                    alphabet.iter().map(move |&b| {
                        let mut t = t.clone();
                        t.push(b);
                        t
                    })
                })
                .collect();
            texts.extend(longer);
        }
        let seeds: &[&[u8]] = &[
            br#"{"a":[1,-2.5,"x\n"],"b":{"c":null}}"#,
            br#"["\u001f",1e+21,true]"#,
        ];
        for seed in seeds {
            for at in 0..seed.len() {
                for &b in alphabet {
                    let mut t = seed.to_vec();
                    t[at] = b;
                    texts.push(t.clone());
                    t.insert(at, b);
                    texts.push(t);
                }
            }
        }
        for text in &texts {
            if scans(text) {
                assert!(canonical(text), "{}", String::from_utf8_lossy(text));
            }
        }
    }
}
