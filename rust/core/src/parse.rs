//! A strict JSON text parser (RFC 8259 grammar, I-JSON restrictions) for canonicalisation.
//!
//! Parsing text directly is stricter than canonicalising parsed objects can be: once a
//! dictionary is built a duplicate member is gone, and a big integer has already been
//! rounded. So this parser refuses, with line and column, everything RFC 8785 cannot
//! represent faithfully: duplicate member names, numbers that overflow a double, integers
//! beyond ±(2**53 − 1) written without fraction or exponent, invalid UTF-8, lone surrogate
//! escapes, a byte order mark, trailing text and nesting deeper than [`MAX_DEPTH`].
//!
//! The same grammar has a second mode, `syntax_error`, which only says where a text stops
//! being JSON text: a transcript reader uses it to rank a refused line's problems in the
//! order of its refusal table (not JSON, then too deep, then not canonical), whichever of
//! them the parser met first. Both modes read tokens with the same functions
//! (`skip_whitespace`, `number_end`, `simple_escape`).

use std::fmt;

use crate::canonical::{cmp_keys, write_f64, CanonicalErrorKind, MAX_DEPTH, MAX_SAFE_INTEGER};
use crate::path::JsonPath;
use crate::value::Value;

/// What is wrong with a JSON text.
#[derive(Debug, Clone, PartialEq)]
pub enum ParseErrorKind {
    /// The bytes are not UTF-8.
    InvalidUtf8,
    /// The text starts with U+FEFF, which I-JSON forbids.
    ByteOrderMark,
    /// The text ended where more was expected; says what.
    UnexpectedEnd(&'static str),
    /// A character where something else was expected: (found, expected).
    Unexpected(char, &'static str),
    /// A raw control character inside a string.
    ControlCharacter(u8),
    /// A backslash escape JSON does not have.
    InvalidEscape,
    /// A number that does not follow the JSON grammar.
    InvalidNumber,
    /// A number too large for a double, as written.
    NumberOverflow(String),
    /// An integer literal beyond ±(2**53 − 1) whose double is written as another integer.
    InexactInteger { literal: String, nearest: String },
    /// Text after the value.
    TrailingCharacters,
    /// A rule shared with canonicalisation of values: integer range, lone surrogate,
    /// duplicate member name, nesting depth.
    Canonical(CanonicalErrorKind),
}

impl ParseErrorKind {
    /// A stable identifier of the rule broken (`trailing`, `number-overflow`, …); rules
    /// shared with canonicalisation keep their [`CanonicalErrorKind::id`].
    pub fn id(&self) -> &'static str {
        match self {
            Self::InvalidUtf8 => "invalid-utf8",
            Self::ByteOrderMark => "bom",
            Self::UnexpectedEnd(_)
            | Self::Unexpected(..)
            | Self::InvalidEscape
            | Self::InvalidNumber => "syntax",
            Self::ControlCharacter(_) => "control-character",
            Self::NumberOverflow(_) => "number-overflow",
            Self::InexactInteger { .. } => "integer-out-of-range",
            Self::TrailingCharacters => "trailing",
            Self::Canonical(kind) => kind.id(),
        }
    }
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidUtf8 => f.write_str("invalid UTF-8"),
            Self::ByteOrderMark => {
                f.write_str("byte order mark (U+FEFF) before the value; I-JSON forbids it")
            }
            Self::UnexpectedEnd(expected) => {
                write!(f, "unexpected end of input, expected {expected}")
            }
            Self::Unexpected(c, expected) => write!(f, "unexpected {c:?}, expected {expected}"),
            Self::ControlCharacter(b) => {
                write!(
                    f,
                    "raw control character U+{b:04X} in a string; write it as an escape"
                )
            }
            Self::InvalidEscape => {
                f.write_str(r#"invalid escape; JSON has \" \\ \/ \b \f \n \r \t and \uXXXX"#)
            }
            Self::InvalidNumber => f.write_str("malformed number"),
            Self::NumberOverflow(text) => {
                write!(f, "number {text} is too large for an IEEE 754 double")
            }
            Self::InexactInteger { literal, nearest } => write!(
                f,
                "integer {literal} is outside ±(2**53 − 1) and has no exact IEEE 754 double; its \
canonical form would be {nearest}. Send it as a string"
            ),
            Self::TrailingCharacters => f.write_str("text after the JSON value"),
            Self::Canonical(kind) => kind.fmt(f),
        }
    }
}

