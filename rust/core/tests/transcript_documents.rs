//! A transcript's runs read back when their context documents change in every way a session
//! changes them: a fact's value of the same length (the reader rewrites the document's facts
//! part in place), of another length, facts added and removed, sections added, removed, moved
//! between head and tail and reordered, documents of one chunk or less and documents ending
//! exactly on a chunk boundary. Each run's digest is checked three ways: the writer records
//! `RunContext::digest`, which must be BLAKE3 of `RunContext::canonical_document` (hashed
//! here, whole), and the reader must rebuild the same digest from the transcript.

use runcontext_core::transcript::{ErrorKind, Item, SectionRef, Transcript};
use runcontext_core::{digest_bytes, Entry, RunContext};

const CHUNK: usize = 1024;

fn context(head: &[(&str, &str)], facts: &[(&str, &str)], tail: &[(&str, &str)]) -> RunContext {
    let entries = |pairs: &[(&str, &str)]| -> Vec<Entry> {
        pairs
            .iter()
            .map(|(n, v)| Entry::new(*n, Some(*v)))
            .collect()
    };
    RunContext::new(entries(head), entries(facts), entries(tail)).expect("a valid context")
}

/// A writer and a reader of one transcript, fed line by line.
struct Pair {
    writer: Transcript,
    reader: Transcript,
}

impl Pair {
    fn new() -> Self {
        let message = br#"{"content":"hi","role":"user"}"#;
        let mut pair = Self {
            writer: Transcript::new(),
            reader: Transcript::new(),
        };
        let header = pair
            .writer
            .write_header(&digest_bytes(message), "2026-12-01T09:00:00Z")
            .unwrap();
        pair.read(&header).unwrap();
        let line = pair.writer.write_message(message).unwrap();
        pair.read(&line).unwrap();
        pair
    }

    fn read(&mut self, line: &[u8]) -> Result<Item, ErrorKind> {
        self.reader
            .read_line(&line[..line.len() - 1])
            .map_err(|e| e.kind)
    }

    /// Writes the sections and the run of `context` and reads them back.
    fn run(&mut self, context: &RunContext) {
        let document = context.canonical_document();
        assert_eq!(
            digest_bytes(&document),
            context.digest(),
            "the digest is BLAKE3 of the document"
        );
        for line in self.writer.write_sections(context).unwrap() {
            self.read(&line).unwrap();
        }
        let line = self
            .writer
            .write_run(context, "2026-12-01T09:00:01Z", 1, None)
            .unwrap();
        match self.read(&line) {
            Ok(Item::Run(envelope)) => assert_eq!(envelope.digest, context.digest()),
            other => panic!(
                "a {}-byte document: {other:?}",
                context.canonical_document().len()
            ),
        }
    }
}

/// A text of ASCII letters that makes the document of `head: [("body", text)]` and `facts`
/// exactly `len` bytes long.
fn text_for_length(len: usize, facts: &[(&str, &str)]) -> String {
    let base = context(&[("body", "x")], facts, &[])
        .canonical_document()
        .len();
    "x".repeat(len + 1 - base)
}

