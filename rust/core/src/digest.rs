//! Digests: `blake3:` + lowercase hex of BLAKE3-256.
//!
//! The prefix names the algorithm, so a later format can change it without any digest
//! ever being ambiguous.

use crate::canonical::CanonicalError;
use crate::value::Value;

/// Every digest starts with this.
pub const DIGEST_PREFIX: &str = "blake3:";

/// `blake3:` + hex of BLAKE3-256 of `data`.
pub fn digest_bytes(data: &[u8]) -> String {
    let hash = blake3::hash(data);
    let mut out = String::with_capacity(DIGEST_PREFIX.len() + 64);
    out.push_str(DIGEST_PREFIX);
    out.push_str(hash.to_hex().as_str());
    out
}

/// The digest of the canonical JSON of `value`.
pub fn digest(value: &Value) -> Result<String, CanonicalError> {
    Ok(digest_bytes(&value.to_canonical()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_matches_the_blake3_reference() {
        // BLAKE3 of the empty input, from the BLAKE3 specification's test vectors.
        assert_eq!(
            digest_bytes(b""),
            "blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
        );
    }

    #[test]
    fn digest_hashes_the_canonical_bytes() {
        let v = Value::Object(vec![
            ("b".into(), Value::Null),
            ("a".into(), Value::Bool(true)),
        ]);
        assert_eq!(digest(&v).unwrap(), digest_bytes(br#"{"a":true,"b":null}"#));
    }
}
