//! Reading what is written, and refusing what is changed: the reader and the writer together.

use super::records::{check_record, Checked};
use super::*;
use crate::canonical::MAX_DEPTH;
use crate::digest::digest_bytes;
use crate::parse::parse;
use crate::runcontext::{Entry, RunContext};

pub(super) fn seeded() -> (Transcript, Vec<Vec<u8>>) {
    let message = br#"{"content":"hi","role":"user"}"#;
    let mut t = Transcript::new();
    let lines = vec![
        t.write_header(&digest_bytes(message), "2026-12-01T09:00:00Z")
            .unwrap(),
        t.write_message(message).unwrap(),
    ];
    (t, lines)
}

pub(super) fn read_all(lines: &[Vec<u8>]) -> Result<Transcript, TranscriptError> {
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
pub(super) fn varied() -> Vec<Vec<u8>> {
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

/// Unclosed brackets past the depth limit break the grammar: the line is `not-json`.
#[test]
fn unclosed_brackets_past_the_depth_limit_are_not_json() {
    let deep = "[".repeat(MAX_DEPTH + 10);
    let error = Transcript::new().read_line(deep.as_bytes()).unwrap_err();
    assert_eq!(
        (error.kind, error.message.as_str()),
        (
            ErrorKind::NotJson,
            "not JSON: the text breaks the JSON grammar (byte 523)"
        )
    );
}
