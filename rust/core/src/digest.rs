//! Digests: `blake3:` + lowercase hex of BLAKE3-256, and keyed digests: `blake3-keyed:` +
//! lowercase hex of BLAKE3-256 in keyed mode, over the same bytes.
//!
//! The prefix names the algorithm (and the mode), so a later format can change it without
//! any digest ever being ambiguous, and a keyed digest is never mistaken for a plain one.
//!
//! Besides hashing a buffer, this module hashes canonical JSON *as it is written*
//! ([`JsonHasher`]): a string is escaped a block at a time into a small buffer that is fed to
//! the hasher, so the digest of a 4 MB text needs no 4 MB copy of it (the copies, and the page
//! faults of their fresh allocations, would be most of RunContext's cost).

use std::cell::RefCell;

use crate::canonical::{write_str, CanonicalError};
use crate::value::Value;

/// Every digest starts with this.
pub const DIGEST_PREFIX: &str = "blake3:";

/// Every keyed digest starts with this (FORMAT.md § 2.1).
pub const KEYED_DIGEST_PREFIX: &str = "blake3-keyed:";

/// The length of a key, in bytes: BLAKE3's keyed mode takes exactly 32.
pub const KEY_LEN: usize = blake3::KEY_LEN;

/// Below this many bytes, [`digest_bytes_parallel`] hashes on the calling thread alone:
/// blake3's own guidance is that Rayon's fork-join costs more than it saves under 128 KiB on
/// x86_64 (`benches/bench_threads.py` measures where it pays on this machine).
pub const PARALLEL_THRESHOLD: usize = 128 * 1024;

/// How many bytes of a string are escaped into the buffer before it is hashed: large enough
/// that blake3 hashes whole runs of 1 KiB chunks with its widest SIMD, small enough that the
/// buffer (at most six bytes per input byte, when every byte is a control character) stays in
/// the L2 cache.
const BLOCK: usize = 16 * 1024;

/// `blake3:` + the 64 hex digits of a BLAKE3-256 hash.
pub fn format_digest(hash: &[u8; 32]) -> String {
    let mut out = String::with_capacity(DIGEST_PREFIX.len() + 64);
    out.push_str(DIGEST_PREFIX);
    out.push_str(blake3::Hash::from_bytes(*hash).to_hex().as_str());
    out
}

/// `blake3:` + hex of BLAKE3-256 of `data`.
pub fn digest_bytes(data: &[u8]) -> String {
    format_digest(blake3::hash(data).as_bytes())
}

/// `blake3-keyed:` + the 64 hex digits of a keyed BLAKE3-256 hash.
pub fn format_keyed_digest(hash: &[u8; 32]) -> String {
    let mut out = String::with_capacity(KEYED_DIGEST_PREFIX.len() + 64);
    out.push_str(KEYED_DIGEST_PREFIX);
    out.push_str(blake3::Hash::from_bytes(*hash).to_hex().as_str());
    out
}

/// `blake3-keyed:` + hex of BLAKE3-256 of `data` in keyed mode with `key`: the keyed form of
/// [`digest_bytes`], over the same bytes.
pub fn keyed_digest_bytes(key: &[u8; KEY_LEN], data: &[u8]) -> String {
    format_keyed_digest(blake3::keyed_hash(key, data).as_bytes())
}

/// [`keyed_digest_bytes`] on Rayon's thread pool for inputs of at least
/// [`PARALLEL_THRESHOLD`] bytes; the same digest.
#[cfg(feature = "rayon")]
pub fn keyed_digest_bytes_parallel(key: &[u8; KEY_LEN], data: &[u8]) -> String {
    if data.len() < PARALLEL_THRESHOLD {
        return keyed_digest_bytes(key, data);
    }
    let mut hasher = blake3::Hasher::new_keyed(key);
    hasher.update_rayon(data);
    format_keyed_digest(hasher.finalize().as_bytes())
}