/// A JSON text that cannot be canonicalised: what, where (1-based line and column, in
/// characters), and inside which value.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub kind: ParseErrorKind,
    /// Byte offset of the problem in the input.
    pub offset: usize,
    pub line: usize,
    pub column: usize,
    pub path: JsonPath,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)?;
        if !self.path.is_empty() {
            write!(f, " (at {})", self.path)?;
        }
        write!(f, ": {}", self.kind)
    }
}

impl std::error::Error for ParseError {}

impl ParseError {
    fn in_index(mut self, index: usize) -> Self {
        self.path = self.path.in_index(index);
        self
    }

    fn in_key(mut self, key: &str) -> Self {
        self.path = self.path.in_key(key);
        self
    }
}

fn locate(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    // Count characters, not bytes: continuation bytes do not start a character.
    let column = 1 + before[line_start..]
        .iter()
        .filter(|&&b| (b & 0xC0) != 0x80)
        .count();
    (line, column)
}

fn error_at(bytes: &[u8], offset: usize, kind: ParseErrorKind) -> ParseError {
    let (line, column) = locate(bytes, offset);
    ParseError {
        kind,
        offset,
        line,
        column,
        path: JsonPath::root(),
    }
}

/// Parses one JSON text into a [`Value`], with the strict rules above.
pub fn parse(data: &[u8]) -> Result<Value, ParseError> {
    let text = std::str::from_utf8(data)
        .map_err(|e| error_at(data, e.valid_up_to(), ParseErrorKind::InvalidUtf8))?;
    if text.starts_with('\u{FEFF}') {
        return Err(error_at(data, 0, ParseErrorKind::ByteOrderMark));
    }
    let mut parser = Parser {
        text,
        bytes: data,
        pos: 0,
    };
    let value = parser.value(0)?;
    parser.skip_whitespace();
    if parser.pos < data.len() {
        return Err(parser.error(ParseErrorKind::TrailingCharacters));
    }
    Ok(value)
}