#[test]
fn runs_read_back_whatever_changes_between_them() {
    let agents = "Keep the build green.\n".repeat(400); // 8.8 KB: nine chunks
    let notes = "tail notes \"quoted\" é".repeat(30);
    let mut pair = Pair::new();
    let steps: Vec<RunContext> = vec![
        context(&[("AGENTS.md", &agents)], &[("date", "d1")], &[]),
        // The same length: rewritten in place.
        context(&[("AGENTS.md", &agents)], &[("date", "d2")], &[]),
        context(&[("AGENTS.md", &agents)], &[("date", "d3")], &[]),
        // Another length, then the same length again.
        context(&[("AGENTS.md", &agents)], &[("date", "d10")], &[]),
        context(&[("AGENTS.md", &agents)], &[("date", "d11")], &[]),
        // Back to a value seen before: the same length as the last, different bytes.
        context(&[("AGENTS.md", &agents)], &[("date", "d10")], &[]),
        // The same byte length with escapes and non-ASCII text (fewer characters).
        context(&[("AGENTS.md", &agents)], &[("date", "é\"")], &[]),
        context(&[("AGENTS.md", &agents)], &[("date", "\n\t\"")], &[]),
        // A fact added, one removed, a fact renamed with the same length.
        context(
            &[("AGENTS.md", &agents)],
            &[("date", "d1"), ("cwd", "/a")],
            &[],
        ),
        context(
            &[("AGENTS.md", &agents)],
            &[("date", "d1"), ("cwd", "/b")],
            &[],
        ),
        context(
            &[("AGENTS.md", &agents)],
            &[("date", "d1"), ("pwd", "/b")],
            &[],
        ),
        context(&[("AGENTS.md", &agents)], &[("cwd", "/b")], &[]),
        // A section added to the head, then to the tail; the facts change under each.
        context(
            &[("AGENTS.md", &agents), ("rules", "be kind")],
            &[("cwd", "/b")],
            &[],
        ),
        context(
            &[("AGENTS.md", &agents), ("rules", "be kind")],
            &[("cwd", "/c")],
            &[],
        ),
        context(
            &[("AGENTS.md", &agents), ("rules", "be kind")],
            &[("cwd", "/c")],
            &[("notes", &notes)],
        ),
        context(
            &[("AGENTS.md", &agents), ("rules", "be kind")],
            &[("cwd", "/d")],
            &[("notes", &notes)],
        ),
        // Reordered, moved from head to tail, moved back, removed.
        context(
            &[("rules", "be kind"), ("AGENTS.md", &agents)],
            &[("cwd", "/d")],
            &[("notes", &notes)],
        ),
        context(
            &[("AGENTS.md", &agents)],
            &[("cwd", "/d")],
            &[("rules", "be kind"), ("notes", &notes)],
        ),
        context(
            &[("AGENTS.md", &agents)],
            &[("cwd", "/e")],
            &[("rules", "be kind"), ("notes", &notes)],
        ),
        context(
            &[("AGENTS.md", &agents), ("rules", "be kind")],
            &[("cwd", "/e")],
            &[("notes", &notes)],
        ),
        context(&[("rules", "be kind")], &[("cwd", "/e")], &[]),
        // A section of the same length but another text: a new digest, not an edit.
        context(&[("rules", "be nice")], &[("cwd", "/e")], &[]),
        context(&[("rules", "be nice")], &[("cwd", "/f")], &[]),
        // No sections, no facts: documents well under a chunk.
        context(&[], &[("cwd", "/f")], &[]),
        context(&[], &[("cwd", "/g")], &[]),
        context(&[], &[], &[]),
        context(&[], &[("cwd", "/g")], &[]),
        // Back to nine chunks, where every subtree kept may be stale.
        context(&[("AGENTS.md", &agents)], &[("cwd", "/g")], &[]),
        context(&[("AGENTS.md", &agents)], &[("cwd", "/h")], &[]),
    ];
    for step in &steps {
        pair.run(step);
    }
}

#[test]
fn documents_ending_on_a_chunk_boundary() {
    let mut pair = Pair::new();
    for len in [CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 3 * CHUNK, 8 * CHUNK] {
        let text = text_for_length(len, &[("date", "d1")]);
        for date in ["d1", "d2", "d3"] {
            let step = context(&[("body", &text)], &[("date", date)], &[]);
            assert_eq!(step.canonical_document().len(), len);
            pair.run(&step);
        }
        // A facts part that grows past, then back to, the boundary.
        let step = context(&[("body", &text)], &[("date", "d10")], &[]);
        pair.run(&step);
        pair.run(&context(&[("body", &text)], &[("date", "d4")], &[]));
    }
}

/// A run whose facts changed but whose envelope still records the previous run's digest is
/// refused, whether its facts part has the previous length (rewritten in place) or not.
#[test]
fn a_stale_digest_is_refused_after_a_fact_changes() {
    let agents = "Keep the build green.\n".repeat(400);
    for date in ["d2", "d22"] {
        let mut pair = Pair::new();
        let first = context(&[("AGENTS.md", &agents)], &[("date", "d1")], &[]);
        pair.run(&first);
        let sections: Vec<SectionRef> = first.sections().iter().map(SectionRef::from).collect();
        let facts = [("date".to_owned(), date.to_owned())];
        let genuine = pair.writer.clone();
        let line = pair
            .writer
            .write_envelope(
                first.digest(),
                &sections,
                &facts,
                "2026-12-01T09:00:02Z",
                1,
                None,
            )
            .unwrap();
        assert_eq!(pair.read(&line).unwrap_err(), ErrorKind::ContextDigest);
        // The refused line changed nothing: the genuine run in its place reads.
        pair.writer = genuine;
        pair.run(&context(&[("AGENTS.md", &agents)], &[("date", date)], &[]));
    }
}
