//! The transcript record format (docs/TRANSCRIPT.md, version 2): each record one canonical
//! JSON line carrying a running `chain` digest, read back strictly and verified in order.
//!
//! [`Transcript`] is the state a reader and a writer share: the chain so far, the next
//! message index and run number, the seed, and the section bodies recorded. Reading a line
//! ([`Transcript::read_line`]) and writing one (`write_*`) move it the same way, so a file
//! written here always reads back, and a line read here was checked against every rule in
//! the order of the spec's refusal table. Storage (files, locks, databases) is the caller's.
//!
//! ```
//! use runcontext_core::transcript::{Item, Transcript};
//! use runcontext_core::{Entry, RunContext};
//!
//! let mut writer = Transcript::new();
//! let message = br#"{"content":"hi","role":"user"}"#;
//! let mut file = writer.write_header(&runcontext_core::digest_bytes(message), "2026-12-01T09:00:00Z")?;
//! file.extend(writer.write_message(message)?);
//! let context = RunContext::new(vec![], vec![Entry::new("date", Some("2026-12-01"))], vec![])?;
//! for line in writer.write_sections(&context)? {
//!     file.extend(line);
//! }
//! file.extend(writer.write_run(&context, "2026-12-01T09:00:01Z", 1, None)?);
//!
//! let mut reader = Transcript::new();
//! let items: Vec<Item> = file
//!     .split(|&b| b == b'\n')
//!     .filter(|line| !line.is_empty())
//!     .map(|line| reader.read_line(line))
//!     .collect::<Result<_, _>>()?;
//! assert!(matches!(&items[2], Item::Run(envelope) if envelope.digest == context.digest()));
//! assert_eq!(reader.chain(), writer.chain());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod chain;
mod context;
mod edits;
mod errors;
mod read;
mod records;
#[cfg(test)]
mod tests;
mod time;
mod write;

use std::collections::HashMap;
use std::sync::Arc;

use crate::digest::DIGEST_PREFIX;
use crate::rehash::Rehasher;
use crate::runcontext::{Position, Section};
use crate::tokens::Tokens;

pub use chain::{chain_of, is_digest};
use context::Layout;
pub use edits::{
    check_pairs, tool_ids, trim_range, Compaction, CompactionTokens, Elision, Mode, ToolSide,
};
pub use errors::{ErrorKind, TranscriptError, WriteError};
pub use records::is_message;
pub use time::check_time;
pub use write::check_message;

/// The `format` member of every header.
pub const TRANSCRIPT_FORMAT: &str = "runcontext-transcript";
/// The version this crate writes; it reads 1 (unchained) and 2.
pub const TRANSCRIPT_VERSION: u32 = 2;
/// The default cap on one record's length in bytes (docs/TRANSCRIPT.md, Limits).
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

const DIGEST_LEN: usize = DIGEST_PREFIX.len() + 64;
const CHAIN_OPEN: &[u8] = br#"{"chain":""#;

/// One section as a run-context envelope names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SectionRef {
    pub position: Position,
    pub name: String,
    pub digest: String,
}

impl From<&Section> for SectionRef {
    /// How an envelope names `section` of a context.
    fn from(section: &Section) -> Self {
        Self {
            position: section.position,
            name: section.name.clone(),
            digest: section.digest.clone(),
        }
    }
}

/// A `run-context` record, verified.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub run: usize,
    pub digest: String,
    pub time: String,
    pub messages: usize,
    pub sections: Vec<SectionRef>,
    pub facts: Vec<(String, String)>,
    /// The optional `tokens` member: the request's counts and what was billed.
    pub tokens: Option<Tokens>,
}

/// What one line held, once verified.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Header {
        version: u32,
        seed: String,
        time: String,
    },
    /// `body` is the message's exact canonical JSON (a slice of the line; `parse(&body)`
    /// gives its value).
    Message {
        index: usize,
        body: Vec<u8>,
    },
    Section {
        digest: String,
        name: String,
    },
    Run(Envelope),
    /// A `compaction`: the current conversation's [`start`, `end`) replaced by its messages.
    Compaction(Compaction),
    /// An `elision`: the listed positions replaced by their stubs.
    Elision(Elision),
}

