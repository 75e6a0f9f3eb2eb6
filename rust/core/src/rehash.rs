//! BLAKE3 of a sequence of documents, each mostly the one before it.
//!
//! A transcript reader rebuilds every run's context document to verify its digest, and in a
//! long session the documents differ from one run to the next in a fact or two: the same
//! sections, at the same offsets, thousands of times. BLAKE3 is a tree over 1 KiB chunks in
//! which a subtree's chaining value depends only on its bytes and where it starts, so
//! [`Rehasher`] keeps the chaining values of the subtrees it hashed for the previous document
//! and reuses each whose bytes are unchanged: a run that changed one fact of a 9 KB document
//! hashes one chunk and the parents above it instead of nine chunks. Each digest is
//! `blake3::hash` of the document; the tests check that against edits at every place.
//!
//! The tree is split as BLAKE3 splits it ([`left_subtree_len`]); `blake3::hazmat` joins the
//! pieces. A subtree whose chunks all changed is hashed in one call, with blake3's SIMD across
//! its chunks; only a subtree with both changed and unchanged chunks is split further.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use blake3::hazmat::{
    left_subtree_len, merge_subtrees_non_root, merge_subtrees_root, ChainingValue, HasherExt, Mode,
};
use blake3::{Hasher, CHUNK_LEN};

/// A subtree: its first byte's offset and its length.
type Node = (usize, usize);

/// The chaining values of one document's subtrees, by node.
type Nodes = HashMap<Node, ChainingValue, BuildHasherDefault<NodeHasher>>;

/// A multiply-rotate hash (FxHash's) for nodes: a run's digest looks up and stores about 16
/// nodes, and SipHash took a tenth of reading a long transcript. A node is an offset and a
/// length that the document's size decides, never a key an adversary picks freely, and a
/// document has at most twice as many subtrees as chunks, so flooding is not a concern.
#[derive(Default)]
struct NodeHasher(u64);

impl std::hash::Hasher for NodeHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }
    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Rehasher {
    previous: Vec<u8>,
    current: Vec<u8>,
    /// Chaining values of the previous document's subtrees (those hashed or reused for it).
    kept: Nodes,
    /// The same for the document being hashed.
    made: Nodes,
    /// `same[i]`: how many of the first `i` chunks are byte for byte the previous document's.
    same: Vec<usize>,
}

impl Rehasher {
    /// The buffer to write the next document into (empty).
    pub(crate) fn buffer(&mut self) -> &mut Vec<u8> {
        self.current.clear();
        &mut self.current
    }

    /// BLAKE3 of the document in [`Self::buffer`], which then becomes the previous document.
    pub(crate) fn finish(&mut self) -> [u8; 32] {
        let len = self.current.len();
        let hash = if len <= CHUNK_LEN {
            // One chunk is the root itself: nothing below it to keep.
            self.made.clear();
            blake3::hash(&self.current)
        } else {
            self.compare();
            self.made.clear();
            let left = left_subtree_len(len as u64) as usize;
            let a = self.chaining_value((0, left));
            let b = self.chaining_value((left, len - left));
            merge_subtrees_root(&a, &b, Mode::Hash)
        };
        std::mem::swap(&mut self.previous, &mut self.current);
        std::mem::swap(&mut self.kept, &mut self.made);
        *hash.as_bytes()
    }

    /// Fills `same` from a chunk-by-chunk comparison with the previous document.
    fn compare(&mut self) {
        let (current, previous) = (&self.current, &self.previous);
        self.same.clear();
        self.same.push(0);
        let mut count = 0;
        for (i, chunk) in current.chunks(CHUNK_LEN).enumerate() {
            let at = i * CHUNK_LEN;
            count += usize::from(previous.get(at..at + chunk.len()) == Some(chunk));
            self.same.push(count);
        }
    }

    fn chaining_value(&mut self, node: Node) -> ChainingValue {
        let (start, len) = node;
        let (first, last) = (start / CHUNK_LEN, (start + len).div_ceil(CHUNK_LEN));
        let unchanged = self.same[last] - self.same[first];
        let cv = if unchanged == last - first && self.kept.contains_key(&node) {
            self.kept[&node]
        } else if unchanged == 0 || len <= CHUNK_LEN || unchanged == last - first {
            Hasher::new()
                .set_input_offset(start as u64)
                .update(&self.current[start..start + len])
                .finalize_non_root()
        } else {
            let left = left_subtree_len(len as u64) as usize;
            let a = self.chaining_value((start, left));
            let b = self.chaining_value((start + left, len - left));
            merge_subtrees_non_root(&a, &b, Mode::Hash)
        };
        self.made.insert(node, cv);
        cv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so failures repeat.
    struct Bytes(u64);

    impl Bytes {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn check(rehasher: &mut Rehasher, document: &[u8]) {
        rehasher.buffer().extend_from_slice(document);
        assert_eq!(
            rehasher.finish(),
            *blake3::hash(document).as_bytes(),
            "{} bytes",
            document.len()
        );
    }

    #[test]
    fn every_length_around_the_chunk_and_tree_boundaries() {
        let mut rehasher = Rehasher::default();
        let data: Vec<u8> = (0..9 * CHUNK_LEN + 100).map(|i| (i * 31) as u8).collect();
        for len in [
            0, 1, 1023, 1024, 1025, 2047, 2048, 2049, 3072, 4097, 8192, 8193,
        ] {
            check(&mut rehasher, &data[..len]);
            check(&mut rehasher, &data[..len]); // the same again: all reused
        }
    }

    #[test]
    fn edits_anywhere_give_blake3s_hash() {
        let mut random = Bytes(0x9e37_79b9_7f4a_7c15);
        let mut rehasher = Rehasher::default();
        let mut document: Vec<u8> = (0..9000).map(|i| (i % 251) as u8).collect();
        for round in 0..3000 {
            match random.below(6) {
                // Change a few bytes in place: the common case (a fact's new value).
                0..=2 => {
                    for _ in 0..=random.below(3) {
                        let at = random.below(document.len());
                        document[at] = random.next() as u8;
                    }
                }
                // Insert or remove bytes: everything after moves.
                3 => {
                    let at = random.below(document.len() + 1);
                    document.splice(at..at, (0..random.below(40)).map(|i| i as u8));
                }
                4 if document.len() > 10 => {
                    let at = random.below(document.len() - 10);
                    document.drain(at..at + random.below(10));
                }
                // Grow or shrink across chunk boundaries, or start over.
                _ => {
                    let len = random.below(12 * CHUNK_LEN);
                    document.resize(len, round as u8);
                }
            }
            check(&mut rehasher, &document);
        }
    }
}
