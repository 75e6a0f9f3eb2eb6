//! The record chain and the digest form it is written in.

use super::DIGEST_LEN;
use crate::digest::DIGEST_PREFIX;

/// `"blake3:"` and 64 lowercase hex digits.
pub fn is_digest(s: &str) -> bool {
    s.len() == DIGEST_LEN
        && s.starts_with(DIGEST_PREFIX)
        && s[DIGEST_PREFIX.len()..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `blake3:` + hex(BLAKE3(previous chain ‖ body)).
pub fn chain_of(previous: &str, body: &[u8]) -> String {
    format!("{DIGEST_PREFIX}{}", chain_hash(previous, &[body]).to_hex())
}

pub(super) fn chain_hash(previous: &str, body: &[&[u8]]) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(previous.as_bytes());
    for part in body {
        hasher.update(part);
    }
    hasher.finalize()
}