/// [`digest_bytes`] on Rayon's thread pool (as many threads as cores, or
/// `RAYON_NUM_THREADS`), for inputs of at least [`PARALLEL_THRESHOLD`] bytes; the same digest.
#[cfg(feature = "rayon")]
pub fn digest_bytes_parallel(data: &[u8]) -> String {
    if data.len() < PARALLEL_THRESHOLD {
        return digest_bytes(data);
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update_rayon(data);
    format_digest(hasher.finalize().as_bytes())
}

/// The digest of the canonical JSON of `value`.
pub fn digest(value: &Value) -> Result<String, CanonicalError> {
    Ok(digest_bytes(&value.to_canonical()?))
}

/// The keyed digest of the canonical JSON of `value`: the keyed form of [`digest`], over the
/// same canonical bytes.
pub fn keyed_digest(key: &[u8; KEY_LEN], value: &Value) -> Result<String, CanonicalError> {
    Ok(keyed_digest_bytes(key, &value.to_canonical()?))
}

/// The digest of the canonical JSON of the string `text` (its JSON string form), written
/// straight into the hasher: `digest_json_str(s) == digest(&Value::String(s))`.
pub fn digest_json_str(text: &str) -> String {
    let mut hasher = JsonHasher::new();
    hasher.string(text);
    format_digest(&hasher.finalize())
}

thread_local! {
    /// The escape buffer of this thread, kept between calls (at most 6 × [`BLOCK`] + 2 bytes).
    static ESCAPED: RefCell<Vec<u8>> = RefCell::new(Vec::with_capacity(BLOCK + 64));
}

/// Calls `each` with the JSON string form of `text` (quotes and escapes as
/// [`write_str`] writes them), in pieces whose concatenation is that form. Blocks of about
/// [`BLOCK`] bytes are escaped one at a time into a reused buffer; escapes are single ASCII
/// bytes, so escaping a string block by block (cut at character boundaries) gives the same
/// bytes as escaping it whole.
pub(crate) fn json_string_pieces(text: &str, each: &mut dyn FnMut(&[u8])) {
    let mut run = |buffer: &mut Vec<u8>| {
        each(b"\"");
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = rest.len().min(BLOCK);
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            let (block, after) = rest.split_at(cut);
            buffer.clear();
            write_str(buffer, block);
            // write_str quotes what it writes; the quotes of each block are dropped here.
            each(&buffer[1..buffer.len() - 1]);
            rest = after;
        }
        each(b"\"");
    };
    ESCAPED.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buffer) => {
            run(&mut buffer);
            if buffer.capacity() > 8 * BLOCK {
                *buffer = Vec::with_capacity(BLOCK + 64);
            }
        }
        // Only if `each` re-entered this function on the same thread; a fresh buffer is
        // correct there too.
        Err(_) => run(&mut Vec::new()),
    });
}

/// How many bytes a [`JsonHasher`] hands blake3 at a time. blake3 hashes a run of 1 KiB
/// chunks with its widest SIMD only when the run starts at a multiple of its own length in
/// the stream; pieces of arbitrary lengths (a quote, then a block of text) leave every later
/// update misaligned and hashed one chunk at a time, 2.5 times slower (measured: 0.42 ns/B
/// against 0.17 for a 4 MB string). Buffering to whole, aligned blocks keeps the fast path.
const HASH_BLOCK: usize = 16 * 1024;

/// Strings up to this many bytes are escaped by [`JsonHasher::string`] into its pending block.
const SHORT: usize = 128;

/// Room [`write_str`] may reserve past a short string's longest form (its `SLACK`), at most.
const SHORT_SLACK: usize = 64;

/// A BLAKE3 hasher fed canonical JSON a piece at a time, in aligned blocks of
/// [`HASH_BLOCK`] bytes.
pub(crate) struct JsonHasher {
    hasher: blake3::Hasher,
    /// Fewer than [`HASH_BLOCK`] bytes not yet hashed; the bytes before them number a
    /// multiple of [`HASH_BLOCK`].
    pending: Vec<u8>,
}

