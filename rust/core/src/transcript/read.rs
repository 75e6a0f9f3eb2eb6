//! Reading records: each line checked in the order of the refusal table, then taken into
//! the transcript's state.

use std::sync::Arc;

use super::chain::chain_hash;
use super::records::{
    check_members, check_record, describe, digest_member, scan_record, time_member, Checked,
    Parsed, Record,
};
use super::{Envelope, ErrorKind, Item, Structure, Transcript, TranscriptError};
use super::{CHAIN_OPEN, DIGEST_LEN, TRANSCRIPT_FORMAT, TRANSCRIPT_VERSION};
use crate::digest::{digest_bytes, DIGEST_PREFIX};
use crate::runcontext::FORMAT_VERSION;
use crate::value::Value;

impl Transcript {
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
                Parsed::Compaction(_) => Some("compaction"),
                Parsed::Elision(_) => Some("elision"),
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
            Parsed::Compaction(compaction) => {
                self.read_compaction(&compaction, line)?;
                Item::Compaction(compaction)
            }
            Parsed::Elision(elision) => {
                self.read_elision(&elision, line)?;
                Item::Elision(elision)
            }
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
                    "run {run} carried {messages} messages, but the conversation holds only {} \
                     at this line",
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
}

pub(super) struct ReadState {
    line: usize,
    chained: bool,
}