/// Canonical JSON (RFC 8785) of a JSON text, parsed strictly.
pub fn canonicalize_text(data: &[u8]) -> Result<Vec<u8>, ParseError> {
    let value = parse(data)?;
    // The parser has already refused everything canonicalisation could.
    value.to_canonical().map_err(|e| ParseError {
        path: e.path,
        ..error_at(data, 0, ParseErrorKind::Canonical(e.kind))
    })
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, kind: ParseErrorKind) -> ParseError {
        error_at(self.bytes, self.pos, kind)
    }

    fn unexpected(&self, expected: &'static str) -> ParseError {
        match self.text[self.pos..].chars().next() {
            Some(c) => self.error(ParseErrorKind::Unexpected(c, expected)),
            None => self.error(ParseErrorKind::UnexpectedEnd(expected)),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        self.pos = skip_whitespace(self.bytes, self.pos);
    }

    fn expect(&mut self, byte: u8, expected: &'static str) -> Result<(), ParseError> {
        self.skip_whitespace();
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.skip_whitespace();
        match self.peek() {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.unexpected("a JSON value")),
        }
    }

    // `true`, `false` or `null`; a mismatch is located at its first wrong byte.
    fn literal(&mut self, word: &'static str, value: Value) -> Result<Value, ParseError> {
        for &expected in word.as_bytes() {
            if self.peek() != Some(expected) {
                return Err(self.unexpected(match word {
                    "true" => "'true'",
                    "false" => "'false'",
                    _ => "'null'",
                }));
            }
            self.pos += 1;
        }
        Ok(value)
    }

    fn enter(&self, depth: usize) -> Result<(), ParseError> {
        if depth >= MAX_DEPTH {
            Err(self.error(ParseErrorKind::Canonical(CanonicalErrorKind::TooDeep)))
        } else {
            Ok(())
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.enter(depth)?;
        self.pos += 1; // '['
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            let index = items.len();
            items.push(self.value(depth + 1).map_err(|e| e.in_index(index))?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.unexpected("',' or ']'")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        self.enter(depth)?;
        self.pos += 1; // '{'
        let mut names: Vec<(String, usize)> = Vec::new(); // name, offset of its '"'
        let mut values: Vec<Value> = Vec::new();
        if let Err(error) = self.members(depth, &mut names, &mut values) {
            // A repeated name read before the error is earlier in the text: it wins.
            return Err(self.duplicate(&names).unwrap_or(error));
        }
        // Sort once: it finds duplicates and leaves the members in canonical order.
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by(|&a, &b| cmp_keys(&names[a].0, &names[b].0).then(a.cmp(&b)));
        if order.windows(2).any(|w| names[w[0]].0 == names[w[1]].0) {
            return Err(self.duplicate(&names).expect("a duplicate was found"));
        }
        let mut slots: Vec<Option<(String, Value)>> = names
            .into_iter()
            .map(|(name, _)| name)
            .zip(values)
            .map(Some)
            .collect();
        let sorted = order.into_iter().filter_map(|i| slots[i].take()).collect();
        Ok(Value::Object(sorted))
    }

    /// The members of an object, after its `{`, through its `}`.
    fn members(
        &mut self,
        depth: usize,
        names: &mut Vec<(String, usize)>,
        values: &mut Vec<Value>,
    ) -> Result<(), ParseError> {
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.unexpected("a member name in double quotes"));
            }
            let at = self.pos;
            let name = self.string()?;
            names.push((name, at));
            self.expect(b':', "':'")?;
            let value = self.value(depth + 1);
            values.push(value.map_err(|e| e.in_key(&names[names.len() - 1].0))?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.unexpected("',' or '}'")),
            }
        }
    }

    /// The earliest member (in text order) whose name an earlier member of the same object
    /// already has, as a `duplicate-key` error located at its opening quote.
    fn duplicate(&self, names: &[(String, usize)]) -> Option<ParseError> {
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by(|&a, &b| names[a].0.cmp(&names[b].0).then(a.cmp(&b)));
        let second = order
            .windows(2)
            .filter(|w| names[w[0]].0 == names[w[1]].0)
            .map(|w| w[1])
            .min()?;
        let (name, at) = &names[second];
        Some(error_at(
            self.bytes,
            *at,
            ParseErrorKind::Canonical(CanonicalErrorKind::DuplicateKey(name.clone())),
        ))
    }

    // Four hex digits; a bad one (or the end of the input) is located where it is.
    fn hex4(&mut self) -> Result<u32, ParseError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let nibble = self
                .peek()
                .and_then(|d| (d as char).to_digit(16))
                .ok_or_else(|| self.error(ParseErrorKind::InvalidEscape))?;
            v = v * 16 + nibble;
            self.pos += 1;
        }
        Ok(v)
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.pos += 1; // opening quote
        let mut out = String::new();
        let mut start = self.pos;
        loop {
            let Some(b) = self.peek() else {
                return Err(self.error(ParseErrorKind::UnexpectedEnd("'\"' to close the string")));
            };
            match b {
                b'"' => {
                    out.push_str(&self.text[start..self.pos]);
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    out.push_str(&self.text[start..self.pos]);
                    let escape_at = self.pos;
                    self.pos += 1;
                    let c = match self.peek() {
                        Some(b'u') => {
                            self.pos += 1;
                            let c = self.unicode_escape(escape_at)?;
                            out.push(c);
                            start = self.pos;
                            continue;
                        }
                        escape => match escape.and_then(simple_escape) {
                            Some(c) => c,
                            None => return Err(self.error(ParseErrorKind::InvalidEscape)),
                        },
                    };
                    self.pos += 1;
                    out.push(c);
                    start = self.pos;
                }
                0x00..=0x1f => return Err(self.error(ParseErrorKind::ControlCharacter(b))),
                _ => self.pos += 1,
            }
        }
    }

    // After `\u`: one code point, joining a surrogate pair written as two escapes.
    fn unicode_escape(&mut self, escape_at: usize) -> Result<char, ParseError> {
        let lone = |p: &Self| {
            error_at(
                p.bytes,
                escape_at,
                ParseErrorKind::Canonical(CanonicalErrorKind::LoneSurrogate),
            )
        };
        let unit = self.hex4()?;
        let code = match unit {
            0xD800..=0xDBFF => {
                // Paired only by a complete `\uDC00`–`\uDFFF` escape right after it; anything
                // else (a bad escape included) leaves this one lone, and it comes first.
                let low = self
                    .bytes
                    .get(self.pos..self.pos + 6)
                    .filter(|next| next.starts_with(b"\\u"))
                    .and_then(|next| std::str::from_utf8(&next[2..]).ok())
                    .filter(|hex| hex.bytes().all(|d| d.is_ascii_hexdigit()))
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .filter(|low| (0xDC00..=0xDFFF).contains(low))
                    .ok_or_else(|| lone(self))?;
                self.pos += 6;
                0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(lone(self)),
            _ => unit,
        };
        char::from_u32(code).ok_or_else(|| lone(self))
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        let (end, integer) = number_end(self.bytes, start)
            .map_err(|at| error_at(self.bytes, at, ParseErrorKind::InvalidNumber))?;
        self.pos = end;
        if let Some(b'0'..=b'9') = self.peek() {
            return Err(self.error(ParseErrorKind::InvalidNumber)); // a leading zero, as in 01
        }
        let literal = &self.text[start..self.pos];
        if integer {
            if let Ok(v) = literal.parse::<i64>() {
                if v.unsigned_abs() <= MAX_SAFE_INTEGER as u64 {
                    return Ok(Value::Number(v as f64));
                }
            }
        }
        // Rust's float parsing rounds correctly, as ECMAScript's does. Underflow to zero is
        // accepted (docs/FORMAT.md); overflow is refused.
        let v: f64 = literal
            .parse()
            .map_err(|_| error_at(self.bytes, start, ParseErrorKind::InvalidNumber))?;
        if v.is_infinite() {
            return Err(error_at(
                self.bytes,
                start,
                ParseErrorKind::NumberOverflow(literal.to_owned()),
            ));
        }
        if integer && !same_decimal(literal, v) {
            // Beyond ±(2**53 − 1) an integer literal stands only if the canonical form of its
            // double denotes the same integer (docs/FORMAT.md § Numbers in JSON text).
            let mut nearest = Vec::new();
            write_f64(&mut nearest, v).expect("finite");
            return Err(error_at(
                self.bytes,
                start,
                ParseErrorKind::InexactInteger {
                    literal: literal.to_owned(),
                    nearest: String::from_utf8_lossy(&nearest).into_owned(),
                },
            ));
        }
        Ok(Value::Number(v))
    }
}

