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

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::canonical::{write_str, MAX_DEPTH};
use crate::digest::{digest_bytes, format_digest, DIGEST_PREFIX};
use crate::parse::{parse, ParseErrorKind};
use crate::rehash::Rehasher;
use crate::runcontext::{normalise, Entry, Position, RunContext, Section, FORMAT_VERSION};
use crate::scan::Scan;
use crate::tokens::Tokens;
use crate::value::Value;
use crate::CanonicalErrorKind;

/// The `format` member of every header.
pub const TRANSCRIPT_FORMAT: &str = "runcontext-transcript";
/// The version this crate writes; it reads 1 (unchained) and 2.
pub const TRANSCRIPT_VERSION: u32 = 2;
/// The default cap on one record's length in bytes (docs/TRANSCRIPT.md, Limits).
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

const DIGEST_LEN: usize = DIGEST_PREFIX.len() + 64;
const CHAIN_OPEN: &[u8] = br#"{"chain":""#;

/// The refusal kinds of docs/TRANSCRIPT.md, in the order the checks run on one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    TooLong,
    BlankLine,
    NotJson,
    TooDeep,
    NotCanonical,
    NotAnObject,
    UnknownType,
    Header,
    Version,
    Members,
    MemberValue,
    Chain,
    Seed,
    Index,
    Run,
    SectionDigest,
    DanglingSection,
    Context,
    ContextDigest,
}

impl ErrorKind {
    /// Every kind, in the order the checks run on one line.
    pub const ALL: [ErrorKind; 19] = [
        Self::TooLong,
        Self::BlankLine,
        Self::NotJson,
        Self::TooDeep,
        Self::NotCanonical,
        Self::NotAnObject,
        Self::UnknownType,
        Self::Header,
        Self::Version,
        Self::Members,
        Self::MemberValue,
        Self::Chain,
        Self::Seed,
        Self::Index,
        Self::Run,
        Self::SectionDigest,
        Self::DanglingSection,
        Self::Context,
        Self::ContextDigest,
    ];

    /// The kind named `id` (as the vectors spell it).
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.id() == id)
    }

    /// The stable identifier used by the vectors and the exceptions' `.kind`.
    pub fn id(self) -> &'static str {
        match self {
            Self::TooLong => "too-long",
            Self::BlankLine => "blank-line",
            Self::NotJson => "not-json",
            Self::TooDeep => "too-deep",
            Self::NotCanonical => "not-canonical",
            Self::NotAnObject => "not-an-object",
            Self::UnknownType => "unknown-type",
            Self::Header => "header",
            Self::Version => "version",
            Self::Members => "members",
            Self::MemberValue => "member-value",
            Self::Chain => "chain",
            Self::Seed => "seed",
            Self::Index => "index",
            Self::Run => "run",
            Self::SectionDigest => "section-digest",
            Self::DanglingSection => "dangling-section",
            Self::Context => "context",
            Self::ContextDigest => "context-digest",
        }
    }

    /// Whether the refusal means the content does not match a digest (the file was altered).
    pub fn is_digest(self) -> bool {
        matches!(
            self,
            Self::Chain | Self::Seed | Self::SectionDigest | Self::ContextDigest
        )
    }
}

/// A refused line: its kind, its 1-based line number and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptError {
    pub kind: ErrorKind,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for TranscriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for TranscriptError {}

