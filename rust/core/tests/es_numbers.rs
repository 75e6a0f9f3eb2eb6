//! Every double in `docs/vectors/es-numbers.txt` must be written exactly as ECMAScript's
//! `JSON.stringify` wrote it (RFC 8785 § 3.2.2.3). The file comes from
//! `docs/vectors/gen_es_numbers.js`, run under Node; see `docs/vectors/README.md`.

use runcontext_core::canonical::write_f64;

const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/vectors/es-numbers.txt"
);

const MIN_LINES: usize = 100_000;

#[test]
fn write_f64_matches_ecmascript() {
    let text =
        std::fs::read_to_string(VECTORS).unwrap_or_else(|e| panic!("reading {VECTORS}: {e}"));
    let mut count = 0usize;
    let mut mismatches = Vec::new();
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let (hex, expected) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("line {line_no}: expected '<hex> <text>', got {line:?}"));
        assert_eq!(
            hex.len(),
            16,
            "line {line_no}: bit pattern {hex:?} is not 16 hex digits"
        );
        let bits = u64::from_str_radix(hex, 16)
            .unwrap_or_else(|e| panic!("line {line_no}: bad bit pattern {hex:?}: {e}"));
        let v = f64::from_bits(bits);
        count += 1;
        out.clear();
        let got = match write_f64(&mut out, v) {
            Ok(()) => String::from_utf8(out.clone()).expect("write_f64 wrote invalid UTF-8"),
            Err(e) => format!("<error: {e}>"),
        };
        if got != expected {
            mismatches.push(format!(
                "line {line_no}: {hex} ({v:e}): expected {expected}, got {got}"
            ));
        }
    }
    assert!(
        count >= MIN_LINES,
        "{VECTORS} has {count} lines; at least {MIN_LINES} expected"
    );
    if !mismatches.is_empty() {
        let shown: Vec<&str> = mismatches.iter().take(20).map(String::as_str).collect();
        panic!(
            "{} of {count} doubles are not written as ECMAScript writes them; the first {}:\n{}",
            mismatches.len(),
            shown.len(),
            shown.join("\n")
        );
    }
}
