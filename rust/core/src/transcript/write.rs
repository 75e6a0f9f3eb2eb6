//! Writing records: each line built from its parts in canonical form and chained.

use std::sync::Arc;

use super::records::{message_problem, scan_message};
use super::{chain_of, check_time, is_digest, SectionRef, Transcript, WriteError};
use super::{CHAIN_OPEN, DIGEST_LEN, TRANSCRIPT_FORMAT, TRANSCRIPT_VERSION};
use crate::canonical::{write_str, MAX_DEPTH};
use crate::digest::digest_bytes;
use crate::parse::nesting;
use crate::parse::parse;
use crate::runcontext::{RunContext, FORMAT_VERSION};
use crate::scan::Scan;
use crate::tokens::Tokens;

impl Transcript {
    /// Chain `body` (a record's canonical JSON without `chain`) onto the state: the line,
    /// newline included.
    pub(super) fn chained(&mut self, body: &[u8]) -> Vec<u8> {
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

    pub(super) fn check_writable(&self) -> Result<(), WriteError> {
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
}

/// `[name,value],[name,value],…`: the facts as the record and the context document hold them.
pub(super) fn write_fact_pairs(out: &mut Vec<u8>, facts: &[(String, String)]) {
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

/// Refuse a message (its canonical JSON) that a reader would refuse inside a record: one
/// nested so deep that the record around it exceeds [`MAX_DEPTH`], or one that is not a
/// message by [`is_message`](super::is_message). (The line cap depends on the transcript:
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

/// The length of a record's line, without its `\n`, around `body` (the record's canonical
/// JSON without `chain`): `{"chain":"<digest>",` then the body after its `{`.
pub(super) fn line_len(body_len: usize) -> usize {
    CHAIN_OPEN.len() + DIGEST_LEN + 2 + body_len.saturating_sub(1)
}

/// The length of a `message` record's body (without `chain`) around a message of
/// `message_len` bytes at `index`.
pub(super) fn message_body_len(index: usize, message_len: usize) -> usize {
    let digits = index.checked_ilog10().unwrap_or(0) as usize + 1;
    br#"{"index":"#.len()
        + digits
        + br#","message":"#.len()
        + message_len
        + br#","type":"message"}"#.len()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{read_all, seeded};
    use super::*;
    use crate::runcontext::{Entry, RunContext};

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
}
