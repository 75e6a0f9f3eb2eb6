//! ECMAScript's `Number::toString` for doubles, the number form of RFC 8785 (§ 3.2.2.3).
//!
//! The shortest digits that read back to the same double come from `zmij` (Schubfach, the
//! closest shortest candidate as ECMA-262 requires); the layout of ECMA-262
//! § 6.1.6.1.20 is applied here where zmij's differs. `ryu-js` was the first choice; zmij
//! writes digits about 30% faster, which is most of what an array of numbers costs
//! (`benches/bench_canonical.py`, cases c and d). Checked against 122,049 outputs of Node's
//! `JSON.stringify` (`docs/vectors/es-numbers.txt`), against `ryu-js` on random doubles and on
//! every power-of-ten boundary (`tests/number_oracle.rs`, `tests/number_boundaries.rs`).
//!
//! Which layout applies depends on the decimal exponent `e` of the shortest digits
//! (`d.ddd × 10^e`), and that is decided by the magnitude alone: the shortest digits of a
//! double are at least `10^k` exactly when the double is at least the double nearest `10^k`
//! (whose shortest digits are `1ek`, and shortest digits grow with the double), which is
//! what the literal `1ek` denotes. So no digits need to be read back:
//!
//! | `e` | ECMAScript | zmij | here |
//! |---|---|---|---|
//! | ≤ −7, ≥ 21 | `1.5e-7`, `1e+21` | the same | kept |
//! | −5 … 15 | `0.00001`, `42`, `1.5` | the same, `42.0` for integers | kept, `.0` dropped |
//! | −6 | `0.0000015` | `1.5e-6` | laid out from zmij's digits |
//! | 16 … 20 | `15000000000000000` | `1.5e+16` | laid out from zmij's digits |

use crate::canonical::Output;

/// Room a number needs past the output's length: zmij's buffer (24 bytes, which its digit
/// stores may fill past the number's end) rounded up, and the widest text (25 bytes,
/// `-0.00000` and seventeen digits).
pub(crate) const NUMBER_ROOM: usize = 32;

// zmij writes into a `zmij::Buffer` only, so the output's spare capacity is viewed as one
// (as orjson writes its floats). zmij 1's Buffer is one field, `[MaybeUninit<u8>; 24]`; a
// struct of that size and alignment 1 is that array alone, at offset 0, so its text starts
// where the buffer does. zmij is pinned to the version whose source says so (Cargo.toml);
// a zmij whose Buffer changes size or alignment fails to build here.
const _: () = assert!(
    std::mem::size_of::<zmij::Buffer>() == 24
        && std::mem::size_of::<zmij::Buffer>() <= NUMBER_ROOM
        && std::mem::align_of::<zmij::Buffer>() == 1
);

/// Appends `v`, which must be finite and non-zero, in ECMAScript form.
///
/// zmij writes its text straight into the output (issue 13: formatting on the stack, then
/// copying, cost a float a fifth of its instructions), and the layout is corrected there:
/// dropping a `.0` is a shorter length; only the two layouts that differ in more than that
/// (exponents −6 and 16 to 20) are rewritten, from a copy.
#[inline(always)]
pub(crate) fn write_es_number<O: Output>(out: &mut O, v: f64) {
    out.reserve(NUMBER_ROOM);
    let len = out.len();
    // SAFETY: NUMBER_ROOM (at least the size of a zmij::Buffer, whose alignment is 1: the
    // assertion above) bytes of capacity are free past `len`, and a Buffer is bytes that may
    // be uninitialised, so any such bytes are a valid Buffer. zmij writes only within it and
    // returns the text it wrote there, at its start (`format_finite` slices from offset 0).
    let n = unsafe {
        let buffer = &mut *out.as_mut_ptr().add(len).cast::<zmij::Buffer>();
        buffer.format_finite(v).len()
    };
    let magnitude = v.abs();
    let n = if (1e-5..1e16).contains(&magnitude) {
        // zmij's plain form, with `.0` after an integer, which ECMAScript does not write.
        // SAFETY: zmij wrote `n` >= 3 bytes at `len` (a digit, a point and a digit at least).
        let tail = unsafe { out.as_mut_ptr().add(len + n - 2).cast::<[u8; 2]>().read() };
        if tail == *b".0" {
            n - 2
        } else {
            n
        }
    } else if !(1e-6..1e21).contains(&magnitude) {
        n
    } else {
        // SAFETY: the `n` bytes at `len` are zmij's text, just written.
        let text = unsafe { std::slice::from_raw_parts(out.as_mut_ptr().add(len), n) };
        let mut copy = [0u8; NUMBER_ROOM];
        copy[..n].copy_from_slice(text);
        return write_plain_from_exponent_form(out, &copy, n, magnitude < 1.0);
    };
    // SAFETY: the first `n` bytes at `len` are the number's text, written by zmij.
    unsafe { out.set_len(len + n) };
}

