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

/// How many bytes [`write_es_number`] stores at its destination, whatever the number: zmij's
/// buffer (24 bytes, which its digit stores may fill past the number's end) and the fixed-size
/// stores of the plain layouts from an exponent form (42 bytes), rounded up.
pub(crate) const F64_STORE: usize = 48;

/// The longest text [`write_es_number`] writes: `-0.00000` and seventeen digits.
pub(crate) const F64_TEXT_MAX: usize = 25;

// zmij writes into a `zmij::Buffer` only, so the output's spare capacity is viewed as one
// (as orjson writes its floats). zmij 1's Buffer is one field, `[MaybeUninit<u8>; 24]`; a
// struct of that size and alignment 1 is that array alone, at offset 0, so its text starts
// where the buffer does. zmij is pinned to the version whose source says so (Cargo.toml);
// a zmij whose Buffer changes size or alignment fails to build here.
const _: () = assert!(
    std::mem::size_of::<zmij::Buffer>() == 24
        && std::mem::size_of::<zmij::Buffer>() <= F64_STORE
        && std::mem::align_of::<zmij::Buffer>() == 1
);

/// The doubles nearest `1e-6`, `1e-5`, `1e16` and `1e21`, as bits: a positive double's bits
/// order as it does, so each range of magnitudes below is a range of bits.
const E_6: u64 = 1e-6f64.to_bits();
const E_5: u64 = 1e-5f64.to_bits();
const E16: u64 = 1e16f64.to_bits();
const E21: u64 = 1e21f64.to_bits();

/// Writes the finite `v` in ECMAScript form at `dst` and returns its length (at most
/// [`F64_TEXT_MAX`]); [`F64_STORE`] bytes may be stored, those past the length being
/// scratch ([`crate::canonical::write_f64`] and [`crate::canonical::write_float_run`] are
/// this, checked).
///
/// zmij writes its text straight into the output (formatting on the stack, then
/// copying, cost a float a fifth of its instructions), and the layout is corrected from `v`
/// alone, not from the text: reading back the bytes zmij had just stored, which the
/// processor cannot forward from its narrower stores, made each number wait for its text to
/// reach the cache before the next could be placed (payloads (c) and (d) of
/// `benches/bench_canonical.py`). Only the two layouts that differ from zmij's in more than a `.0` (exponents −6 and 16 to 20) are
/// rewritten, in place.
///
/// # Safety
/// `v` must be finite, and [`F64_STORE`] bytes writable at `dst`.
#[inline(always)]
pub(crate) unsafe fn write_es_number(dst: *mut u8, v: f64) -> usize {
    // -0 + 0 is +0 (rounding to nearest), any other `v` is unchanged: both zeros are then
    // zmij's `0.0`, which becomes ECMAScript's `0` as any integer's text does below.
    let v = v + 0.0;
    // SAFETY: F64_STORE (at least the size of a zmij::Buffer, whose alignment is 1: the
    // assertion above) bytes are writable at `dst`, and a Buffer is bytes that may be
    // uninitialised, so any such bytes are a valid Buffer. zmij writes only within it and
    // returns the text it wrote there, at its start (`format_finite` slices from offset 0).
    let zmij_len = unsafe { (*dst.cast::<zmij::Buffer>()).format_finite(v).len() };
    let magnitude = v.abs();
    // Below 1e16 zmij's plain form ends in `.0` exactly when `v` is an integer (which
    // ECMAScript does not write): the shortest digits of an integer below 2**53 are its own
    // or fewer, with zeros after them, and those of any other double cannot be an integer,
    // which would be a double of its own. Below 1e-5 (an exponent form) no double but zero
    // is an integer. Branchless: on payload (d) the exponents are random.
    let plain = magnitude < 1e16;
    let clamped = if plain { magnitude } else { 1e16 };
    // SAFETY: `clamped` is in [0, 1e16], well within i64.
    let integer = unsafe { clamped.to_int_unchecked::<i64>() } as f64 == clamped;
    let n = zmij_len - 2 * usize::from(plain & integer);
    debug_assert_eq!(
        plain & integer,
        // SAFETY: zmij wrote `zmij_len` bytes at `dst`.
        unsafe { std::slice::from_raw_parts(dst, zmij_len) }.ends_with(b".0")
    );
    let bits = magnitude.to_bits();
    if (bits.wrapping_sub(E_6) < E_5 - E_6) | (bits.wrapping_sub(E16) < E21 - E16) {
        // SAFETY: the caller's promise; zmij's text is the first `n` bytes at `dst`.
        return unsafe { plain_from_exponent_form(dst, n, v.is_sign_negative(), magnitude) };
    }
    n
}

