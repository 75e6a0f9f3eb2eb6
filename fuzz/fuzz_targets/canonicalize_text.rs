//! Any bytes: canonicalize_text never panics, and its output is a fixed point.
#![no_main]

use libfuzzer_sys::fuzz_target;
use runcontext_core::canonicalize_text;

fuzz_target!(|data: &[u8]| {
    if let Ok(canonical) = canonicalize_text(data) {
        let again = canonicalize_text(&canonical).expect("canonical output must parse");
        assert_eq!(again, canonical, "canonicalising canonical output changed it");
    }
});
