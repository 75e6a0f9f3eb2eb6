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

/// Hashes a sequence of documents. A document is written whole into [`Self::buffer`] and
/// hashed by [`Self::finish`], which compares it with the previous one chunk by chunk; or, when
/// the caller knows the next document is the previous one with only its start rewritten (the
/// same length, the same bytes after the start), just that start is written into the buffer
/// and hashed by [`Self::finish_start`], which rewrites it in place and compares only the
/// chunks it overlaps: a 9 KB document whose facts changed is neither copied nor compared
/// again.
///
/// Invariant: after `finish` or `finish_start`, `document` is the document just hashed and
/// `kept` holds the chaining values of its subtrees (none for a document of one chunk or less).
#[derive(Debug, Clone, Default)]
pub(crate) struct Rehasher {
    /// The last document hashed.
    document: Vec<u8>,
    /// The next document, or the next document's start; after [`Self::finish`], the one before.
    scratch: Vec<u8>,
    /// Chaining values of `document`'s subtrees (those hashed or reused for it).
    kept: Nodes,
    /// The same for the document being hashed.
    made: Nodes,
    /// `same[i]`: how many of the first `i` chunks are byte for byte the previous document's.
    same: Vec<usize>,
}

impl Rehasher {
    /// The buffer to write the next document, or its start, into (empty).
    pub(crate) fn buffer(&mut self) -> &mut Vec<u8> {
        self.scratch.clear();
        &mut self.scratch
    }

    /// BLAKE3 of the document in [`Self::buffer`], which then becomes the previous document.
    pub(crate) fn finish(&mut self) -> [u8; 32] {
        std::mem::swap(&mut self.document, &mut self.scratch);
        let (current, previous) = (&self.document, &self.scratch);
        self.same.clear();
        self.same.push(0);
        let mut count = 0;
        for (i, chunk) in current.chunks(CHUNK_LEN).enumerate() {
            let at = i * CHUNK_LEN;
            count += usize::from(previous.get(at..at + chunk.len()) == Some(chunk));
            self.same.push(count);
        }
        self.hash()
    }

    /// BLAKE3 of the previous document with its first bytes replaced by those in
    /// [`Self::buffer`] (no more than the previous document holds), which then becomes the
    /// previous document. Only the chunks the new start overlaps can differ: each is compared
    /// over the start's bytes alone, and every chunk after it is unchanged by construction.
    pub(crate) fn finish_start(&mut self) -> [u8; 32] {
        let start = &self.scratch;
        assert!(
            start.len() <= self.document.len(),
            "a start longer than the document"
        );
        self.same.clear();
        self.same.push(0);
        let mut count = 0;
        for (i, new) in start.chunks(CHUNK_LEN).enumerate() {
            let at = i * CHUNK_LEN;
            count += usize::from(self.document[at..at + new.len()] == *new);
            self.same.push(count);
        }
        let rest = self.document.len().div_ceil(CHUNK_LEN) - start.len().div_ceil(CHUNK_LEN);
        self.same.extend((1..=rest).map(|k| count + k));
        self.document[..start.len()].copy_from_slice(start);
        self.hash()
    }

    /// BLAKE3 of `document`, reusing the chaining value of each subtree whose chunks `same`
    /// says are unchanged; `kept` then holds the document's.
    fn hash(&mut self) -> [u8; 32] {
        self.made.clear();
        let len = self.document.len();
        let hash = if len <= CHUNK_LEN {
            // One chunk is the root itself: nothing below it to keep.
            blake3::hash(&self.document)
        } else {
            let left = left_subtree_len(len as u64) as usize;
            let a = self.chaining_value((0, left));
            let b = self.chaining_value((left, len - left));
            merge_subtrees_root(&a, &b, Mode::Hash)
        };
        std::mem::swap(&mut self.kept, &mut self.made);
        *hash.as_bytes()
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
                .update(&self.document[start..start + len])
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

    /// Rewrites the start of `document` (the model) and of the rehasher's document alike.
    fn check_start(rehasher: &mut Rehasher, document: &mut [u8], start: &[u8]) {
        document[..start.len()].copy_from_slice(start);
        rehasher.buffer().extend_from_slice(start);
        assert_eq!(
            rehasher.finish_start(),
            *blake3::hash(document).as_bytes(),
            "a {}-byte start of {} bytes",
            start.len(),
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

    /// Starts rewritten in place, between whole documents of every size around the chunk
    /// boundaries: starts of every length up to the whole document (0, within the first
    /// chunk, ending on a chunk boundary, crossing several chunks), unchanged or changed.
    #[test]
    fn rewritten_starts_give_blake3s_hash() {
        let mut rehasher = Rehasher::default();
        let lengths = [
            0, 1, 100, 1023, 1024, 1025, 2048, 3000, 4096, 5000, 8192, 9000, 9216, 17000,
        ];
        for (round, &len) in lengths.iter().enumerate() {
            let mut document: Vec<u8> = (0..len).map(|i| (i * 7 + round) as u8).collect();
            check(&mut rehasher, &document);
            for cut in [0, 1, 20, 1023, 1024, 1025, 2048, 4000, len / 2, len] {
                if cut > len {
                    continue;
                }
                let same = document[..cut].to_vec();
                check_start(&mut rehasher, &mut document, &same);
                let changed: Vec<u8> = same.iter().map(|b| b ^ 0x5a).collect();
                check_start(&mut rehasher, &mut document, &changed);
                // One byte changed at the start's end, the last byte it covers.
                let mut last = changed.clone();
                if let Some(b) = last.last_mut() {
                    *b ^= 1;
                }
                check_start(&mut rehasher, &mut document, &last);
            }
        }
    }

    /// Random sequences mixing whole documents (edited anywhere, grown, shrunk) with starts
    /// rewritten in place, as a transcript's runs mix layout changes with fact changes.
    #[test]
    fn whole_documents_and_rewritten_starts_interleaved() {
        let mut random = Bytes(0x2545_f491_4f6c_dd1d);
        let mut rehasher = Rehasher::default();
        let mut document: Vec<u8> = (0..9000).map(|i| (i % 253) as u8).collect();
        check(&mut rehasher, &document);
        for round in 0..3000 {
            match random.below(4) {
                // A new fact value of the same length: the start rewritten in place.
                0 | 1 => {
                    let cut = random.below(document.len().min(3 * CHUNK_LEN) + 1);
                    let mut start = document[..cut].to_vec();
                    for _ in 0..random.below(3) {
                        if cut > 0 {
                            let at = random.below(cut);
                            start[at] = random.next() as u8;
                        }
                    }
                    check_start(&mut rehasher, &mut document, &start);
                }
                // A value of another length, or a section added or removed: a whole document.
                2 => {
                    let at = random.below(document.len() + 1);
                    if random.below(2) == 0 || at == document.len() {
                        document.splice(at..at, (0..random.below(40)).map(|i| i as u8));
                    } else {
                        document.drain(at..(at + random.below(40)).min(document.len()));
                    }
                    check(&mut rehasher, &document);
                }
                _ => {
                    let len = random.below(12 * CHUNK_LEN);
                    document.resize(len, round as u8);
                    check(&mut rehasher, &document);
                }
            }
        }
    }
}