impl JsonHasher {
    pub(crate) fn new() -> Self {
        Self::with(blake3::Hasher::new())
    }

    /// In keyed mode, with `key` (`None`: the plain hash, as [`JsonHasher::new`]).
    pub(crate) fn new_keyed(key: Option<&[u8; KEY_LEN]>) -> Self {
        Self::with(key.map_or_else(blake3::Hasher::new, blake3::Hasher::new_keyed))
    }

    fn with(hasher: blake3::Hasher) -> Self {
        Self {
            hasher,
            pending: Vec::new(),
        }
    }

    /// Bytes that are already canonical JSON (punctuation, keys written by hand, pieces of
    /// [`json_string_pieces`]).
    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        // Most pieces are punctuation or a short string that fits the pending block: one
        // copy (a context's fixed cost was ~30 instructions a piece in the general loop).
        if !self.pending.is_empty() && bytes.len() < HASH_BLOCK - self.pending.len() {
            self.pending.extend_from_slice(bytes);
            return;
        }
        self.raw_blocks(bytes);
    }

    fn raw_blocks(&mut self, mut bytes: &[u8]) {
        loop {
            if self.pending.is_empty() {
                // At a block boundary: whole blocks are hashed in place, without a copy.
                let whole = bytes.len() / HASH_BLOCK * HASH_BLOCK;
                self.hasher.update(&bytes[..whole]);
                bytes = &bytes[whole..];
            }
            if self.pending.capacity() == 0 && !bytes.is_empty() {
                // One allocation for the pending bytes, not a doubling series up to a block.
                self.pending.reserve_exact(HASH_BLOCK);
            }
            let take = (HASH_BLOCK - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < HASH_BLOCK {
                return;
            }
            self.hasher.update(&self.pending);
            self.pending.clear();
        }
    }

    /// `text` as a JSON string.
    pub(crate) fn string(&mut self, text: &str) {
        // A short string (a name, a fact) is escaped straight into the pending block when its
        // longest form (six bytes a byte, and write_str's slack) fits there: no pieces, no
        // thread-local buffer. The block then still holds fewer than HASH_BLOCK bytes.
        let room = 2 + 6 * text.len() + SHORT_SLACK;
        if text.len() <= SHORT
            && self.pending.capacity() >= HASH_BLOCK
            && room <= HASH_BLOCK - self.pending.len()
        {
            write_str(&mut self.pending, text);
            return;
        }
        json_string_pieces(text, &mut |piece| self.raw(piece));
    }

    pub(crate) fn finalize(&mut self) -> [u8; 32] {
        self.hasher.update(&self.pending);
        self.pending.clear();
        *self.hasher.finalize().as_bytes()
    }
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

    #[test]
    fn streamed_strings_hash_as_their_canonical_json() {
        // Across block boundaries, with escapes and multi-byte characters on the cuts.
        let unit = "a\"b\\c\u{1}\n\u{e9}\u{1f600}\u{4e2d}";
        for len in [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7] {
            let text: String = unit.chars().cycle().take(len).collect();
            let value = Value::String(text.clone());
            assert_eq!(
                digest_json_str(&text),
                digest(&value).unwrap(),
                "{len} chars"
            );
        }
    }

    #[test]
    fn pieces_of_every_length_hash_as_their_concatenation() {
        // Short strings escaped into the pending block, raw pieces copied there, and long
        // strings in blocks, mixed so that every path meets the block boundary at every
        // offset; the reference is blake3 of the same canonical bytes written out whole.
        let unit = "a\"b\\c\u{1}\n\u{e9}\u{1f600}\u{4e2d}\u{7f}";
        let mut hasher = JsonHasher::new();
        let mut whole = Vec::new();
        let mut state = 7_u32;
        while whole.len() < 3 * HASH_BLOCK + 1000 {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let len = match state >> 28 {
                0 => 300 + (state >> 8) as usize % 5000, // a long string, in blocks
                1..=3 => SHORT - 2 + (state >> 8) as usize % 5, // around the short limit
                _ => (state >> 8) as usize % 40,
            };
            if state & 0x100 == 0 {
                let text: String = unit.chars().cycle().skip(len % 9).take(len).collect();
                hasher.string(&text);
                write_str(&mut whole, &text);
            } else {
                let bytes = &b",[]{}:0123456789"[..len % 16];
                hasher.raw(bytes);
                whole.extend_from_slice(bytes);
            }
        }
        assert_eq!(hasher.finalize(), *blake3::hash(&whole).as_bytes());
    }

    /// The key of the BLAKE3 specification's test vectors.
    const ELVISH: &[u8; 32] = b"whats the Elvish word for friend";

    #[test]
    fn keyed_empty_input_matches_the_blake3_reference() {
        // keyed_hash of the empty input, from the BLAKE3 specification's test vectors.
        assert_eq!(
            keyed_digest_bytes(ELVISH, b""),
            "blake3-keyed:92b2b75604ed3c761f9d6f62392c8a9227ad0ea3f09573e783f1498a4ed60d26"
        );
    }

    #[test]
    fn keyed_digest_hashes_the_canonical_bytes_under_its_own_prefix() {
        let v = Value::Object(vec![
            ("b".into(), Value::Null),
            ("a".into(), Value::Bool(true)),
        ]);
        let canonical = br#"{"a":true,"b":null}"#;
        let keyed = keyed_digest(ELVISH, &v).unwrap();
        assert_eq!(keyed, keyed_digest_bytes(ELVISH, canonical));
        assert_eq!(
            keyed,
            format!(
                "{KEYED_DIGEST_PREFIX}{}",
                blake3::keyed_hash(ELVISH, canonical).to_hex()
            )
        );
        // The same hex under the other prefix would be a different hash: never the plain one.
        let plain = digest_bytes(canonical);
        assert_ne!(
            keyed[KEYED_DIGEST_PREFIX.len()..],
            plain[DIGEST_PREFIX.len()..]
        );
        assert_ne!(keyed_digest_bytes(&[0; 32], canonical), keyed);
    }

    #[test]
    fn keyed_streamed_strings_hash_as_their_canonical_json() {
        let unit = "a\"b\\c\u{1}\n\u{e9}\u{1f600}";
        for len in [0, 1, HASH_BLOCK - 1, HASH_BLOCK + 1, 3 * BLOCK + 7] {
            let text: String = unit.chars().cycle().take(len).collect();
            let mut hasher = JsonHasher::new_keyed(Some(ELVISH));
            hasher.string(&text);
            let value = Value::String(text);
            assert_eq!(
                format_keyed_digest(&hasher.finalize()),
                keyed_digest(ELVISH, &value).unwrap(),
                "{len} chars"
            );
        }
    }

    #[cfg(feature = "rayon")]
    #[test]
    fn parallel_keyed_digest_is_the_same_keyed_digest() {
        let data: Vec<u8> = (0..PARALLEL_THRESHOLD * 3 + 5)
            .map(|i| (i * 7) as u8)
            .collect();
        for len in [0, 10, PARALLEL_THRESHOLD, data.len()] {
            assert_eq!(
                keyed_digest_bytes_parallel(ELVISH, &data[..len]),
                keyed_digest_bytes(ELVISH, &data[..len])
            );
        }
    }

    #[cfg(feature = "rayon")]
    #[test]
    fn parallel_digest_is_the_same_digest() {
        let data: Vec<u8> = (0..PARALLEL_THRESHOLD * 3 + 5)
            .map(|i| (i * 7) as u8)
            .collect();
        for len in [
            0,
            10,
            PARALLEL_THRESHOLD - 1,
            PARALLEL_THRESHOLD,
            data.len(),
        ] {
            assert_eq!(
                digest_bytes_parallel(&data[..len]),
                digest_bytes(&data[..len])
            );
        }
    }
}