/// Lays out zmij's `[-]d[.ddd]e-6` (`small`), the first `n` bytes of `text`, or
/// `[-]d[.ddd]e+EE` (EE in 16..=20) in plain decimal, as ECMA-262 § 6.1.6.1.20 steps 7 and
/// 9 do for those exponents. Fixed-size stores, as write_es_number's (no call to memcpy for
/// a few bytes: a sixth of the numbers of payload (d) take this way).
#[inline(never)]
fn write_plain_from_exponent_form<O: Output>(
    out: &mut O,
    text: &[u8; NUMBER_ROOM],
    n: usize,
    small: bool,
) {
    let negative = usize::from(text[0] == b'-');
    // `d` or `d.ddd` before the exponent (`e-6` or `e+EE`): the first digit, then at most
    // sixteen after the point, from `rest` on.
    let mantissa = n - negative - if small { 3 } else { 4 };
    let first = text[negative];
    let rest = negative + if mantissa > 1 { 2 } else { 1 };
    let rest_len = mantissa.saturating_sub(2);
    // The widest stores below end 41 bytes past the length.
    out.reserve(48);
    let len = out.len();
    // SAFETY: 48 bytes of capacity are free past `len`; the 16-byte copy reads
    // `text[rest..rest + 16]`, within its 32 bytes (rest <= 3). The stores: a sign byte,
    // then (small) eight bytes and sixteen after them, ending 25 bytes past `len`, or
    // (large) one digit, sixteen bytes after it and 24 zeros from the end of the digits,
    // ending at most 1 + 1 + 15 + 24 = 41 bytes past `len`. `set_len` covers the sign, the
    // digits and the zeros of the plain form, all written.
    unsafe {
        let dst = out.as_mut_ptr().add(len);
        *dst = b'-';
        let p = dst.add(negative);
        let digits = text.as_ptr().add(rest);
        let written = if small {
            // 0.00000ddd: the first significant digit is the sixth after the point.
            p.cast::<[u8; 8]>().write_unaligned(*b"0.00000?");
            *p.add(7) = first;
            std::ptr::copy_nonoverlapping(digits, p.add(8), 16);
            8 + rest_len
        } else {
            // An integer of e + 1 digits: the significant ones, then zeros (at most 17
            // digits are significant, so e >= 16 leaves no fraction).
            let exponent = &text[n - 2..n];
            let e = usize::from(exponent[0] - b'0') * 10 + usize::from(exponent[1] - b'0');
            *p = first;
            std::ptr::copy_nonoverlapping(digits, p.add(1), 16);
            std::ptr::write_bytes(p.add(1 + rest_len), b'0', 24);
            1 + e
        };
        out.set_len(len + negative + written);
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
        assert_eq!(es(-1.5e20), "-150000000000000000000");
        assert_eq!(es(123456789012345680.0), "123456789012345680");
        assert_eq!(es(1.5), "1.5");
        assert_eq!(es(-0.5), "-0.5");
        assert_eq!(es(1e-6), "0.000001");
        assert_eq!(es(-1.25e-6), "-0.00000125");
        assert_eq!(es(2.5e-5), "0.000025");
        assert_eq!(es(1e-7), "1e-7");
        assert_eq!(es(1.23e-18), "1.23e-18");
        assert_eq!(es(5e-324), "5e-324");
        assert_eq!(es(-1.7976931348623157e308), "-1.7976931348623157e+308");
        assert_eq!(es(9007199254740992.0), "9007199254740992");
        assert_eq!(es(1e16), "10000000000000000");
        assert_eq!(es(1e15), "1000000000000000");
        assert_eq!(es(-42.0), "-42");
        assert_eq!(es(0.1 + 0.2), "0.30000000000000004");
    }
}