/// A refused write: what the caller passed cannot be recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteError(pub String);

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WriteError {}

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

    // --- writing ------------------------------------------------------------------------

    /// Chain `body` (a record's canonical JSON without `chain`) onto the state: the line,
    /// newline included.
    fn chained(&mut self, body: &[u8]) -> Vec<u8> {
        let chain = chain_of(&self.chain, body);
        let mut line = Vec::with_capacity(body.len() + DIGEST_LEN + 13);
        line.extend_from_slice(CHAIN_OPEN);
        line.extend_from_slice(chain.as_bytes());
        line.extend_from_slice(b"\",");
        line.extend_from_slice(&body[1..]);
        line.push(b'\n');
        self.chain = chain;
        self.lines += 1;
        line
    }

    /// The header line; the state must be empty.
    pub fn write_header(&mut self, seed: &str, time: &str) -> Result<Vec<u8>, WriteError> {
        if self.lines != 0 {
            return Err(WriteError("a transcript has one header, on line 1".into()));
        }
        if !is_digest(seed) {
            return Err(WriteError(format!("seed: not a blake3 digest: {seed:?}")));
        }
        check_time(time).map_err(WriteError)?;
        let mut body = Vec::with_capacity(160);
        body.extend_from_slice(br#"{"context_format":"#);
        body.extend_from_slice(FORMAT_VERSION.to_string().as_bytes());
        body.extend_from_slice(br#","format":""#);
        body.extend_from_slice(TRANSCRIPT_FORMAT.as_bytes());
        body.extend_from_slice(br#"","seed":""#);
        body.extend_from_slice(seed.as_bytes());
        body.extend_from_slice(br#"","time":""#);
        body.extend_from_slice(time.as_bytes());
        body.extend_from_slice(br#"","type":"header","version":"#);
        body.extend_from_slice(TRANSCRIPT_VERSION.to_string().as_bytes());
        body.push(b'}');
        self.version = TRANSCRIPT_VERSION;
        self.seed = seed.to_owned();
        Ok(self.chained(&body))
    }

    /// The next `message` line around `message`, the message's canonical JSON (as
    /// `canonical_json` returns it). Refuses a message the reader would refuse
    /// ([`Self::check_message`]), or the first message without the seed.
    pub fn write_message(&mut self, message: &[u8]) -> Result<Vec<u8>, WriteError> {
        self.check_writable()?;
        self.check_message(message, self.messages)?;
        if self.messages == 0 && digest_bytes(message) != self.seed {
            return Err(WriteError(
                "message 0 does not have the transcript's seed digest".into(),
            ));
        }
        let mut body = Vec::with_capacity(message.len() + 48);
        body.extend_from_slice(br#"{"index":"#);
        body.extend_from_slice(self.messages.to_string().as_bytes());
        body.extend_from_slice(br#","message":"#);
        body.extend_from_slice(message);
        body.extend_from_slice(br#","type":"message"}"#);
        debug_assert_eq!(body.len(), message_body_len(self.messages, message.len()));
        self.messages += 1;
        Ok(self.chained(&body))
    }

    /// Refuse, without writing, what [`Self::write_message`] refuses of the message at
    /// `index`: a message its reader would refuse ([`check_message`]), or one whose record
    /// would be longer than this transcript's line cap, which its readers apply.
    pub fn check_message(&self, message: &[u8], index: usize) -> Result<(), WriteError> {
        check_message(message)?;
        self.check_line("the message", message_body_len(index, message.len()))
    }

    /// Refuse a record whose line (without its `\n`) would be longer than the line cap: what
    /// is written with a cap must read with that cap (docs/TRANSCRIPT.md, Limits).
    fn check_line(&self, what: &str, body_len: usize) -> Result<(), WriteError> {
        let len = line_len(body_len);
        if len <= self.max_line_bytes {
            return Ok(());
        }
        Err(WriteError(format!(
            "{what} would make a {len}-byte record, longer than the transcript's line cap of \
             {} bytes, so a reader with that cap would refuse the whole transcript; store \
             less in one record, or give a larger max_line_bytes= to Session.create or \
             Session.open (and to every reader: Session.open, runcontext log --max-line-bytes)",
            self.max_line_bytes
        )))
    }

    /// A `section` line for each of `context`'s sections the transcript does not hold yet.
    pub fn write_sections(&mut self, context: &RunContext) -> Result<Vec<Vec<u8>>, WriteError> {
        let mut lines = Vec::new();
        for section in context.sections() {
            lines.extend(self.write_section(&section.name, &section.text)?);
        }
        Ok(lines)
    }

    /// The `section` line of one body, or `None` when the transcript holds it already.
    /// Refuses a body whose record would be longer than the line cap.
    pub fn write_section(&mut self, name: &str, text: &str) -> Result<Option<Vec<u8>>, WriteError> {
        let digest = crate::runcontext::section_digest(name, text);
        self.write_known_section(name, text, &digest)
    }

    /// [`Self::write_section`] of a body whose digest the caller already holds (a
    /// [`RunContext`]'s section digest): a body the transcript holds costs a look-up, never a
    /// hash. `digest` must be `section_digest(name, text)`.
    pub fn write_known_section(
        &mut self,
        name: &str,
        text: &str,
        digest: &str,
    ) -> Result<Option<Vec<u8>>, WriteError> {
        if self.sections.contains_key(digest) {
            return Ok(None);
        }
        debug_assert_eq!(digest, crate::runcontext::section_digest(name, text));
        let digest = digest.to_owned();
        let mut body = Vec::with_capacity(text.len() + name.len() + 120);
        body.extend_from_slice(br#"{"digest":""#);
        body.extend_from_slice(digest.as_bytes());
        body.extend_from_slice(br#"","name":"#);
        write_str(&mut body, name);
        body.extend_from_slice(br#","text":"#);
        write_str(&mut body, text);
        body.extend_from_slice(br#","type":"section"}"#);
        self.check_line(&format!("section {name:?}"), body.len())?;
        self.sections
            .insert(digest.clone(), (Arc::from(name), Arc::from(text)));
        self.note_section(&digest);
        Ok(Some(self.chained(&body)))
    }

    /// The `run-context` line of the next run, sent with `messages` conversation messages.
    /// Its sections must have been written ([`Self::write_sections`]).
    pub fn write_run(
        &mut self,
        context: &RunContext,
        time: &str,
        messages: usize,
        tokens: Option<&Tokens>,
    ) -> Result<Vec<u8>, WriteError> {
        let sections: Vec<SectionRef> = context.sections().iter().map(SectionRef::from).collect();
        self.write_envelope(
            context.digest(),
            &sections,
            context.facts(),
            time,
            messages,
            tokens,
        )
    }

    /// [`Self::write_run`] from a context's parts, for front ends that hold a context of
    /// their own (its digest, sections in render order and facts, as `RunContext` gives them).
    pub fn write_envelope(
        &mut self,
        digest: &str,
        sections: &[SectionRef],
        facts: &[(String, String)],
        time: &str,
        messages: usize,
        tokens: Option<&Tokens>,
    ) -> Result<Vec<u8>, WriteError> {
        self.check_writable()?;
        check_time(time).map_err(WriteError)?;
        if messages > self.messages {
            return Err(WriteError(format!(
                "the run carried {messages} messages but the transcript records {}",
                self.messages
            )));
        }
        if let Some(missing) = sections
            .iter()
            .find(|s| !matches!(self.sections.get(&s.digest), Some((name, _)) if **name == *s.name))
        {
            return Err(WriteError(format!(
                "section {:?} is not recorded yet: write_sections first",
                missing.name
            )));
        }
        let mut body = Vec::with_capacity(256);
        body.extend_from_slice(br#"{"digest":""#);
        body.extend_from_slice(digest.as_bytes());
        body.extend_from_slice(br#"","facts":["#);
        write_fact_pairs(&mut body, facts);
        body.extend_from_slice(br#"],"messages":"#);
        body.extend_from_slice(messages.to_string().as_bytes());
        body.extend_from_slice(br#","run":"#);
        body.extend_from_slice((self.runs + 1).to_string().as_bytes());
        body.extend_from_slice(br#","sections":["#);
        for (i, section) in sections.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(br#"{"digest":""#);
            body.extend_from_slice(section.digest.as_bytes());
            body.extend_from_slice(br#"","name":"#);
            write_str(&mut body, &section.name);
            body.extend_from_slice(br#","position":""#);
            body.extend_from_slice(section.position.as_str().as_bytes());
            body.extend_from_slice(br#""}"#);
        }
        body.extend_from_slice(br#"],"time":""#);
        body.extend_from_slice(time.as_bytes());
        body.extend_from_slice(b"\"");
        if let Some(tokens) = tokens {
            body.extend_from_slice(br#","tokens":"#);
            tokens.write(&mut body);
        }
        body.extend_from_slice(br#","type":"run-context"}"#);
        self.check_line("the run-context record", body.len())?;
        self.verified = Some(((sections.to_vec(), facts.to_vec()), digest.to_owned()));
        self.runs += 1;
        Ok(self.chained(&body))
    }

    fn check_writable(&self) -> Result<(), WriteError> {
        match self.version {
            TRANSCRIPT_VERSION => Ok(()),
            0 => Err(WriteError("write the header first".into())),
            v => Err(WriteError(format!(
                "this transcript is format version {v}, which is read-only: version {v} \
                 records are not chained, so an edit to them could not be detected; start a \
                 new transcript"
            ))),
        }
    }

    // --- reading ------------------------------------------------------------------------

    /// Verify the next complete line (without its `\n`) and move past it. On an error the
    /// state is unchanged.
    pub fn read_line(&mut self, raw: &[u8]) -> Result<Item, TranscriptError> {
        let line = self.lines + 1;
        self.check_length(raw, line)?;
        // A version 2 record after the header is read in place when it is plainly canonical
        // (`scan_record`); anything else, the header and version 1 included, by the general
        // reader, which also gives every refusal.
        if self.version == TRANSCRIPT_VERSION {
            if let Some((parsed, chain)) = scan_record(raw) {
                #[cfg(debug_assertions)]
                match check_record(raw, line, true) {
                    Ok(Checked::Body(slow, slow_chain)) => {
                        debug_assert_eq!((&slow, slow_chain.as_deref()), (&parsed, Some(chain)));
                    }
                    _ => panic!("the scanner took a line the reader refuses"),
                }
                return self.apply(parsed, Some(chain), raw, line);
            }
        }
        match check_record(raw, line, self.version == TRANSCRIPT_VERSION)? {
            Checked::Header(value) => {
                let Value::Object(members) = &value else {
                    unreachable!("check_record returns objects")
                };
                let mut next = ReadState {
                    line,
                    chained: false,
                };
                let item = self.read_header(&Record { members }, &mut next, raw)?;
                self.finish(&next, raw);
                Ok(item)
            }
            Checked::Body(parsed, chain) => self.apply(parsed, chain.as_deref(), raw, line),
        }
    }

    fn check_length(&self, raw: &[u8], line: usize) -> Result<(), TranscriptError> {
        let fail = |kind: ErrorKind, message: String| TranscriptError {
            kind,
            line,
            message,
        };
        if raw.len() > self.max_line_bytes {
            return Err(fail(
                ErrorKind::TooLong,
                format!(
                    "the record is {} bytes, longer than the {}-byte line cap; if the \
                     transcript is genuine, read it with a larger max_line_bytes",
                    raw.len(),
                    self.max_line_bytes
                ),
            ));
        }
        if raw.is_empty() {
            return Err(fail(
                ErrorKind::BlankLine,
                if line == 1 {
                    "the file is empty or starts with a blank line: it is not a transcript \
                     (create one with Session.create)"
                        .into()
                } else {
                    "empty line: every line must be one JSON record".into()
                },
            ));
        }
        Ok(())
    }

    /// Checks a record's members against the transcript so far and takes it in: the chain
    /// (`stored`, for version 2), the seed rule of line 2, then the record's own rules.
    fn apply(
        &mut self,
        parsed: Parsed,
        stored: Option<&str>,
        raw: &[u8],
        line: usize,
    ) -> Result<Item, TranscriptError> {
        let mut next = ReadState {
            line,
            chained: false,
        };
        if let Some(stored) = stored {
            self.check_chain(stored, raw, &mut next)?;
        }
        if self.version == TRANSCRIPT_VERSION && line == 2 {
            let kind = match &parsed {
                Parsed::Message { .. } => None,
                Parsed::Section { .. } => Some("section"),
                Parsed::Run(_) => Some("run-context"),
            };
            if let Some(kind) = kind {
                return Err(TranscriptError {
                    kind: ErrorKind::Seed,
                    line,
                    message: format!(
                        "line 2 must be the message with index 0, whose digest is the header's \
                         seed, not a {kind} record; the header or the first message was altered"
                    ),
                });
            }
        }
        let item = match parsed {
            Parsed::Message { index, body } => self.read_message(index, body, line)?,
            Parsed::Section { digest, name, text } => {
                self.read_section(digest, &name, &text, line)?
            }
            Parsed::Run(envelope) => self.read_run(envelope, line)?,
        };
        self.finish(&next, raw);
        Ok(item)
    }

    fn finish(&mut self, next: &ReadState, raw: &[u8]) {
        if next.chained {
            // The stored chain, checked: copied into the String already held (no allocation).
            let start = CHAIN_OPEN.len();
            let chain = std::str::from_utf8(&raw[start..start + DIGEST_LEN]).expect("a digest");
            self.chain.clear();
            self.chain.push_str(chain);
        }
        self.lines = next.line;
    }
    fn read_header(
        &mut self,
        record: &Record,
        next: &mut ReadState,
        raw: &[u8],
    ) -> Result<Item, TranscriptError> {
        let line = next.line;
        let fail = |kind, message| TranscriptError {
            kind,
            line,
            message,
        };
        if record.get("format").and_then(Value::as_str) != Some(TRANSCRIPT_FORMAT) {
            return Err(fail(
                ErrorKind::Version,
                format!("not a runcontext transcript (its format is not {TRANSCRIPT_FORMAT:?})"),
            ));
        }
        let version = match record.get("version") {
            Some(Value::Number(v)) if *v == 1.0 || *v == 2.0 => *v as u32,
            Some(Value::Number(v)) if v.fract() == 0.0 && *v > 2.0 => {
                return Err(fail(
                    ErrorKind::Version,
                    format!(
                        "transcript format version {v} is newer than this runcontext reads \
                         (1 and {TRANSCRIPT_VERSION}); upgrade runcontext"
                    ),
                ))
            }
            other => {
                return Err(fail(
                    ErrorKind::Version,
                    format!("'version' must be 1 or 2, got {}", describe(other)),
                ))
            }
        };
        match record.get("context_format") {
            Some(Value::Number(v)) if *v == f64::from(FORMAT_VERSION) => {}
            other => {
                return Err(fail(
                    ErrorKind::Version,
                    format!(
                        "the runs were rendered with RunContext format {}, and this runcontext \
                         verifies format {FORMAT_VERSION} only",
                        describe(other)
                    ),
                ))
            }
        }
        let fields = [
            "context_format",
            "format",
            "seed",
            "time",
            "type",
            "version",
        ];
        check_members(
            record,
            &fields,
            version == TRANSCRIPT_VERSION,
            line,
            "header",
        )?;
        let seed = digest_member(record, "seed", line)?;
        let time = time_member(record, line)?;
        if version == TRANSCRIPT_VERSION {
            let stored = digest_member(record, "chain", line)?;
            self.check_chain(&stored, raw, next)?;
        }
        self.version = version;
        self.seed = seed.clone();
        Ok(Item::Header {
            version,
            seed,
            time,
        })
    }

    fn check_chain(
        &self,
        stored: &str,
        raw: &[u8],
        next: &mut ReadState,
    ) -> Result<(), TranscriptError> {
        let line = next.line;
        // `chain` sorts first, so the body is `{` and what follows `{"chain":"…",`: hashed in
        // two pieces, without copying the line.
        let prefix = CHAIN_OPEN.len() + DIGEST_LEN + 2;
        let expected = chain_hash(&self.chain, &[b"{", &raw[prefix..]]).to_hex();
        if stored.strip_prefix(DIGEST_PREFIX) != Some(expected.as_str()) {
            return Err(TranscriptError {
                kind: ErrorKind::Chain,
                line,
                message: if line == 1 {
                    "the header's chain does not match its content: the header was edited".into()
                } else {
                    format!(
                        "the record's chain does not follow from line {} and its own content: \
                         this line was edited, or lines before it were edited, removed, \
                         inserted or reordered",
                        line - 1
                    )
                },
            });
        }
        next.chained = true;
        Ok(())
    }

    fn read_message(
        &mut self,
        index: usize,
        body: Vec<u8>,
        line: usize,
    ) -> Result<Item, TranscriptError> {
        let fail = |kind, message| TranscriptError {
            kind,
            line,
            message,
        };
        if self.version == TRANSCRIPT_VERSION
            && line == 2
            && (index != 0 || digest_bytes(&body) != self.seed)
        {
            return Err(fail(
                ErrorKind::Seed,
                "line 2 must be the message with index 0, whose digest is the header's seed; \
                 the header or the first message was altered"
                    .into(),
            ));
        }
        if index != self.messages {
            return Err(fail(
                ErrorKind::Index,
                format!(
                    "message index {index}, expected {} (message records are numbered 0, 1, \
                     2, … in file order)",
                    self.messages
                ),
            ));
        }
        self.messages += 1;
        Ok(Item::Message { index, body })
    }

    fn read_section(
        &mut self,
        digest: String,
        name: &str,
        text: &str,
        line: usize,
    ) -> Result<Item, TranscriptError> {
        if crate::runcontext::section_digest(name, text) != digest {
            return Err(TranscriptError {
                kind: ErrorKind::SectionDigest,
                line,
                message: format!(
                    "section {name:?}: its text does not have the recorded digest {digest}: \
                     the file was altered"
                ),
            });
        }
        let name = name.to_owned();
        if !self.sections.contains_key(&digest) {
            self.sections
                .insert(digest.clone(), (Arc::from(name.as_str()), Arc::from(text)));
            self.note_section(&digest);
        }
        Ok(Item::Section { digest, name })
    }

    fn read_run(&mut self, envelope: Envelope, line: usize) -> Result<Item, TranscriptError> {
        let fail = |kind, message: String| TranscriptError {
            kind,
            line,
            message,
        };
        let Envelope {
            run,
            digest,
            time,
            messages,
            sections,
            facts,
            tokens,
        } = envelope;
        if run != self.runs + 1 {
            return Err(fail(
                ErrorKind::Run,
                format!(
                    "run number {run}, expected {} (runs are numbered 1, 2, 3, … in file order)",
                    self.runs + 1
                ),
            ));
        }
        if messages > self.messages {
            return Err(fail(
                ErrorKind::Run,
                format!(
                    "run {run} carried {messages} messages, but only {} are recorded before it",
                    self.messages
                ),
            ));
        }
        for section in &sections {
            match self.sections.get(&section.digest) {
                Some((name, _)) if **name == *section.name => {}
                _ => {
                    return Err(fail(
                        ErrorKind::DanglingSection,
                        format!(
                            "run {run} names section {:?} with digest {}, which no section \
                             record before it holds under that name",
                            section.name, section.digest
                        ),
                    ))
                }
            }
        }
        let structure: Structure = (sections, facts);
        let cached = self
            .verified
            .as_ref()
            .filter(|(held, _)| *held == structure);
        match cached.map(|(_, known)| known) {
            Some(known) if *known == digest => {}
            Some(known) => {
                return Err(fail(
                    ErrorKind::ContextDigest,
                    format!(
                        "run {run}'s context rebuilt from the transcript has digest {known}, \
                         but its envelope records {digest}: the file was altered"
                    ),
                ))
            }
            None => {
                let rebuilt = self.rebuild(&structure).map_err(|why| {
                    fail(
                        ErrorKind::Context,
                        format!("run {run}'s sections and facts {why}: the file was altered"),
                    )
                })?;
                if rebuilt != digest {
                    return Err(fail(
                        ErrorKind::ContextDigest,
                        format!(
                            "run {run}'s context rebuilt from the transcript has digest \
                             {rebuilt}, but its envelope records {digest}: the file was altered"
                        ),
                    ));
                }
                self.verified = Some((structure.clone(), digest.clone()));
            }
        }
        self.runs += 1;
        let (sections, facts) = structure;
        Ok(Item::Run(Envelope {
            run,
            digest,
            time,
            messages,
            sections,
            facts,
            tokens,
        }))
    }

    /// The RunContext an envelope's structure describes (its section bodies from this
    /// transcript).
    pub fn context_of(&self, envelope: &Envelope) -> Result<RunContext, String> {
        let entry = |s: &SectionRef| {
            let (name, text) = &self.sections[&s.digest];
            Entry::new(&**name, Some(&**text))
        };
        let head = envelope
            .sections
            .iter()
            .filter(|s| s.position == Position::Head);
        let tail = envelope
            .sections
            .iter()
            .filter(|s| s.position == Position::Tail);
        RunContext::new(
            head.map(entry).collect(),
            envelope
                .facts
                .iter()
                .map(|(n, v)| Entry::new(n, Some(v)))
                .collect(),
            tail.map(entry).collect(),
        )
        .map_err(|e| e.to_string())
    }

    /// The digest of the context an envelope's structure makes, refusing one a writer would
    /// never record. RunContext itself judges the names, their namespaces and the facts (the
    /// sections stand in with a one-character text); a section's text must be what a
    /// RunContext keeps (non-empty, normalised); the digest is then computed from the parts,
    /// without rendering the context.
    fn rebuild(&mut self, structure: &Structure) -> Result<String, String> {
        let (sections, facts) = structure;
        let stand_ins = |position: Position| -> Vec<(&str, Option<&str>)> {
            sections
                .iter()
                .filter(|s| s.position == position)
                .map(|s| (s.name.as_str(), Some("x")))
                .collect()
        };
        let judged = RunContext::keep(
            stand_ins(Position::Head),
            facts
                .iter()
                .map(|(n, v)| (n.as_str(), Some(v.as_str())))
                .collect(),
            stand_ins(Position::Tail),
        )
        .map_err(|e| format!("do not make a valid RunContext ({e})"))?;
        // Kept in the envelope's order: head sections first, as a RunContext renders them.
        let kept_sections = judged
            .head
            .iter()
            .map(|(name, _)| (Position::Head, *name))
            .chain(judged.tail.iter().map(|(name, _)| (Position::Tail, *name)));
        let kept = judged.facts.len() == facts.len()
            && judged
                .facts
                .iter()
                .zip(facts)
                .all(|((name, value), (n, v))| name == n && value.as_str() == v)
            && judged.head.len() + judged.tail.len() == sections.len()
            && kept_sections
                .zip(sections)
                .all(|((position, name), s)| position == s.position && name == s.name)
            // The sections of the document the rehasher holds passed this check before it
            // was built (`layout` is set only then).
            && (self.layout.as_ref().is_some_and(|l| l.sections == *sections)
                || sections.iter().all(|s| {
                    let (_, text) = &self.sections[&s.digest];
                    !text.is_empty() && normalise(text).len() == text.len()
                }));
        if !kept {
            return Err(
                "are not those of a RunContext built from them (an entry is empty or not \
                 normalised)"
                    .into(),
            );
        }
        let digest = self.document_digest(sections, facts);
        #[cfg(debug_assertions)]
        {
            // The document assembled from cached encodings is the one RunContext defines.
            let bodies = |position: Position| -> Vec<(&str, &str)> {
                sections
                    .iter()
                    .filter(|s| s.position == position)
                    .map(|s| {
                        let (name, text) = &self.sections[&s.digest];
                        (&**name, &**text)
                    })
                    .collect()
            };
            let reference = crate::runcontext::digest_of_kept(
                &bodies(Position::Head),
                facts,
                &bodies(Position::Tail),
            );
            debug_assert_eq!(digest, reference);
        }
        Ok(digest)
    }

    /// The digest of the canonical document of a context (`RunContext::canonical_document`:
    /// `{"facts":[[n,v],…],"head":[[n,t],…],"tail":[[n,t],…],"v":1}`), hashed by [`Rehasher`]
    /// against the previous run's document. When the sections are the previous document's
    /// ([`Self::layout`]) and the facts part (up to `],"head":[`) is as long as its, the
    /// document is the previous one with a new facts part: only that is written, over the old.
    /// Otherwise it is written whole, each section body's `[name,text]` copied from
    /// [`Self::encoded`] instead of being escaped again. Debug builds check every digest
    /// against `runcontext::digest_of_kept`.
    fn document_digest(&mut self, sections: &[SectionRef], facts: &[(String, String)]) -> String {
        let out = self.rehasher.buffer();
        out.extend_from_slice(b"{\"facts\":[");
        write_fact_pairs(out, facts);
        out.extend_from_slice(b"],\"head\":[");
        let facts_end = out.len();
        let same_layout = self.layout.as_ref();
        if same_layout.is_some_and(|l| l.facts_end == facts_end && l.sections == sections) {
            return format_digest(&self.rehasher.finish_start());
        }
        for position in [Position::Head, Position::Tail] {
            if position == Position::Tail {
                out.extend_from_slice(b"],\"tail\":[");
            }
            let mut first = true;
            for section in sections.iter().filter(|s| s.position == position) {
                if !first {
                    out.push(b',');
                }
                first = false;
                out.extend_from_slice(&encoded(&mut self.encoded, &self.sections, &section.digest));
            }
        }
        out.extend_from_slice(b"],\"v\":");
        out.extend_from_slice(FORMAT_VERSION.to_string().as_bytes());
        out.push(b'}');
        self.layout = Some(Layout {
            sections: sections.to_vec(),
            facts_end,
        });
        format_digest(&self.rehasher.finish())
    }
}

/// A section body as a context document holds it (`[name,text]`, canonical), from the cache
/// or encoded into it the first time.
fn encoded(
    cache: &mut HashMap<String, Arc<[u8]>>,
    sections: &HashMap<String, (Arc<str>, Arc<str>)>,
    digest: &str,
) -> Arc<[u8]> {
    if let Some(encoded) = cache.get(digest) {
        return encoded.clone();
    }
    let (name, text) = &sections[digest];
    let mut out = Vec::with_capacity(name.len() + text.len() + 8);
    out.push(b'[');
    write_str(&mut out, name);
    out.push(b',');
    write_str(&mut out, text);
    out.push(b']');
    let out: Arc<[u8]> = Arc::from(out);
    cache.insert(digest.to_owned(), out.clone());
    out
}

/// What decides a context document's bytes after its facts part: the sections, in order,
/// with their positions and digests, and where the facts part ends (`],"head":[` included).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    sections: Vec<SectionRef>,
    facts_end: usize,
}

/// What the general reader makes of one line: a header (its value, for
/// [`Transcript::read_header`], which needs the transcript's state), or another record with its
/// members checked and its stored chain (`chained`: a version 2 transcript). The checks run in
/// the order of the refusal table, up to the chain.
fn check_record(raw: &[u8], line: usize, chained: bool) -> Result<Checked, TranscriptError> {
    let fail = |kind: ErrorKind, message: String| TranscriptError {
        kind,
        line,
        message,
    };
    let value = parse(raw).map_err(|error| {
        // The table's order, whichever error the parser met first: a line that is not JSON
        // text anywhere (bytes that are not UTF-8, a byte order mark, a syntax error before
        // or after the 513th bracket) is `not-json`; JSON text nested too deep is `too-deep`;
        // only then a canonical-form error.
        let syntax = !matches!(
            error.kind,
            ParseErrorKind::Canonical(_)
                | ParseErrorKind::NumberOverflow(_)
                | ParseErrorKind::InexactInteger { .. }
        );
        if let Some(offset) = json_syntax_error(raw) {
            return fail(
                ErrorKind::NotJson,
                if syntax {
                    format!("not JSON: {} (byte {})", error.kind, error.offset + 1)
                } else {
                    format!(
                        "not JSON: the text breaks the JSON grammar (byte {})",
                        offset + 1
                    )
                },
            );
        }
        if !matches!(
            error.kind,
            ParseErrorKind::Canonical(CanonicalErrorKind::TooDeep)
        ) && nesting(raw) > MAX_DEPTH
        {
            return fail(
                ErrorKind::TooDeep,
                format!("the record nests deeper than {MAX_DEPTH} arrays and objects"),
            );
        }
        let kind = match error.kind {
            ParseErrorKind::Canonical(CanonicalErrorKind::TooDeep) => ErrorKind::TooDeep,
            ParseErrorKind::Canonical(_)
            | ParseErrorKind::NumberOverflow(_)
            | ParseErrorKind::InexactInteger { .. } => ErrorKind::NotCanonical,
            _ => ErrorKind::NotJson,
        };
        let what = if kind == ErrorKind::NotCanonical {
            "not a canonical JSON record"
        } else {
            "not JSON"
        };
        fail(
            kind,
            format!("{what}: {} (byte {})", error.kind, error.offset + 1),
        )
    })?;
    match value.to_canonical() {
        Ok(canonical) if canonical == raw => {}
        _ => {
            return Err(fail(
                ErrorKind::NotCanonical,
                "the record is not in canonical JSON form (RFC 8785): the file was \
                     edited or written by another tool; transcripts are byte-deterministic"
                    .into(),
            ))
        }
    }
    let Value::Object(members) = &value else {
        return Err(fail(
            ErrorKind::NotAnObject,
            format!("expected a JSON object, got {}", value.type_name()),
        ));
    };
    let record = Record { members };
    let kind = match record.get("type").and_then(Value::as_str) {
        Some(k @ ("header" | "message" | "section" | "run-context")) => k,
        Some(other) => {
            return Err(fail(
                ErrorKind::UnknownType,
                format!(
                    "unknown record type {other:?} (a record's type is one of header, \
                         message, section, run-context)"
                ),
            ))
        }
        None => {
            return Err(fail(
                ErrorKind::UnknownType,
                match record.get("type") {
                    None => "the record has no 'type'".to_owned(),
                    Some(v) => {
                        format!("a record's 'type' must be a string, got {}", v.type_name())
                    }
                },
            ))
        }
    };
    if (kind == "header") != (line == 1) {
        return Err(fail(
            ErrorKind::Header,
            if line == 1 {
                format!("line 1 must be the header record, not a {kind} record")
            } else {
                "a header record after line 1: two transcripts were joined".into()
            },
        ));
    }
    if kind == "header" {
        return Ok(Checked::Header(value));
    }
    let fields: &[&str] = match kind {
        "message" => &["index", "message", "type"],
        "section" => &["digest", "name", "text", "type"],
        // `tokens` is optional (version 2 readers accept a run with or without it).
        _ if record.get("tokens").is_some() => &[
            "digest", "facts", "messages", "run", "sections", "time", "tokens", "type",
        ],
        _ => &[
            "digest", "facts", "messages", "run", "sections", "time", "type",
        ],
    };
    check_members(&record, fields, chained, line, kind)?;
    // Member values are checked before the chain (the refusal table's order): a line edited
    // in place to an ill-formed value is `member-value`, not `chain`.
    let parsed = match kind {
        "message" => parse_message(&record, raw, line)?,
        "section" => parse_section(&record, line)?,
        _ => Parsed::Run(parse_run(&record, line)?),
    };
    let chain = chained
        .then(|| digest_member(&record, "chain", line))
        .transpose()?;
    Ok(Checked::Body(parsed, chain))
}

/// A version 2 record after the header, read in place ([`Scan`]): what [`check_record`]
/// would make of it, when the line is in the exact layout the writer gives that record, every
/// member plainly canonical and well formed. `None` leaves the line to `check_record`, which
/// accepts it or says why not.
fn scan_record(raw: &[u8]) -> Option<(Parsed, &str)> {
    let mut scan = Scan::new(raw)?;
    scan.take(br#"{"chain":"#)?;
    let chain = scan.digest()?;
    let parsed = if scan.take(br#","index":"#).is_some() {
        let index = scan.count()?;
        scan.take(br#","message":"#)?;
        let start = scan.pos();
        scan_message(&mut scan)?;
        let body = raw[start..scan.pos()].to_vec();
        scan.take(br#","type":"message"}"#)?;
        Parsed::Message { index, body }
    } else {
        scan.take(br#","digest":"#)?;
        let digest = scan.digest()?.to_owned();
        if scan.take(br#","name":"#).is_some() {
            let name = scan.string()?.into_owned();
            scan.take(br#","text":"#)?;
            let text = scan.string()?.into_owned();
            scan.take(br#","type":"section"}"#)?;
            Parsed::Section { digest, name, text }
        } else {
            Parsed::Run(scan_run(&mut scan, raw, digest)?)
        }
    };
    scan.at_end().then_some((parsed, chain))
}

// The members of a record sit at depth 1 and a run's facts and sections at most at depth 3,
// all below the limit: only a message's own nesting can reach it.
const _: () = assert!(MAX_DEPTH > 3);

/// A message object by [`is_message`]: a string `role`, or else a string `type`.
fn scan_message(scan: &mut Scan) -> Option<()> {
    let (mut role, mut kind) = (None, None);
    scan.object(1, |scan, name| {
        let string = scan.peek() == Some(b'"');
        match name {
            b"role" => role = Some(string),
            b"type" => kind = Some(string),
            _ => {}
        }
        scan.value(2)
    })?;
    is_message(role == Some(true), kind == Some(true)).then_some(())
}

/// A run-context record's members after its `digest`, through its `type`.
fn scan_run(scan: &mut Scan, raw: &[u8], digest: String) -> Option<Envelope> {
    scan.take(br#","facts":"#)?;
    let mut facts = Vec::new();
    scan.array(1, |scan| {
        scan.take(b"[")?;
        let name = scan.string()?.into_owned();
        scan.take(b",")?;
        let value = scan.string()?.into_owned();
        facts.push((name, value));
        scan.take(b"]")
    })?;
    scan.take(br#","messages":"#)?;
    let messages = scan.count()?;
    scan.take(br#","run":"#)?;
    let run = scan.count()?;
    scan.take(br#","sections":"#)?;
    let mut sections = Vec::new();
    scan.array(1, |scan| {
        scan.take(br#"{"digest":"#)?;
        let digest = scan.digest()?.to_owned();
        scan.take(br#","name":"#)?;
        let name = scan.string()?.into_owned();
        let position = if scan.take(br#","position":"head"}"#).is_some() {
            Position::Head
        } else {
            scan.take(br#","position":"tail"}"#)?;
            Position::Tail
        };
        sections.push(SectionRef {
            position,
            name,
            digest,
        });
        Some(())
    })?;
    scan.take(br#","time":"#)?;
    let time = scan.string()?.into_owned();
    check_time(&time).ok()?;
    let tokens = if scan.take(br#","tokens":"#).is_some() {
        let start = scan.pos();
        scan.value(1)?;
        // Small and rare enough for the general reader: Tokens reads a Value.
        Some(Tokens::from_value(&parse(&raw[start..scan.pos()]).ok()?).ok()?)
    } else {
        None
    };
    scan.take(br#","type":"run-context"}"#)?;
    Some(Envelope {
        run,
        digest,
        time,
        messages,
        sections,
        facts,
        tokens,
    })
}

struct ReadState {
    line: usize,
    chained: bool,
}

/// A record's members, checked, before the chain and the transcript's state are.
#[derive(Debug, Clone, PartialEq)]
enum Parsed {
    /// `body` is the message's canonical JSON, as the line holds it.
    Message {
        index: usize,
        body: Vec<u8>,
    },
    Section {
        digest: String,
        name: String,
        text: String,
    },
    Run(Envelope),
}

/// What [`check_record`] found.
enum Checked {
    Header(Value),
    Body(Parsed, Option<String>),
}

struct Record<'a> {
    members: &'a [(String, Value)],
}

impl Record<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

fn entry_has(value: &Value, keys: &[&str]) -> bool {
    match value {
        Value::Object(members) => {
            members.len() == keys.len() && keys.iter().all(|k| members.iter().any(|(m, _)| m == k))
        }
        _ => false,
    }
}

/// A `message` record's members, checked (`member-value`): its index and body.
fn parse_message(record: &Record, raw: &[u8], line: usize) -> Result<Parsed, TranscriptError> {
    let fail = |kind, message| TranscriptError {
        kind,
        line,
        message,
    };
    let index = count_member(record, "index", line)?;
    let value = record.get("message").expect("members checked");
    if let Some(why) = message_problem(value) {
        return Err(fail(ErrorKind::MemberValue, format!("'message' {why}")));
    }
    // The message's canonical bytes are the line between `"message":` and the final
    // `,"type":"message"}`: the line is canonical, so no re-encoding is needed.
    let start = find(raw, br#","message":"#).expect("canonical line") + 11;
    let body = raw[start..raw.len() - br#","type":"message"}"#.len()].to_vec();
    Ok(Parsed::Message { index, body })
}

/// A `section` record's members, checked (`member-value`): its digest, name and text.
fn parse_section(record: &Record, line: usize) -> Result<Parsed, TranscriptError> {
    let digest = digest_member(record, "digest", line)?;
    let name = string_member(record, "name", line)?.to_owned();
    let text = string_member(record, "text", line)?.to_owned();
    Ok(Parsed::Section { digest, name, text })
}

/// A `run-context` record's members, checked (`member-value`); whether they make the next
/// run of this transcript is [`Transcript::read_run`]'s question.
fn parse_run(record: &Record, line: usize) -> Result<Envelope, TranscriptError> {
    let fail = |kind, message: String| TranscriptError {
        kind,
        line,
        message,
    };
    let digest = digest_member(record, "digest", line)?;
    let run = count_member(record, "run", line)?;
    let messages = count_member(record, "messages", line)?;
    let time = time_member(record, line)?;
    let bad = |what: &str| fail(ErrorKind::MemberValue, what.to_owned());
    let tokens = record
        .get("tokens")
        .map(Tokens::from_value)
        .transpose()
        .map_err(|why| bad(&why))?;
    let mut sections = Vec::new();
    for entry in record
        .get("sections")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("'sections' must be an array"))?
    {
        let (Value::Object(members), true) =
            (entry, entry_has(entry, &["digest", "name", "position"]))
        else {
            return Err(bad(
                "each of 'sections' must be an object with exactly digest, name and position",
            ));
        };
        let sub = Record { members };
        let position = match sub.get("position").and_then(Value::as_str) {
            Some("head") => Position::Head,
            Some("tail") => Position::Tail,
            _ => return Err(bad("a section's 'position' must be \"head\" or \"tail\"")),
        };
        let name = sub
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("a section's 'name' must be a string"))?;
        let digest = digest_member(&sub, "digest", line)?;
        sections.push(SectionRef {
            position,
            name: name.to_owned(),
            digest,
        });
    }
    let mut facts = Vec::new();
    for entry in record
        .get("facts")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("'facts' must be an array"))?
    {
        match entry.as_array() {
            Some([Value::String(n), Value::String(v)]) => facts.push((n.clone(), v.clone())),
            _ => {
                return Err(bad(
                    "each of 'facts' must be a [name, value] pair of strings",
                ))
            }
        }
    }
    Ok(Envelope {
        run,
        digest,
        time,
        messages,
        sections,
        facts,
        tokens,
    })
}

/// `[name,value],[name,value],…`: the facts as the record and the context document hold them.
fn write_fact_pairs(out: &mut Vec<u8>, facts: &[(String, String)]) {
    for (i, (name, value)) in facts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'[');
        write_str(out, name);
        out.push(b',');
        write_str(out, value);
        out.push(b']');
    }
}

fn check_members(
    record: &Record,
    fields: &[&str],
    chained: bool,
    line: usize,
    kind: &str,
) -> Result<(), TranscriptError> {
    let expected = |m: &str| fields.contains(&m) || (chained && m == "chain");
    let mut missing: Vec<&str> = fields
        .iter()
        .copied()
        .filter(|f| record.get(f).is_none())
        .collect();
    if chained && record.get("chain").is_none() {
        missing.insert(0, "chain");
    }
    let unexpected: Vec<&str> = record
        .members
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| !expected(k))
        .collect();
    if missing.is_empty() && unexpected.is_empty() {
        return Ok(());
    }
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("missing {}", missing.join(", ")));
    }
    if !unexpected.is_empty() {
        parts.push(format!("unexpected {}", unexpected.join(", ")));
    }
    Err(TranscriptError {
        kind: ErrorKind::Members,
        line,
        message: format!("a {kind} record with {}", parts.join("; ")),
    })
}

fn describe(value: Option<&Value>) -> String {
    match value {
        None => "nothing".into(),
        Some(Value::Number(v)) => format!("{v}"),
        Some(Value::String(s)) => format!("{s:?}"),
        Some(other) => other.type_name().into(),
    }
}

fn member_error(line: usize, message: String) -> TranscriptError {
    TranscriptError {
        kind: ErrorKind::MemberValue,
        line,
        message,
    }
}

fn string_member<'a>(
    record: &'a Record,
    key: &str,
    line: usize,
) -> Result<&'a str, TranscriptError> {
    record
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| member_error(line, format!("'{key}' must be a string")))
}

fn digest_member(record: &Record, key: &str, line: usize) -> Result<String, TranscriptError> {
    match record.get(key).and_then(Value::as_str) {
        Some(s) if is_digest(s) => Ok(s.to_owned()),
        other => Err(member_error(
            line,
            format!(
                "'{key}' must be a digest like 'blake3:<64 lowercase hex digits>', got {}",
                other.map_or_else(|| describe(record.get(key)), |s| format!("{s:?}"))
            ),
        )),
    }
}

fn count_member(record: &Record, key: &str, line: usize) -> Result<usize, TranscriptError> {
    match record.get(key) {
        Some(Value::Number(v))
            if *v >= 0.0 && v.fract() == 0.0 && *v <= 9_007_199_254_740_991.0 =>
        {
            Ok(*v as usize)
        }
        other => Err(member_error(
            line,
            format!(
                "'{key}' must be a whole number ≥ 0, got {}",
                describe(other)
            ),
        )),
    }
}

fn time_member(record: &Record, line: usize) -> Result<String, TranscriptError> {
    let text = record.get("time").and_then(Value::as_str).unwrap_or("");
    check_time(text).map_err(|why| member_error(line, why))?;
    Ok(text.to_owned())
}

/// Refuse a message (its canonical JSON) that a reader would refuse inside a record: one
/// nested so deep that the record around it exceeds [`MAX_DEPTH`], or one that is not a
/// message by [`is_message`]. (The line cap depends on the transcript:
/// [`Transcript::check_message`].)
pub fn check_message(message: &[u8]) -> Result<(), WriteError> {
    let depth = nesting(message);
    if depth >= MAX_DEPTH {
        return Err(WriteError(format!(
            "the message nests {depth} arrays and objects deep; a transcript record holds at \
             most {} (the record itself is one more, and MAX_DEPTH is {MAX_DEPTH}), so it \
             could not be read back",
            MAX_DEPTH - 1
        )));
    }
    // The scanner takes a plainly canonical message in one pass; the parser decides the rest.
    let scanned = Scan::new(message)
        .and_then(|mut scan| scan_message(&mut scan).and_then(|()| scan.at_end().then_some(())));
    if scanned.is_none() {
        let value = parse(message)
            .map_err(|error| WriteError(format!("the message is not JSON: {error}")))?;
        if let Some(why) = message_problem(&value) {
            return Err(WriteError(format!("the message {why}")));
        }
    }
    Ok(())
}

/// The message rule, one for the writer and the reader (docs/TRANSCRIPT.md, `message`): a
/// JSON object whose `role` is a string (a chat message), or else whose `type` is a string
/// (an OpenAI Responses item). A `role` of another type does not stop a string `type` from
/// naming the item.
pub fn is_message(role_is_string: bool, type_is_string: bool) -> bool {
    role_is_string || type_is_string
}

/// Why `value` is not a message by [`is_message`], or `None` when it is one.
fn message_problem(value: &Value) -> Option<String> {
    let Value::Object(_) = value else {
        return Some(format!("must be a JSON object, got {}", value.type_name()));
    };
    let (role, kind) = (value.get("role"), value.get("type"));
    let string = |v: Option<&Value>| matches!(v, Some(Value::String(_)));
    if is_message(string(role), string(kind)) {
        return None;
    }
    Some(format!(
        "must be a JSON object with a string 'role' (a chat message) or a string 'type' (a \
         Responses item), got 'role' {} and 'type' {}",
        describe(role),
        describe(kind)
    ))
}

/// The length of a record's line, without its `\n`, around `body` (the record's canonical
/// JSON without `chain`): `{"chain":"<digest>",` then the body after its `{`.
fn line_len(body_len: usize) -> usize {
    CHAIN_OPEN.len() + DIGEST_LEN + 2 + body_len.saturating_sub(1)
}

/// The length of a `message` record's body (without `chain`) around a message of
/// `message_len` bytes at `index`.
fn message_body_len(index: usize, message_len: usize) -> usize {
    let digits = index.checked_ilog10().unwrap_or(0) as usize + 1;
    br#"{"index":"#.len()
        + digits
        + br#","message":"#.len()
        + message_len
        + br#","type":"message"}"#.len()
}

/// `"blake3:"` and 64 lowercase hex digits.
pub fn is_digest(s: &str) -> bool {
    s.len() == DIGEST_LEN
        && s.starts_with(DIGEST_PREFIX)
        && s[DIGEST_PREFIX.len()..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The timestamp form of docs/TRANSCRIPT.md: `YYYY-MM-DDTHH:MM:SSZ`, or with `.ffffff` when
/// the microseconds are not zero; a real calendar date and time of day.
pub fn check_time(text: &str) -> Result<(), String> {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(r)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let ok = (|| {
        let fraction = match b.len() {
            20 => None,
            27 if b[19] == b'.' => Some(digits(20..26)?),
            _ => return None,
        };
        let shape = [
            (4, b'-'),
            (7, b'-'),
            (10, b'T'),
            (13, b':'),
            (16, b':'),
            (b.len() - 1, b'Z'),
        ];
        if shape.iter().any(|&(i, c)| b[i] != c) {
            return None;
        }
        let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
        let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
        let days = [
            31,
            if leap { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        let valid = year >= 1
            && (1..=12).contains(&month)
            && (1..=days[month as usize - 1]).contains(&day)
            && hour < 24
            && minute < 60
            && second < 60
            && fraction != Some(0);
        valid.then_some(())
    })();
    ok.ok_or_else(|| {
        format!(
            "'time' must be a UTC timestamp like 2025-01-31T09:30:00Z (with .ffffff only for \
             non-zero microseconds), got {text:?}"
        )
    })
}

/// `blake3:` + hex(BLAKE3(previous chain ‖ body)).
pub fn chain_of(previous: &str, body: &[u8]) -> String {
    format!("{DIGEST_PREFIX}{}", chain_hash(previous, &[body]).to_hex())
}

fn chain_hash(previous: &str, body: &[&[u8]]) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(previous.as_bytes());
    for part in body {
        hasher.update(part);
    }
    hasher.finalize()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The offset of the first byte where `text` stops being JSON text (RFC 8259 grammar only:
/// no depth limit, no duplicate or number-range rules), or `None` if it is JSON text. Runs
/// without recursion, so any depth is checked in constant stack.
fn json_syntax_error(text: &[u8]) -> Option<usize> {
    #[derive(PartialEq)]
    enum Want {
        Value,
        ValueOrClose,
        Key,
        KeyOrClose,
        Colon,
        CommaOrClose,
    }
    if let Err(error) = std::str::from_utf8(text) {
        return Some(error.valid_up_to());
    }
    let mut stack: Vec<u8> = Vec::new(); // b'[' or b'{'
    let mut want = Want::Value;
    let mut i = 0;
    let n = text.len();
    let ws = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    loop {
        while i < n && ws(text[i]) {
            i += 1;
        }
        if i == n {
            return (!(stack.is_empty() && want == Want::CommaOrClose)).then_some(n);
        }
        let b = text[i];
        match want {
            Want::Colon => {
                if b != b':' {
                    return Some(i);
                }
                i += 1;
                want = Want::Value;
            }
            Want::CommaOrClose => {
                let Some(&top) = stack.last() else {
                    return Some(i); // text after the value
                };
                match (b, top) {
                    (b',', b'[') => want = Want::Value,
                    (b',', _) => want = Want::Key,
                    (b']', b'[') | (b'}', b'{') => {
                        stack.pop();
                    }
                    _ => return Some(i),
                }
                i += 1;
            }
            Want::Key | Want::KeyOrClose => {
                if b == b'}' && want == Want::KeyOrClose {
                    stack.pop();
                    i += 1;
                    want = Want::CommaOrClose;
                } else if b == b'"' {
                    match skip_string(text, i) {
                        Ok(end) => i = end,
                        Err(at) => return Some(at),
                    }
                    want = Want::Colon;
                } else {
                    return Some(i);
                }
            }
            Want::Value | Want::ValueOrClose => {
                match b {
                    b']' if want == Want::ValueOrClose => {
                        stack.pop();
                        i += 1;
                    }
                    b'[' | b'{' => {
                        stack.push(b);
                        i += 1;
                        want = if b == b'[' {
                            Want::ValueOrClose
                        } else {
                            Want::KeyOrClose
                        };
                        continue;
                    }
                    b'"' => match skip_string(text, i) {
                        Ok(end) => i = end,
                        Err(at) => return Some(at),
                    },
                    b't' | b'f' | b'n' => {
                        let word: &[u8] = match b {
                            b't' => b"true",
                            b'f' => b"false",
                            _ => b"null",
                        };
                        if !text[i..].starts_with(word) {
                            return Some(i);
                        }
                        i += word.len();
                    }
                    b'-' | b'0'..=b'9' => match skip_number(text, i) {
                        Ok(end) => i = end,
                        Err(at) => return Some(at),
                    },
                    _ => return Some(i),
                }
                want = Want::CommaOrClose;
            }
        }
    }
}

/// The offset after the string starting at `start` (a `"`), or where it breaks the grammar.
fn skip_string(text: &[u8], start: usize) -> Result<usize, usize> {
    let mut i = start + 1;
    while i < text.len() {
        match text[i] {
            b'"' => return Ok(i + 1),
            b'\\' => match text.get(i + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                Some(b'u') => {
                    let hex = text.get(i + 2..i + 6);
                    if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                        return Err(i);
                    }
                    i += 6;
                }
                _ => return Err(i),
            },
            0..=0x1f => return Err(i),
            _ => i += 1,
        }
    }
    Err(text.len())
}

/// The offset after the number starting at `start`, by the JSON number grammar.
fn skip_number(text: &[u8], start: usize) -> Result<usize, usize> {
    let digits = |from: usize| {
        from + text[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut i = start;
    if text[i] == b'-' {
        i += 1;
    }
    match text.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(i),
        _ => return Err(i),
    }
    if text.get(i) == Some(&b'.') {
        let end = digits(i + 1);
        if end == i + 1 {
            return Err(i + 1);
        }
        i = end;
    }
    if matches!(text.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(text.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return Err(i);
        }
        i = end;
    }
    Ok(i)
}

/// The nesting depth of canonical JSON text (strings skipped).
fn nesting(json: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in json {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded() -> (Transcript, Vec<Vec<u8>>) {
        let message = br#"{"content":"hi","role":"user"}"#;
        let mut t = Transcript::new();
        let lines = vec![
            t.write_header(&digest_bytes(message), "2026-12-01T09:00:00Z")
                .unwrap(),
            t.write_message(message).unwrap(),
        ];
        (t, lines)
    }

    fn read_all(lines: &[Vec<u8>]) -> Result<Transcript, TranscriptError> {
        let mut t = Transcript::new();
        for line in lines {
            t.read_line(&line[..line.len() - 1])?;
        }
        Ok(t)
    }

    #[test]
    fn what_is_written_reads_back_with_the_same_chain() {
        let (mut t, mut lines) = seeded();
        let context = RunContext::new(
            vec![Entry::new("AGENTS.md", Some("Keep it green."))],
            vec![Entry::new("date", Some("2026-12-01"))],
            vec![],
        )
        .unwrap();
        lines.extend(t.write_sections(&context).unwrap());
        lines.push(
            t.write_run(&context, "2026-12-01T09:00:01.250000Z", 1, None)
                .unwrap(),
        );
        assert!(
            t.write_sections(&context).unwrap().is_empty(),
            "a body is stored once"
        );
        let read = read_all(&lines).unwrap();
        assert_eq!(read.chain(), t.chain());
        assert_eq!((read.messages(), read.runs()), (1, 1));
    }

    #[test]
    fn every_single_byte_change_is_refused() {
        let (mut t, mut lines) = seeded();
        lines.push(
            t.write_message(br#"{"content":"ok","role":"assistant"}"#)
                .unwrap(),
        );
        for (i, line) in lines.iter().enumerate() {
            for at in 0..line.len() - 1 {
                for flip in [1u8, 0x20] {
                    let mut tampered = lines.clone();
                    tampered[i][at] ^= flip;
                    if tampered[i][at] == b'\n' {
                        continue; // a split line: another test's concern (torn/blank)
                    }
                    let error = read_all(&tampered).expect_err("a changed byte must be refused");
                    assert!(error.line <= i + 1, "{error} at line {}", i + 1);
                }
            }
        }
    }

    /// A transcript with every kind of record and member the scanner reads: nested and
    /// escaped messages, a Responses item, floats, non-ASCII text, head and tail sections,
    /// several facts, tokens with billing.
    fn varied() -> Vec<Vec<u8>> {
        let (mut t, mut lines) = seeded();
        for message in [
            &br#"{"content":[{"text":"tab\t quote\" \u0001 \u00e9","type":"text"}],"role":"user"}"#[..],
            "{\"content\":\"日本語 😀 \\n\",\"role\":\"assistant\"}".as_bytes(),
            br#"{"arguments":{"limit":-3,"ratio":0.25,"big":1e+21,"none":null,"ok":true},"type":"function_call"}"#,
            br#"{"content":"x","name":"t","role":"tool","tool_call_id":"c1"}"#,
        ] {
            let canonical = crate::canonicalize_text(message).unwrap();
            lines.push(t.write_message(&canonical).unwrap());
        }
        let tokens = Tokens::from_value(
            &parse(br#"{"billed":{"cache_read":3,"cache_write":0,"input":9,"output":4},"conversation":5,"head":1,"limit":100,"quality":"exact","tail":2,"tools":1}"#)
                .unwrap(),
        )
        .unwrap();
        for (i, date) in ["2026-12-01", "2026-12-02\nsecond line \"quoted\""]
            .iter()
            .enumerate()
        {
            let context = RunContext::new(
                vec![Entry::new(
                    "AGENTS.md",
                    Some("Keep it green.\n\tIndented \u{1} é"),
                )],
                vec![
                    Entry::new("date", Some(*date)),
                    Entry::new("cwd", Some("/home/ü")),
                ],
                vec![Entry::new("notes", Some("tail text"))],
            )
            .unwrap();
            lines.extend(t.write_sections(&context).unwrap());
            let tokens = (i == 1).then_some(&tokens);
            lines.push(
                t.write_run(&context, "2026-12-01T09:00:01Z", 5, tokens)
                    .unwrap(),
            );
        }
        lines
    }

    #[test]
    fn the_scanner_reads_what_the_writer_writes() {
        let lines = varied();
        assert!(read_all(&lines).is_ok());
        for (i, line) in lines.iter().enumerate().skip(1) {
            let raw = &line[..line.len() - 1];
            let (fast, chain) = scan_record(raw)
                .unwrap_or_else(|| panic!("line {}: {}", i + 1, String::from_utf8_lossy(raw)));
            let Ok(Checked::Body(slow, slow_chain)) = check_record(raw, i + 1, true) else {
                panic!("line {} is refused", i + 1);
            };
            assert_eq!((fast, Some(chain.to_owned())), (slow, slow_chain));
        }
    }

    /// Every one-byte change, deletion and insertion of every record line: whatever the
    /// scanner takes, the general reader takes with the same result.
    #[test]
    fn the_scanner_takes_nothing_the_reader_would_refuse_or_read_otherwise() {
        let lines = varied();
        let mut taken = 0;
        for (i, line) in lines.iter().enumerate().skip(1) {
            let raw = &line[..line.len() - 1];
            let mut variants = Vec::new();
            for at in 0..raw.len() {
                for flip in [0x01u8, 0x02, 0x04, 0x20, 0x40, 0x80] {
                    let mut v = raw.to_vec();
                    v[at] ^= flip;
                    variants.push(v);
                }
                let mut v = raw.to_vec();
                v.remove(at);
                variants.push(v);
                for b in [b' ', b'0', b'"', b'\\', b',', b'}'] {
                    let mut v = raw.to_vec();
                    v.insert(at, b);
                    variants.push(v);
                }
            }
            for v in &variants {
                if let Some((fast, chain)) = scan_record(v) {
                    taken += 1;
                    match check_record(v, i + 1, true) {
                        Ok(Checked::Body(slow, slow_chain)) => {
                            assert_eq!((&fast, Some(chain)), (&slow, slow_chain.as_deref()));
                        }
                        _ => panic!("taken, but refused: {}", String::from_utf8_lossy(v)),
                    }
                }
            }
        }
        // Some changes leave a valid record (a digit of a digest, a letter of a text).
        assert!(taken > 0);
    }

    #[test]
    fn reordering_and_removing_lines_breaks_the_chain() {
        let (mut t, mut lines) = seeded();
        lines.push(
            t.write_message(br#"{"content":"a","role":"assistant"}"#)
                .unwrap(),
        );
        lines.push(
            t.write_message(br#"{"content":"b","role":"user"}"#)
                .unwrap(),
        );
        let mut removed = lines.clone();
        removed.remove(2);
        assert_eq!(read_all(&removed).unwrap_err().kind, ErrorKind::Chain);
        let mut swapped = lines.clone();
        swapped.swap(2, 3);
        assert_eq!(read_all(&swapped).unwrap_err().kind, ErrorKind::Chain);
    }

    #[test]
    fn a_message_too_deep_to_read_back_is_refused_on_write() {
        let (mut t, _) = seeded();
        let deep = |n: usize| {
            let mut s = "[".repeat(n - 1);
            s.push_str("{}");
            s.push_str(&"]".repeat(n - 1));
            format!(r#"{{"content":{s},"role":"user"}}"#)
        };
        // The message object is one level, its content n more: record = n + 2.
        let at_limit = deep(MAX_DEPTH - 2);
        let line = t.write_message(at_limit.as_bytes()).unwrap();
        let mut reader = read_all(&seeded().1).unwrap();
        reader.read_line(&line[..line.len() - 1]).unwrap();
        assert!(t.write_message(deep(MAX_DEPTH - 1).as_bytes()).is_err());
    }

    #[test]
    fn rollback_forgets_a_batch() {
        let (mut t, _) = seeded();
        let chain = t.chain().to_owned();
        let context = RunContext::new(vec![Entry::new("a", Some("b"))], vec![], vec![]).unwrap();
        t.begin();
        t.write_sections(&context).unwrap();
        t.write_run(&context, "2026-12-01T09:00:00Z", 1, None)
            .unwrap();
        t.rollback();
        assert_eq!(
            (
                t.chain(),
                t.runs(),
                t.section(&context.sections()[0].digest)
            ),
            (chain.as_str(), 0, None)
        );
    }

    #[test]
    fn the_grammar_check_agrees_on_valid_text_and_finds_syntax_past_a_depth_error() {
        for good in [
            &br#"{"a":[1,-2.5e+3,true,null,"x\u00e9"],"b":{}}"#[..],
            b"[[[[]]]]",
            b"0",
        ] {
            assert_eq!(
                json_syntax_error(good),
                None,
                "{}",
                String::from_utf8_lossy(good)
            );
        }
        for bad in [
            &b"[1,]"[..],
            b"{\"a\" 1}",
            b"01",
            b"1.",
            b"-",
            b"[\"\x01\"]",
            b"[] x",
        ] {
            assert!(
                json_syntax_error(bad).is_some(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let deep = "[".repeat(MAX_DEPTH + 10);
        let mut t = Transcript::new();
        let error = t.read_line(deep.as_bytes()).unwrap_err();
        assert_eq!(
            error.kind,
            ErrorKind::NotJson,
            "unclosed brackets break the grammar"
        );
    }

    /// One message rule on both sides: a string `role`, or else a string `type`.
    #[test]
    fn the_writer_and_the_reader_take_the_same_messages() {
        for good in [
            &br#"{"role":null,"type":"reasoning"}"#[..],
            br#"{"role":5,"type":"function_call"}"#,
            br#"{"content":"x","role":"user","type":7}"#,
            br#"{"type":"reasoning"}"#,
        ] {
            let (mut t, mut lines) = seeded();
            lines.push(t.write_message(good).unwrap());
            // The scanner reads the line as written; the general reader must agree.
            let mut reader = read_all(&lines).unwrap();
            assert_eq!(reader.messages(), 2, "{}", String::from_utf8_lossy(good));
            let line = lines.last().unwrap();
            let raw = &line[..line.len() - 1];
            assert!(matches!(check_record(raw, 3, true), Ok(Checked::Body(..))));
            assert!(
                reader.read_line(raw).is_err(),
                "a repeated line breaks the chain"
            );
        }
        for (bad, shown) in [
            (
                &br#"{"role":null}"#[..],
                "got 'role' null and 'type' nothing",
            ),
            (
                br#"{"content":"x"}"#,
                "got 'role' nothing and 'type' nothing",
            ),
            (br#"{"role":1,"type":null}"#, "got 'role' 1 and 'type' null"),
            (br#"["user"]"#, "must be a JSON object, got array"),
        ] {
            let (mut t, lines) = seeded();
            let chain = t.chain().to_owned();
            let error = t.write_message(bad).unwrap_err();
            assert!(
                error.0.starts_with("the message must be a JSON object"),
                "{}",
                error.0
            );
            assert!(error.0.contains(shown), "{}", error.0);
            assert_eq!(
                (t.messages(), t.chain()),
                (1, chain.as_str()),
                "nothing moved"
            );
            // The same message, written as a reader would find it, is refused as member-value.
            let mut body = br#"{"index":1,"message":"#.to_vec();
            body.extend_from_slice(bad);
            body.extend_from_slice(br#","type":"message"}"#);
            let mut forged = t.clone();
            let line = forged.chained(&body);
            let error = read_all(&[lines[0].clone(), lines[1].clone(), line]).unwrap_err();
            assert_eq!((error.kind, error.line), (ErrorKind::MemberValue, 3));
            assert!(error.message.contains(shown), "{}", error.message);
        }
    }

    /// A line that is not JSON text is `not-json` whatever its depth, and whichever error
    /// the parser meets first (the table's order: not-json before too-deep).
    #[test]
    fn not_json_comes_before_too_deep_in_either_order() {
        let deep = MAX_DEPTH + 88;
        let cases: Vec<Vec<u8>> = vec![
            // A syntax error before the 513th bracket, then more brackets than MAX_DEPTH.
            [b"[".repeat(10), b"x".to_vec(), b"[".repeat(deep)].concat(),
            // The brackets first, the syntax error after them.
            [b"[".repeat(deep), b"x".to_vec(), b"]".repeat(deep)].concat(),
            // Bytes that are not UTF-8 inside a string of a line too deep.
            [b"[".repeat(deep), b"\"\xff\"".to_vec(), b"]".repeat(deep)].concat(),
            // A byte order mark before a line too deep, and one between its brackets.
            [
                b"\xef\xbb\xbf".to_vec(),
                b"[".repeat(deep),
                b"]".repeat(deep),
            ]
            .concat(),
            [
                b"[".repeat(5),
                b"\xef\xbb\xbf".to_vec(),
                b"[".repeat(deep),
                b"]".repeat(deep + 5),
            ]
            .concat(),
        ];
        for line in cases {
            let mut t = Transcript::new();
            let error = t.read_line(&line).unwrap_err();
            assert_eq!(
                (error.kind, error.line),
                (ErrorKind::NotJson, 1),
                "{}: {}",
                String::from_utf8_lossy(&line[..40]),
                error.message
            );
        }
        let valid_but_deep = [b"[".repeat(deep), b"]".repeat(deep)].concat();
        let error = Transcript::new().read_line(&valid_but_deep).unwrap_err();
        assert_eq!(error.kind, ErrorKind::TooDeep);
    }

    /// What is written with a line cap reads with that cap: the writer refuses a longer
    /// record, before its state moves, and takes one of exactly the cap.
    #[test]
    fn the_writer_refuses_a_record_over_the_line_cap() {
        let message = br#"{"content":"hi","role":"user"}"#;
        let header = |t: &mut Transcript| {
            t.write_header(&digest_bytes(message), "2026-12-01T09:00:00Z")
                .unwrap()
        };
        let cap = 300;
        let mut t = Transcript::with_max_line_bytes(cap);
        let mut lines = vec![header(&mut t), t.write_message(message).unwrap()];
        // Message 1 whose record is exactly the cap, then one a byte longer.
        let fill = |n: usize| format!(r#"{{"content":"{}","role":"user"}}"#, "x".repeat(n));
        let base = line_len(message_body_len(1, fill(0).len()));
        let exact = fill(cap - base);
        assert_eq!(t.check_message(exact.as_bytes(), 1), Ok(()));
        let over = fill(cap - base + 1);
        let error = t.check_message(over.as_bytes(), 1).unwrap_err();
        assert_eq!(
            error.0,
            format!(
                "the message would make a {}-byte record, longer than the transcript's line \
                 cap of {cap} bytes, so a reader with that cap would refuse the whole \
                 transcript; store less in one record, or give a larger max_line_bytes= to \
                 Session.create or Session.open (and to every reader: Session.open, \
                 runcontext log --max-line-bytes)",
                cap + 1
            )
        );
        let chain = t.chain().to_owned();
        assert_eq!(t.write_message(over.as_bytes()).unwrap_err(), error);
        assert_eq!((t.messages(), t.chain()), (1, chain.as_str()));
        lines.push(t.write_message(exact.as_bytes()).unwrap());
        assert_eq!(
            lines[2].len(),
            cap + 1,
            "the cap counts the line without its \n"
        );
        let mut reader = Transcript::with_max_line_bytes(cap);
        for line in &lines {
            reader.read_line(&line[..line.len() - 1]).unwrap();
        }
        // Sections and envelopes too.
        let big = RunContext::new(
            vec![Entry::new("AGENTS.md", Some(&"y".repeat(cap)))],
            vec![],
            vec![],
        )
        .unwrap();
        let error = t.write_sections(&big).unwrap_err();
        assert!(
            error.0.starts_with("section \"AGENTS.md\" would make a "),
            "{}",
            error.0
        );
        assert_eq!(t.section(&big.sections()[0].digest), None);
        let facts = RunContext::new(
            vec![],
            vec![Entry::new("f", Some(&"z".repeat(cap)))],
            vec![],
        )
        .unwrap();
        let error = t
            .write_run(&facts, "2026-12-01T09:00:00Z", 1, None)
            .unwrap_err();
        assert!(
            error.0.starts_with("the run-context record would make a "),
            "{}",
            error.0
        );
        assert_eq!(t.runs(), 0);
    }

    #[test]
    fn kinds_are_in_the_table_order_and_named_once() {
        let ids: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.id()).collect();
        let mut sorted = ErrorKind::ALL.to_vec();
        sorted.sort();
        assert_eq!(
            sorted,
            ErrorKind::ALL,
            "ALL follows the declaration (= check) order"
        );
        for id in &ids {
            assert_eq!(ErrorKind::from_id(id).map(ErrorKind::id), Some(*id));
        }
        assert_eq!(ErrorKind::from_id("nope"), None);
    }

    #[test]
    fn timestamps() {
        for good in ["2024-02-29T23:59:59Z", "2026-12-01T00:00:00.000001Z"] {
            assert!(check_time(good).is_ok(), "{good}");
        }
        for bad in [
            "2023-02-29T00:00:00Z",
            "2026-12-01T00:00:00.000000Z",
            "2026-12-01 00:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T00:00:00+00:00",
        ] {
            assert!(check_time(bad).is_err(), "{bad}");
        }
    }
}
