//! One line's members: the general reader ([`check_record`]), which gives every refusal,
//! and the in-place reader of plainly canonical lines ([`scan_record`]).

use super::edits::{parse_compaction, parse_elision};
use super::{
    check_time, is_digest, Compaction, Elision, Envelope, ErrorKind, SectionRef, TranscriptError,
};
use crate::canonical::MAX_DEPTH;
use crate::parse::{nesting, syntax_error};
use crate::parse::{parse, ParseErrorKind};
use crate::runcontext::Position;
use crate::scan::Scan;
use crate::tokens::Tokens;
use crate::value::Value;
use crate::CanonicalErrorKind;

/// What the general reader makes of one line: a header (its value, for
/// [`Transcript::read_header`], which needs the transcript's state), or another record with its
/// members checked and its stored chain (`chained`: a version 2 transcript). The checks run in
/// the order of the refusal table, up to the chain.
pub(super) fn check_record(
    raw: &[u8],
    line: usize,
    chained: bool,
) -> Result<Checked, TranscriptError> {
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
        if let Some(offset) = syntax_error(raw) {
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
        // A version 1 file has no compactions or elisions: they are unknown there, as a
        // version 1 reader would find them (line 1 is the header whatever its type).
        Some(k @ ("compaction" | "elision")) if !chained && line > 1 => {
            return Err(fail(
                ErrorKind::UnknownType,
                format!("a {k} record in a version 1 transcript, which has none"),
            ))
        }
        Some(k @ ("header" | "message" | "section" | "run-context" | "compaction" | "elision")) => {
            k
        }
        Some(other) => {
            return Err(fail(
                ErrorKind::UnknownType,
                format!(
                    "unknown record type {other:?} (a record's type is one of header, \
                         message, section, run-context, compaction, elision)"
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
        "compaction" if record.get("tokens").is_some() => {
            &["end", "messages", "mode", "start", "time", "tokens", "type"]
        }
        "compaction" => &["end", "messages", "mode", "start", "time", "type"],
        "elision" => &["items", "time", "type"],
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
        "compaction" => Parsed::Compaction(parse_compaction(&record, line)?),
        "elision" => Parsed::Elision(parse_elision(&record, line)?),
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
pub(super) fn scan_record(raw: &[u8]) -> Option<(Parsed, &str)> {
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
pub(super) fn scan_message(scan: &mut Scan) -> Option<()> {
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

/// A record's members, checked, before the chain and the transcript's state are.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Parsed {
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
    Compaction(Compaction),
    Elision(Elision),
}

/// What [`check_record`] found.
pub(super) enum Checked {
    Header(Value),
    Body(Parsed, Option<String>),
}

pub(super) struct Record<'a> {
    pub(super) members: &'a [(String, Value)],
}

impl Record<'_> {
    pub(super) fn get(&self, key: &str) -> Option<&Value> {
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

pub(super) fn check_members(
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

pub(super) fn describe(value: Option<&Value>) -> String {
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

pub(super) fn digest_member(
    record: &Record,
    key: &str,
    line: usize,
) -> Result<String, TranscriptError> {
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

pub(super) fn count_member(
    record: &Record,
    key: &str,
    line: usize,
) -> Result<usize, TranscriptError> {
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

pub(super) fn time_member(record: &Record, line: usize) -> Result<String, TranscriptError> {
    let text = record.get("time").and_then(Value::as_str).unwrap_or("");
    check_time(text).map_err(|why| member_error(line, why))?;
    Ok(text.to_owned())
}

/// The message rule, one for the writer and the reader (docs/TRANSCRIPT.md, `message`): a
/// JSON object whose `role` is a string (a chat message), or else whose `type` is a string
/// (an OpenAI Responses item). A `role` of another type does not stop a string `type` from
/// naming the item.
pub fn is_message(role_is_string: bool, type_is_string: bool) -> bool {
    role_is_string || type_is_string
}

/// Why `value` is not a message by [`is_message`], or `None` when it is one.
pub(super) fn message_problem(value: &Value) -> Option<String> {
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

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{read_all, varied};
    use super::*;

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
}
