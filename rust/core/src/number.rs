//! ECMAScript's `Number::toString` for doubles, the number form of RFC 8785 (§ 3.2.2.3).
//!
//! The shortest digits that read back to the same double come from `zmij` (Schubfach, the
//! closest shortest candidate as ECMA-262 requires); the layout of ECMA-262
//! § 6.1.6.1.20 is applied here where zmij's differs (exponent notation, and `.0` on
//! integral values). `ryu-js` was the first choice; zmij writes digits about 30% faster, which
//! is most of what an array of numbers costs (`benches/bench_canonical.py`, case c). Checked against 122,049 outputs of Node's
//! `JSON.stringify` (`docs/vectors/es-numbers.txt`).

/// Appends `v`, which must be finite and non-zero, in ECMAScript form.
pub(crate) fn write_es_number(out: &mut Vec<u8>, v: f64) {
    let mut buffer = zmij::Buffer::new();
    let text = buffer.format_finite(v).as_bytes();
    // An exponent, when zmij writes one, is within the last five bytes (`e-7`, `e+308`).
    if !text[text.len().saturating_sub(5)..].contains(&b'e') {
        // zmij writes plain notation only in a range where ECMAScript does too, with the
        // same digits: the text stands, but for the `.0` zmij gives integral values.
        out.extend_from_slice(text.strip_suffix(b".0").unwrap_or(text));
        return;
    }
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let (digits, n) = Decimal::parse(text);
    if negative {
        out.push(b'-');
    }
    digits.write_es(out, n);
}

/// Up to 17 significant digits `d1 d2 … dk` (no leading or trailing zeros) of a number
/// `0.d1…dk × 10^n`.
struct Decimal {
    digits: [u8; 24],
    len: usize,
}

impl Decimal {
    /// Reads zmij's output (`123.45`, `0.000025`, `1.0`, `1.5e+300`, `5e-324`) into its
    /// significant digits and the position `n` of the decimal point.
    fn parse(text: &[u8]) -> (Decimal, i32) {
        let mut decimal = Decimal {
            digits: [0; 24],
            len: 0,
        };
        let (mantissa, exponent) = match text.iter().position(|&b| b == b'e') {
            Some(e) => (&text[..e], parse_exponent(&text[e + 1..])),
            None => (text, 0),
        };
        let int_len = mantissa
            .iter()
            .position(|&b| b == b'.')
            .unwrap_or(mantissa.len());
        let mut leading_zeros = 0i32;
        for &b in mantissa {
            if b == b'.' {
                continue;
            }
            if decimal.len == 0 && b == b'0' {
                leading_zeros += 1;
                continue;
            }
            if decimal.len < decimal.digits.len() {
                decimal.digits[decimal.len] = b;
                decimal.len += 1;
            }
        }
        while decimal.len > 1 && decimal.digits[decimal.len - 1] == b'0' {
            decimal.len -= 1;
        }
        (decimal, int_len as i32 - leading_zeros + exponent)
    }

    /// ECMA-262 § 6.1.6.1.20, steps 6–10, for k digits and decimal point position n.
    fn write_es(&self, out: &mut Vec<u8>, n: i32) {
        let digits = &self.digits[..self.len];
        let k = self.len as i32;
        if k <= n && n <= 21 {
            out.extend_from_slice(digits);
            out.resize(out.len() + (n - k) as usize, b'0');
        } else if 0 < n && n <= 21 {
            out.extend_from_slice(&digits[..n as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[n as usize..]);
        } else if -6 < n && n <= 0 {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + (-n) as usize, b'0');
            out.extend_from_slice(digits);
        } else {
            out.push(digits[0]);
            if k > 1 {
                out.push(b'.');
                out.extend_from_slice(&digits[1..]);
            }
            out.push(b'e');
            out.push(if n > 0 { b'+' } else { b'-' });
            let mut buffer = itoa::Buffer::new();
            out.extend_from_slice(buffer.format((n - 1).unsigned_abs()).as_bytes());
        }
    }
}

fn parse_exponent(text: &[u8]) -> i32 {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    let magnitude = digits
        .iter()
        .fold(0i32, |acc, &d| acc * 10 + i32::from(d - b'0'));
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn es(v: f64) -> String {
        let mut out = Vec::new();
        write_es_number(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn layouts_of_ecma_262() {
        assert_eq!(es(1e21), "1e+21");
        assert_eq!(es(1e20), "100000000000000000000");
        assert_eq!(es(123456789012345680.0), "123456789012345680");
        assert_eq!(es(1.5), "1.5");
        assert_eq!(es(-0.5), "-0.5");
        assert_eq!(es(1e-6), "0.000001");
        assert_eq!(es(2.5e-5), "0.000025");
        assert_eq!(es(1e-7), "1e-7");
        assert_eq!(es(1.23e-18), "1.23e-18");
        assert_eq!(es(5e-324), "5e-324");
        assert_eq!(es(-1.7976931348623157e308), "-1.7976931348623157e+308");
        assert_eq!(es(9007199254740992.0), "9007199254740992");
        assert_eq!(es(1e16), "10000000000000000");
        assert_eq!(es(-42.0), "-42");
        assert_eq!(es(0.1 + 0.2), "0.30000000000000004");
    }
}