/// Sixteen bytes copied as they are, some perhaps never written.
type Scratch16 = std::mem::MaybeUninit<[u8; 16]>;

/// Rewrites zmij's `[-]d[.ddd]e-6` or `[-]d[.ddd]e+EE` (EE in 16..=20), the first `n` bytes at
/// `dst`, in plain decimal, in place, as ECMA-262 § 6.1.6.1.20 steps 7 and 9 lay out those
/// exponents, and returns its length. Everything is read before anything is stored; the
/// stores have fixed sizes (no call to memcpy for a few bytes: a sixth of the numbers of
/// payload (d) take this way), and the length is reckoned from `n` and the magnitude, not
/// from the text.
///
/// # Safety
/// As [`write_es_number`]'s, and `n` bytes of zmij's text of `±magnitude` at `dst`.
#[inline(never)]
unsafe fn plain_from_exponent_form(
    dst: *mut u8,
    n: usize,
    negative: bool,
    magnitude: f64,
) -> usize {
    let negative = usize::from(negative);
    let small = magnitude < 1.0;
    // `d` or `d.ddd` before the exponent (`e-6` or `e+EE`): the first digit, then at most
    // sixteen after the point, from `rest` on.
    let mantissa = n - negative - if small { 3 } else { 4 };
    let rest = negative + if mantissa > 1 { 2 } else { 1 };
    let rest_len = mantissa.saturating_sub(2);
    // SAFETY: F64_STORE bytes are writable at `dst` and the first `n` are zmij's text. The
    // reads: the first digit, and 16 bytes from `rest` <= 3 (those past the text are
    // scratch, copied as maybe-uninitialised bytes and never counted in the length). The
    // stores, after them: the sign stays; then (small) eight bytes and sixteen after them,
    // ending 25 bytes past `dst`, or (large) one digit, sixteen bytes after it and 24 zeros
    // from the end of the digits, ending at most 1 + 1 + 16 + 24 = 42 bytes past `dst`.
    unsafe {
        let p = dst.add(negative);
        let first = *p;
        let digits = dst.add(rest).cast::<Scratch16>().read_unaligned();
        let written = if small {
            // 0.00000ddd: the first significant digit is the sixth after the point.
            p.cast::<[u8; 8]>().write_unaligned(*b"0.00000?");
            *p.add(7) = first;
            p.add(8).cast::<Scratch16>().write_unaligned(digits);
            8 + rest_len
        } else {
            // An integer of e + 1 digits: the significant ones, then zeros (at most 17
            // digits are significant, so e >= 16 leaves no fraction). The exponent, as the
            // layouts themselves, is decided by the magnitude.
            let e = 16
                + usize::from(magnitude >= 1e17)
                + usize::from(magnitude >= 1e18)
                + usize::from(magnitude >= 1e19)
                + usize::from(magnitude >= 1e20);
            *p = first;
            p.add(1).cast::<Scratch16>().write_unaligned(digits);
            std::ptr::write_bytes(p.add(1 + rest_len), b'0', 24);
            1 + e
        };
        negative + written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn es(v: f64) -> String {
        let mut out = [0u8; F64_STORE];
        // SAFETY: F64_STORE bytes at the start of `out`, and `v` is finite.
        let n = unsafe { write_es_number(out.as_mut_ptr(), v) };
        String::from_utf8(out[..n].to_vec()).unwrap()
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
        assert_eq!(es(0.0), "0");
        assert_eq!(es(-0.0), "0");
        assert_eq!(es(0.1 + 0.2), "0.30000000000000004");
    }
}
