//! The grammar check transcript readers used before the parser had a grammar-only mode, kept
//! as the oracle of a differential test of that mode.

/// The offset of the first byte where `text` stops being JSON text (RFC 8259 grammar only:
/// no depth limit, no duplicate or number-range rules), or `None` if it is JSON text. Runs
/// without recursion, so any depth is checked in constant stack.
fn json_syntax_error(text: &[u8]) -> Option<usize> {
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
fn nesting(json: &[u8]) -> usize {
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

    /// The grammar mode of the parser (`parse::syntax_error`, `parse::nesting`) ranks every
    /// generated bad line exactly as the functions here do: the same offset or `None`, the
    /// same depth.
    #[test]
    fn the_parser_grammar_mode_agrees_with_this_one_on_generated_lines() {
        let seeds: Vec<Vec<u8>> = vec![
            br#"{"a":[1,-2.5e+3,true,null,"x\u00e9\n\"\\\/"],"b":{},"c":[[],{"d":0.5E-7}]}"#
                .to_vec(),
            br#"{"chain":"blake3:00","index":1,"message":{"content":"hi","role":"user"},"type":"message"}"#
                .to_vec(),
            " [ 0 , -0 , 1e2 , \"\u{1F600}\" , false ] ".as_bytes().to_vec(),
            [b"[".repeat(MAX_DEPTH + 3), b"]".repeat(MAX_DEPTH + 3)].concat(),
            b"\"\\ud83d\\ude00\"".to_vec(),
            b"{\"a\":1,\"a\":12345678901234567890}".to_vec(),
        ];
        let alphabet: &[u8] = b"[]{}\":,\\ \t\n-+.0123456789eEtrufalsnu/bx\x01\x1f\xff\xef\xbb\xbf";
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        let mut cases = 0;
        let mut refused = 0;
        for round in 0..60_000 {
            let mut line = seeds[round % seeds.len()].clone();
            for _ in 0..=next(4) {
                let at = next(line.len() + 1);
                match next(4) {
                    0 if at < line.len() => line[at] = alphabet[next(alphabet.len())],
                    1 if at < line.len() => {
                        line.remove(at);
                    }
                    2 => line.truncate(at),
                    _ => line.insert(at, alphabet[next(alphabet.len())]),
                }
            }
            // Random token soup too: short texts built from the alphabet alone.
            let soup: Vec<u8> = (0..next(12))
                .map(|_| alphabet[next(alphabet.len())])
                .collect();
            for text in [&line, &soup] {
                let old = json_syntax_error(text);
                assert_eq!(
                    crate::parse::syntax_error(text),
                    old,
                    "{:?}",
                    String::from_utf8_lossy(text)
                );
                assert_eq!(crate::parse::nesting(text), nesting(text));
                cases += 1;
                refused += usize::from(old.is_some());
            }
        }
        // Most generated lines break the grammar, and some stay JSON text.
        assert!(
            refused > cases / 2 && refused < cases,
            "{refused} of {cases}"
        );
    }
}
