//! Differential test of the number form at every power-of-ten boundary: `write_f64` against
//! `ryu-js` (an independent ECMAScript formatter), both signs, on the double nearest each
//! `10^k`, its neighbours, and digit patterns in every decade, subnormals included.
//!
//! `number.rs` picks ECMAScript's layout from the magnitude alone (no digits read back), so
//! a wrong comparison would show exactly here: at exponents −7/−6, −6/−5, 15/16 and 20/21,
//! where the layouts change, and at every decade between.

use runcontext_core::canonical::write_f64;

fn check(v: f64, failures: &mut Vec<String>) {
    for v in [v, -v] {
        if !v.is_finite() || v == 0.0 {
            continue;
        }
        let mut out = Vec::new();
        write_f64(&mut out, v).unwrap();
        let ours = String::from_utf8(out).unwrap();
        let mut oracle = ryu_js::Buffer::new();
        let expected = oracle.format_finite(v);
        if ours != expected {
            failures.push(format!("{:016x}: {ours} != {expected}", v.to_bits()));
        }
    }
}

/// `v` and the doubles up to `n` steps either side of it (positive, finite `v`).
fn neighbours(v: f64, n: u64) -> impl Iterator<Item = f64> {
    let bits = v.to_bits();
    (bits.saturating_sub(n)..=bits + n).map(f64::from_bits)
}

#[test]
fn every_decade_and_its_neighbours() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for k in -324..=308 {
        for pattern in [
            "1",
            "1.5",
            "2",
            "9.5",
            "9.999999999999999",
            "1.2345678901234567",
        ] {
            let v: f64 = format!("{pattern}e{k}").parse().unwrap();
            for v in neighbours(v, 4) {
                check(v, &mut failures);
                checked += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches: {:?}",
        failures.len(),
        failures
    );
    assert!(checked > 15_000);
}

#[test]
fn the_layout_boundaries_densely() {
    // Around the exponents where the layout changes, many neighbours each way.
    let mut failures = Vec::new();
    for k in [-8, -7, -6, -5, -4, 14, 15, 16, 17, 20, 21, 22] {
        let v: f64 = format!("1e{k}").parse().unwrap();
        for v in neighbours(v, 2_000) {
            check(v, &mut failures);
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches: {:?}",
        failures.len(),
        failures
    );
}

#[test]
fn subnormals_and_the_extremes() {
    let mut failures = Vec::new();
    let min_normal = f64::MIN_POSITIVE;
    let max_subnormal = f64::from_bits(min_normal.to_bits() - 1);
    for v in [f64::from_bits(1), max_subnormal, min_normal, f64::MAX] {
        for v in neighbours(v, 1_000) {
            check(v, &mut failures);
        }
    }
    // Every power of two among the subnormals.
    for shift in 0..52 {
        check(f64::from_bits(1u64 << shift), &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} mismatches: {:?}",
        failures.len(),
        failures
    );
}

#[test]
fn integers_and_the_doubles_between_them() {
    // `.0` is dropped when the double is an integer (number.rs decides that from the double,
    // not from zmij's text): every integer power of two and ten below 1e16 with its
    // neighbours, where doubles turn from fractions (below 2**52) to integers only, and the
    // halves and quarters around them.
    let mut failures = Vec::new();
    let mut bases: Vec<f64> = (0..=54).map(|p| 2f64.powi(p)).collect();
    bases.extend((0..=16).map(|k| 10f64.powi(k)));
    bases.extend([9_007_199_254_740_993.0, 4_503_599_627_370_495.5, 0.5, 0.25]);
    for base in bases {
        for v in neighbours(base, 300) {
            check(v, &mut failures);
        }
        for offset in [0.25, 0.5, 0.75, 1.0, 1.5, 3.0] {
            check(base + offset, &mut failures);
            check(base - offset, &mut failures);
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches: {:?}",
        failures.len(),
        failures
    );
}

#[test]
fn both_zeros_are_zero() {
    for v in [0.0, -0.0] {
        let mut out = Vec::new();
        write_f64(&mut out, v).unwrap();
        assert_eq!(out, b"0");
    }
}