type Structure = (Vec<SectionRef>, Vec<(String, String)>);

/// What a batch of writes changed, to undo if the batch is not stored.
#[derive(Debug, Clone, Default)]
struct Mark {
    lines: usize,
    chain: String,
    messages: usize,
    runs: usize,
    sections: Vec<String>,
}

/// The state shared by reading and writing one transcript.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    lines: usize,
    chain: String,
    version: u32,
    seed: String,
    messages: usize,
    runs: usize,
    sections: HashMap<String, (Arc<str>, Arc<str>)>,
    /// The last run's (sections, facts), verified or written, with its digest: a run that
    /// repeats the context of the one before is not rebuilt. One entry, so a long transcript
    /// does not keep a copy of every run's structure.
    verified: Option<(Structure, String)>,
    /// Each section body as a context document holds it (`[name,text]`, canonical), encoded
    /// the first time a run names it: runs with changing facts re-hash it but never re-escape
    /// it. A pure function of the body, so a rolled-back batch may leave an entry harmlessly.
    encoded: HashMap<String, Arc<[u8]>>,
    /// Hashes each run's context document, reusing what the one before it hashed (a long
    /// session's documents differ in a fact or two; see `rehash`).
    rehasher: Rehasher,
    /// The layout of the document the rehasher holds (`None` before the first): the
    /// document's bytes after its facts part are a function of it (the section bodies'
    /// encodings are a function of their digests).
    layout: Option<Layout>,
    mark: Option<Mark>,
    max_line_bytes: usize,
}

impl Transcript {
    pub fn new() -> Self {
        Self::with_max_line_bytes(DEFAULT_MAX_LINE_BYTES)
    }

    pub fn with_max_line_bytes(max_line_bytes: usize) -> Self {
        Self {
            max_line_bytes,
            ..Self::default()
        }
    }

    /// Complete lines read or written so far.
    pub fn lines(&self) -> usize {
        self.lines
    }
    /// The chain of the last line (empty before the header; empty for version 1).
    pub fn chain(&self) -> &str {
        &self.chain
    }
    /// The header's version (0 before the header).
    pub fn version(&self) -> u32 {
        self.version
    }
    pub fn seed(&self) -> &str {
        &self.seed
    }
    /// Conversation messages recorded so far.
    pub fn messages(&self) -> usize {
        self.messages
    }
    /// Runs recorded so far.
    pub fn runs(&self) -> usize {
        self.runs
    }
    /// The name and text of the section recorded under `digest`.
    pub fn section(&self, digest: &str) -> Option<(&str, &str)> {
        self.sections.get(digest).map(|(n, t)| (&**n, &**t))
    }
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    // --- batches ------------------------------------------------------------------------

    /// Start a batch of writes that [`Self::rollback`] can undo (a store that failed to keep
    /// them). A batch already open is committed first.
    pub fn begin(&mut self) {
        self.mark = Some(Mark {
            lines: self.lines,
            chain: self.chain.clone(),
            messages: self.messages,
            runs: self.runs,
            ..Mark::default()
        });
    }

    /// Keep what the batch wrote.
    pub fn commit(&mut self) {
        self.mark = None;
    }

    /// Forget what the batch wrote: the state is as it was at [`Self::begin`].
    pub fn rollback(&mut self) {
        if let Some(mark) = self.mark.take() {
            self.lines = mark.lines;
            self.chain = mark.chain;
            self.messages = mark.messages;
            self.runs = mark.runs;
            for digest in mark.sections {
                self.sections.remove(&digest);
            }
            // A cache, dropped rather than restored: the next run is rebuilt.
            self.verified = None;
        }
    }

    fn note_section(&mut self, digest: &str) {
        if let Some(mark) = &mut self.mark {
            mark.sections.push(digest.to_owned());
        }
    }
}