/// The offset after the whitespace (RFC 8259: space, tab, line feed, carriage return) at `i`.
fn skip_whitespace(bytes: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(i) {
        i += 1;
    }
    i
}

/// The character a one-letter escape `\x` stands for (`\uXXXX` aside), or `None` if JSON has
/// no such escape.
fn simple_escape(letter: u8) -> Option<char> {
    Some(match letter {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

/// The number grammar from `start` (a `-` or a digit): the offset after the number and
/// whether it is written as an integer (no fraction, no exponent), or the offset of the
/// first byte that cannot continue it. A digit right after a leading `0` ends the number
/// here; what follows a number is the caller's to judge.
fn number_end(bytes: &[u8], start: usize) -> Result<(usize, bool), usize> {
    let digits = |from: usize| {
        from + bytes
            .get(from..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut i = start;
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    match bytes.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(i),
        _ => return Err(i),
    }
    let mut integer = true;
    if bytes.get(i) == Some(&b'.') {
        integer = false;
        let end = digits(i + 1);
        if end == i + 1 {
            return Err(i + 1);
        }
        i = end;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        integer = false;
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return Err(i);
        }
        i = end;
    }
    Ok((i, integer))
}

/// The offset of the first byte where `text` stops being JSON text, or `None` if it is JSON
/// text: the parser's grammar in the mode that ranks a refused transcript line's problems.
/// It differs from [`parse`] in what it leaves out, not in the grammar: no depth limit, and
/// a constant stack (an explicit stack of one byte per open bracket instead of recursion),
/// so a syntax error past the [`MAX_DEPTH`]th bracket is found; no canonical-form rules
/// (duplicate member names, number range, lone surrogates), which rank after the grammar;
/// no value built. A byte order mark is not whitespace here, so it breaks the grammar. A
/// bad escape is located at its backslash and a bad literal at its first byte (the parser
/// locates both at the first wrong byte).
pub(crate) fn syntax_error(text: &[u8]) -> Option<usize> {
    #[derive(PartialEq)]
    enum Want {
        Value,
        ValueOrClose,
        Key,
        KeyOrClose,
        Colon,
        CommaOrClose,
    }
    if let Err(error) = std::str::from_utf8(text) {
        return Some(error.valid_up_to());
    }
    let mut stack: Vec<u8> = Vec::new(); // b'[' or b'{'
    let mut want = Want::Value;
    let mut i = 0;
    let n = text.len();
    loop {
        i = skip_whitespace(text, i);
        if i == n {
            return (!(stack.is_empty() && want == Want::CommaOrClose)).then_some(n);
        }
        let b = text[i];
        match want {
            Want::Colon => {
                if b != b':' {
                    return Some(i);
                }
                i += 1;
                want = Want::Value;
            }
            Want::CommaOrClose => {
                let Some(&top) = stack.last() else {
                    return Some(i); // text after the value
                };
                match (b, top) {
                    (b',', b'[') => want = Want::Value,
                    (b',', _) => want = Want::Key,
                    (b']', b'[') | (b'}', b'{') => {
                        stack.pop();
                    }
                    _ => return Some(i),
                }
                i += 1;
            }
            Want::Key | Want::KeyOrClose => {
                if b == b'}' && want == Want::KeyOrClose {
                    stack.pop();
                    i += 1;
                    want = Want::CommaOrClose;
                } else if b == b'"' {
                    match string_end(text, i) {
                        Ok(end) => i = end,
                        Err(at) => return Some(at),
                    }
                    want = Want::Colon;
                } else {
                    return Some(i);
                }
            }
            Want::Value | Want::ValueOrClose => {
                match b {
                    b']' if want == Want::ValueOrClose => {
                        stack.pop();
                        i += 1;
                    }
                    b'[' | b'{' => {
                        stack.push(b);
                        i += 1;
                        want = if b == b'[' {
                            Want::ValueOrClose
                        } else {
                            Want::KeyOrClose
                        };
                        continue;
                    }
                    b'"' => match string_end(text, i) {
                        Ok(end) => i = end,
                        Err(at) => return Some(at),
                    },
                    b't' | b'f' | b'n' => {
                        let word: &[u8] = match b {
                            b't' => b"true",
                            b'f' => b"false",
                            _ => b"null",
                        };
                        if !text[i..].starts_with(word) {
                            return Some(i);
                        }
                        i += word.len();
                    }
                    b'-' | b'0'..=b'9' => match number_end(text, i) {
                        Ok((end, _)) => i = end,
                        Err(at) => return Some(at),
                    },
                    _ => return Some(i),
                }
                want = Want::CommaOrClose;
            }
        }
    }
}

/// The offset after the string starting at `start` (a `"`), or where it breaks the grammar:
/// a raw control character, the backslash of an escape JSON does not have, or the end.
fn string_end(text: &[u8], start: usize) -> Result<usize, usize> {
    let mut i = start + 1;
    while i < text.len() {
        match text[i] {
            b'"' => return Ok(i + 1),
            b'\\' => match text.get(i + 1) {
                Some(b'u') => {
                    let hex = text.get(i + 2..i + 6);
                    if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                        return Err(i);
                    }
                    i += 6;
                }
                Some(&letter) if simple_escape(letter).is_some() => i += 2,
                _ => return Err(i),
            },
            0..=0x1f => return Err(i),
            _ => i += 1,
        }
    }
    Err(text.len())
}

/// The nesting depth of JSON text (strings skipped): its deepest run of open brackets. For
/// text that is not JSON it is a count of brackets outside strings, nothing more.
pub(crate) fn nesting(json: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in json {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Significant digits (no leading or trailing zeros) and decimal exponent of a number
/// written as integer digits (`-120` → ("12", 3)) or in ECMAScript exponent form
/// (`1.2e+2` → ("12", 3)): two texts with equal results denote the same number.
fn decimal_parts(text: &str) -> (String, i64) {
    let text = text.trim_start_matches('-');
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i64>().unwrap_or(0)),
        None => (text, 0),
    };
    let int_len = mantissa.split('.').next().map_or(0, str::len) as i64;
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let leading = digits.len() - digits.trim_start_matches('0').len();
    let significant = digits
        .trim_start_matches('0')
        .trim_end_matches('0')
        .to_owned();
    (significant, int_len - leading as i64 + exponent)
}

/// True when the canonical form of `value` denotes the same number as `literal`.
fn same_decimal(literal: &str, value: f64) -> bool {
    let mut canonical = Vec::new();
    write_f64(&mut canonical, value).is_ok()
        && decimal_parts(literal) == decimal_parts(&String::from_utf8_lossy(&canonical))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(text: &str) -> String {
        String::from_utf8(canonicalize_text(text.as_bytes()).unwrap()).unwrap()
    }

    fn fail(text: &[u8]) -> ParseError {
        canonicalize_text(text).unwrap_err()
    }

    #[test]
    fn canonicalises_whitespace_order_and_numbers() {
        assert_eq!(
            canon(" { \"b\" : [1.0, -0, 1E2, 0.5e-7], \"a\":\"\\u00e9\\/\" } "),
            "{\"a\":\"é/\",\"b\":[1,0,100,5e-8]}"
        );
        assert_eq!(canon("\"\\ud83d\\ude00\""), "\"😀\"");
        assert_eq!(canon("1e-400"), "0");
        assert_eq!(canon("[]"), "[]");
        assert_eq!(canon("{}"), "{}");
    }

    #[test]
    fn refuses_duplicates_with_position() {
        let e = fail(b"{\n  \"a\": 1,\n  \"a\": 2\n}");
        assert_eq!((e.line, e.column), (3, 3));
        assert_eq!(
            e.to_string(),
            "line 3, column 3: duplicate object key \"a\""
        );
        let e = fail(br#"{"x": {"k": 1, "k": 1}}"#);
        assert_eq!(e.path.to_string(), "$.x");
    }

    #[test]
    fn refuses_what_jcs_cannot_represent() {
        let cases: &[(&[u8], &str)] = &[
            (b"1e400", "too large for an IEEE 754 double"),
            (
                b"9007199254740993",
                "its canonical form would be 9007199254740992",
            ),
            (
                b"-9223372036854775807",
                "its canonical form would be -9223372036854776000",
            ),
            (b"\"\\ud800\"", "lone surrogate"),
            (b"\"\\udc00\\ud800\"", "lone surrogate"),
            (b"\"\xff\"", "invalid UTF-8"),
            (b"[1] x", "text after the JSON value"),
            (b"\xef\xbb\xbf{}", "byte order mark"),
            (b"", "unexpected end of input"),
            (b"01", "malformed number"),
            (b"1.", "malformed number"),
            (b"NaN", "unexpected 'N'"),
            (b"\"a\tb\"", "raw control character U+0009"),
            (b"\"\\x\"", "invalid escape"),
            (b"[1,]", "unexpected ']'"),
            (b"{\"a\" 1}", "expected ':'"),
        ];
        for (text, needle) in cases {
            let e = fail(text);
            assert!(
                e.to_string().contains(needle),
                "{:?}: {e}",
                String::from_utf8_lossy(text)
            );
        }
        assert_eq!(canon("9007199254740991"), "9007199254740991");
        // Beyond 2**53 an integer literal stands when its canonical form is the same number.
        assert_eq!(canon("-9007199254740992"), "-9007199254740992");
        assert_eq!(canon("69555879672194250"), "69555879672194250");
        assert_eq!(canon("100000000000000000000000"), "1e+23");
        assert_eq!(canon("9007199254740993.0"), "9007199254740992");
    }

    #[test]
    fn decimal_parts_ignore_notation() {
        assert_eq!(decimal_parts("120"), ("12".into(), 3));
        assert_eq!(decimal_parts("1.2e+2"), ("12".into(), 3));
        assert_eq!(
            decimal_parts("1e+23"),
            decimal_parts("100000000000000000000000")
        );
        assert_ne!(
            decimal_parts("9007199254740993"),
            decimal_parts("9007199254740992")
        );
    }

    #[test]
    fn columns_count_characters_and_paths_name_values() {
        // A literal is wrong at its first wrong byte (column 17, the `]`), not at its start.
        let e = fail("{\"é\": [true, nul]}".as_bytes());
        assert_eq!((e.line, e.column, e.offset), (1, 17, 17));
        assert_eq!(e.path.to_string(), "$[\"é\"][1]");
        assert_eq!(
            e.to_string(),
            "line 1, column 17 (at $[\"é\"][1]): unexpected ']', expected 'null'"
        );
        // Columns count code points: U+1F600 is one column (two UTF-16 units, four bytes).
        let e = fail("[\"\u{1F600}\" x]".as_bytes());
        assert_eq!((e.column, e.offset), (6, 8));
    }

    fn at(text: &[u8]) -> (&'static str, usize, String) {
        let e = fail(text);
        (e.kind.id(), e.offset, e.path.to_string())
    }

    #[test]
    fn the_first_error_in_the_text_wins() {
        // A repeated name comes before any error later in the same object, however deep.
        assert_eq!(
            at(br#"{"a":1,"a":1e400}"#),
            ("duplicate-key", 7, "$".into())
        );
        assert_eq!(
            at(br#"{"a":1,"a":[[1,]]}"#),
            ("duplicate-key", 7, "$".into())
        );
        assert_eq!(at(br#"{"a":1,"a":1"#), ("duplicate-key", 7, "$".into()));
        // An error before the repeated name wins over it.
        assert_eq!(
            at(br#"{"a":1e400,"a":1}"#),
            ("number-overflow", 5, "$.a".into())
        );
        // The earliest repeat in the text, not the smallest name.
        assert_eq!(
            at(br#"{"b":1,"a":1,"b":2,"a":2}"#),
            ("duplicate-key", 13, "$".into())
        );
        // An inner object's repeat is earlier than the outer's.
        assert_eq!(
            at(br#"{"x":{"k":1,"k":2},"x":3}"#),
            ("duplicate-key", 12, "$.x".into())
        );
        // A high surrogate not followed by a complete low-surrogate escape is lone, even
        // when what follows is a bad escape.
        assert_eq!(at(br#""\ud800\u12G4""#), ("lone-surrogate", 1, "$".into()));
        assert_eq!(at(br#""\ud800\n""#), ("lone-surrogate", 1, "$".into()));
        assert_eq!(at(br#""\ud800\u0041""#), ("lone-surrogate", 1, "$".into()));
        // Inside a token: the first byte that cannot continue a JSON text.
        assert_eq!(at(b"-"), ("syntax", 1, "$".into()));
        assert_eq!(at(b"-x"), ("syntax", 1, "$".into()));
        assert_eq!(at(b"01"), ("syntax", 1, "$".into()));
        assert_eq!(at(b"[-01]"), ("syntax", 3, "$[0]".into()));
        assert_eq!(at(b"1."), ("syntax", 2, "$".into()));
        assert_eq!(at(b"1e+"), ("syntax", 3, "$".into()));
        assert_eq!(at(b"tru"), ("syntax", 3, "$".into()));
        assert_eq!(at(br#""\u12G4""#), ("syntax", 5, "$".into()));
        assert_eq!(at(br#""\u12"#), ("syntax", 5, "$".into()));
        // A missing ':' belongs to the object, the missing value to the member.
        assert_eq!(at(br#"{"a" 1}"#), ("syntax", 5, "$".into()));
        assert_eq!(at(br#"{"a":}"#), ("syntax", 5, "$.a".into()));
        assert_eq!(at(b"[1,]"), ("syntax", 3, "$[1]".into()));
        assert_eq!(at(b"[1 2]"), ("syntax", 3, "$".into()));
        // A 400-digit integer is too large for a double: an overflow, not out of range.
        let big = "9".repeat(400);
        assert_eq!(at(big.as_bytes()), ("number-overflow", 0, "$".into()));
        // Encoding comes before everything, BOM after invalid UTF-8.
        assert_eq!(at(b"[1,]\xff"), ("invalid-utf8", 4, "$".into()));
        assert_eq!(at(b"\xef\xbb\xbf[\xff]"), ("invalid-utf8", 4, "$".into()));
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(canonicalize_text(deep.as_bytes()).is_ok());
        let deeper = "[".repeat(1_000_000);
        let e = fail(deeper.as_bytes());
        assert_eq!(
            e.kind,
            ParseErrorKind::Canonical(CanonicalErrorKind::TooDeep)
        );
    }

    /// The grammar-only mode: `None` for JSON text (however deep, with duplicates or numbers
    /// the parser refuses), else the first byte that cannot continue a JSON text.
    #[test]
    fn the_grammar_mode_finds_where_the_text_stops_being_json() {
        let deep = [b"[".repeat(MAX_DEPTH + 10), b"]".repeat(MAX_DEPTH + 10)].concat();
        for good in [
            &br#"{"a":[1,-2.5e+3,true,null,"x\u00e9"],"b":{}}"#[..],
            b" [[[[]]]] ",
            b"0",
            br#"{"a":1,"a":1e400}"#,
            br#""\ud800""#,
            &deep,
        ] {
            assert_eq!(
                syntax_error(good),
                None,
                "{}",
                String::from_utf8_lossy(good)
            );
        }
        let past_the_limit = [b"[".repeat(MAX_DEPTH + 10), b"x".to_vec()].concat();
        for (bad, at) in [
            (&b"[1,]"[..], 3),
            (b"{\"a\" 1}", 5),
            (b"01", 1),
            (b"1.", 2),
            (b"1e+", 3),
            (b"-", 1),
            (b"[\"\x01\"]", 2),
            (b"[] x", 3),
            (b"[tru]", 1),
            (br#"["\x"]"#, 2),
            (br#"["\u12G4"]"#, 2),
            (b"\"open", 5),
            (b"[1,\xff]", 3),
            (b"\xef\xbb\xbf[]", 0),
            (b"", 0),
            (&past_the_limit, MAX_DEPTH + 10),
        ] {
            assert_eq!(
                syntax_error(bad),
                Some(at),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(nesting(br#"[{"a":"[[[{"}]]"#), 2);
        assert_eq!(nesting(&deep), MAX_DEPTH + 10);
    }
}
