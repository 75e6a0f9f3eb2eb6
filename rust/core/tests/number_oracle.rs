//! Differential test of the number form: `write_f64` (zmij's digits, our ECMAScript layout)
//! against `ryu-js` (an independent ECMAScript formatter) on random doubles of every kind.

use runcontext_core::canonical::write_f64;

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn agrees_with_ryu_js_on_random_doubles() {
    let mut state = 0x5EED_u64;
    let mut out = Vec::new();
    let mut checked = 0;
    for i in 0..1_000_000u32 {
        let bits = splitmix64(&mut state);
        // Alternate raw bit patterns with values of human scale and integral values.
        let v = match i % 3 {
            0 => f64::from_bits(bits),
            1 => (bits % 10_000_000_000) as f64 / 10f64.powi((bits >> 40) as i32 % 12),
            _ => ((bits >> 11) as f64) * if bits & 1 == 0 { 1.0 } else { -1.0 },
        };
        if !v.is_finite() || v == 0.0 {
            continue;
        }
        out.clear();
        write_f64(&mut out, v).unwrap();
        let mut oracle = ryu_js::Buffer::new();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            oracle.format_finite(v),
            "bits {:016x}",
            v.to_bits()
        );
        checked += 1;
    }
    assert!(checked > 990_000);
}
