//! The JSON grammar alone, to rank a refused line's problems in the table's order.

/// The offset of the first byte where `text` stops being JSON text (RFC 8259 grammar only:
/// no depth limit, no duplicate or number-range rules), or `None` if it is JSON text. Runs
/// without recursion, so any depth is checked in constant stack.
pub(super) fn json_syntax_error(text: &[u8]) -> Option<usize> {
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
    let ws = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    loop {
        while i < n && ws(text[i]) {
            i += 1;
        }
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
                    match skip_string(text, i) {
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
                    b'"' => match skip_string(text, i) {
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
                    b'-' | b'0'..=b'9' => match skip_number(text, i) {
                        Ok(end) => i = end,
                        Err(at) => return Some(at),
                    },
                    _ => return Some(i),
                }
                want = Want::CommaOrClose;
            }
        }
    }
}

/// The offset after the string starting at `start` (a `"`), or where it breaks the grammar.
fn skip_string(text: &[u8], start: usize) -> Result<usize, usize> {
    let mut i = start + 1;
    while i < text.len() {
        match text[i] {
            b'"' => return Ok(i + 1),
            b'\\' => match text.get(i + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                Some(b'u') => {
                    let hex = text.get(i + 2..i + 6);
                    if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                        return Err(i);
                    }
                    i += 6;
                }
                _ => return Err(i),
            },
            0..=0x1f => return Err(i),
            _ => i += 1,
        }
    }
    Err(text.len())
}

/// The offset after the number starting at `start`, by the JSON number grammar.
fn skip_number(text: &[u8], start: usize) -> Result<usize, usize> {
    let digits = |from: usize| {
        from + text[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut i = start;
    if text[i] == b'-' {
        i += 1;
    }
    match text.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(i),
        _ => return Err(i),
    }
    if text.get(i) == Some(&b'.') {
        let end = digits(i + 1);
        if end == i + 1 {
            return Err(i + 1);
        }
        i = end;
    }
    if matches!(text.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(text.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return Err(i);
        }
        i = end;
    }
    Ok(i)
}

/// The nesting depth of canonical JSON text (strings skipped).
pub(super) fn nesting(json: &[u8]) -> usize {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::MAX_DEPTH;
    use crate::transcript::{ErrorKind, Transcript};

    #[test]
    fn the_grammar_check_agrees_on_valid_text_and_finds_syntax_past_a_depth_error() {
        for good in [
            &br#"{"a":[1,-2.5e+3,true,null,"x\u00e9"],"b":{}}"#[..],
            b"[[[[]]]]",
            b"0",
        ] {
            assert_eq!(
                json_syntax_error(good),
                None,
                "{}",
                String::from_utf8_lossy(good)
            );
        }
        for bad in [
            &b"[1,]"[..],
            b"{\"a\" 1}",
            b"01",
            b"1.",
            b"-",
            b"[\"\x01\"]",
            b"[] x",
        ] {
            assert!(
                json_syntax_error(bad).is_some(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let deep = "[".repeat(MAX_DEPTH + 10);
        let mut t = Transcript::new();
        let error = t.read_line(deep.as_bytes()).unwrap_err();
        assert_eq!(
            error.kind,
            ErrorKind::NotJson,
            "unclosed brackets break the grammar"
        );
    }
}
