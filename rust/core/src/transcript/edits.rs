//! Compactions and elisions (docs/TRANSCRIPT.md, *The conversation: positions, compactions
//! and elisions*): the two records that shrink or edit the current conversation, read and
//! written here, and the writer's rule that tool calls stay with their results.

use std::collections::HashMap;

use super::records::{count_member, describe, message_problem, time_member, Record};
use super::write::{check_message, line_len};
use super::{check_time, ErrorKind, Transcript, TranscriptError, WriteError};
use crate::canonical::{write_str, MAX_DEPTH, MAX_SAFE_INTEGER};
use crate::parse::{nesting, parse};
use crate::tokens::Quality;
use crate::value::Value;

/// How a compaction shrank the range: summarised, or dropped (a hard trim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    Summary,
    Trim,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Summary => "summary",
            Mode::Trim => "trim",
        }
    }

    pub fn from_id(text: &str) -> Option<Self> {
        match text {
            "summary" => Some(Mode::Summary),
            "trim" => Some(Mode::Trim),
            _ => None,
        }
    }
}

/// A compaction's optional `tokens`: the conversation's counts before and after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompactionTokens {
    pub before: u64,
    pub after: u64,
    pub quality: Quality,
}

/// A `compaction` record: positions [`start`, `end`) of the current conversation replaced by
/// `messages` (each its canonical JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    pub start: usize,
    pub end: usize,
    pub messages: Vec<Vec<u8>>,
    pub mode: Mode,
    pub tokens: Option<CompactionTokens>,
    pub time: String,
}

/// An `elision` record: each `(index, stub)` replaces the message at that position (the stub
/// as canonical JSON), indices strictly increasing.
#[derive(Debug, Clone, PartialEq)]
pub struct Elision {
    pub items: Vec<(usize, Vec<u8>)>,
    pub time: String,
}

// --- reading -----------------------------------------------------------------------------------

fn member_error(line: usize, message: String) -> TranscriptError {
    TranscriptError {
        kind: ErrorKind::MemberValue,
        line,
        message,
    }
}

fn message_bytes(value: &Value, what: &str, line: usize) -> Result<Vec<u8>, TranscriptError> {
    if let Some(why) = message_problem(value) {
        return Err(member_error(line, format!("{what} {why}")));
    }
    // A value read from a canonical line: its canonical form is the bytes the line holds.
    Ok(value
        .to_canonical()
        .expect("a value parsed from canonical JSON"))
}

/// A `compaction` record's members, checked (`member-value`).
pub(super) fn parse_compaction(
    record: &Record,
    line: usize,
) -> Result<Compaction, TranscriptError> {
    let start = count_member(record, "start", line)?;
    let end = count_member(record, "end", line)?;
    if start >= end {
        return Err(member_error(
            line,
            format!("a compaction's 'start' ({start}) must be below its 'end' ({end})"),
        ));
    }
    let Some(Value::Array(values)) = record.get("messages") else {
        return Err(member_error(
            line,
            format!(
                "a compaction's 'messages' must be an array, got {}",
                describe(record.get("messages"))
            ),
        ));
    };
    let messages = values
        .iter()
        .enumerate()
        .map(|(i, value)| message_bytes(value, &format!("'messages[{i}]'"), line))
        .collect::<Result<Vec<_>, _>>()?;
    let mode = record
        .get("mode")
        .and_then(Value::as_str)
        .and_then(Mode::from_id)
        .ok_or_else(|| {
            member_error(
                line,
                format!(
                    "a compaction's 'mode' must be \"summary\" or \"trim\", got {}",
                    describe(record.get("mode"))
                ),
            )
        })?;
    if mode == Mode::Summary && messages.is_empty() {
        return Err(member_error(
            line,
            "a summary compaction without messages: a summary carries the messages sent in \
             place of the range (a range dropped without them is a \"trim\")"
                .into(),
        ));
    }
    let time = time_member(record, line)?;
    let tokens = record
        .get("tokens")
        .map(compaction_tokens)
        .transpose()
        .map_err(|why| member_error(line, why))?;
    Ok(Compaction {
        start,
        end,
        messages,
        mode,
        tokens,
        time,
    })
}

fn compaction_tokens(value: &Value) -> Result<CompactionTokens, String> {
    let Value::Object(members) = value else {
        return Err(format!(
            "a compaction's 'tokens' must be an object, got {}",
            value.type_name()
        ));
    };
    let mut names: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable();
    if names != ["after", "before", "quality"] {
        return Err(format!(
            "a compaction's 'tokens' must have exactly after, before and quality, got {}",
            names.join(", ")
        ));
    }
    let count = |key: &str| match value.get(key) {
        Some(Value::Number(v))
            if *v >= 0.0 && v.fract() == 0.0 && *v <= MAX_SAFE_INTEGER as f64 =>
        {
            Ok(*v as u64)
        }
        other => Err(format!(
            "'tokens.{key}' must be a whole number from 0 to 2**53 - 1, got {}",
            describe(other)
        )),
    };
    let quality = value
        .get("quality")
        .and_then(Value::as_str)
        .and_then(Quality::from_str)
        .ok_or_else(|| {
            format!(
                "'tokens.quality' must be \"exact\", \"calibrated\" or \"estimated\", got {}",
                describe(value.get("quality"))
            )
        })?;
    Ok(CompactionTokens {
        before: count("before")?,
        after: count("after")?,
        quality,
    })
}

/// An `elision` record's members, checked (`member-value`).
pub(super) fn parse_elision(record: &Record, line: usize) -> Result<Elision, TranscriptError> {
    let bad = |why: String| member_error(line, why);
    let Some(Value::Array(values)) = record.get("items") else {
        return Err(bad(format!(
            "an elision's 'items' must be an array, got {}",
            describe(record.get("items"))
        )));
    };
    if values.is_empty() {
        return Err(bad(
            "an elision's 'items' is empty: it names at least one message".into(),
        ));
    }
    let mut items: Vec<(usize, Vec<u8>)> = Vec::with_capacity(values.len());
    for (i, item) in values.iter().enumerate() {
        let Value::Object(members) = item else {
            return Err(bad(format!(
                "'items[{i}]' must be an object with exactly index and message, got {}",
                item.type_name()
            )));
        };
        if members.len() != 2 || item.get("index").is_none() || item.get("message").is_none() {
            return Err(bad(format!(
                "'items[{i}]' must be an object with exactly index and message"
            )));
        }
        let sub = Record { members };
        let index = count_member(&sub, "index", line)?;
        if let Some((previous, _)) = items.last() {
            if index <= *previous {
                return Err(bad(format!(
                    "'items[{i}].index' is {index}, after {previous}: an elision's indices \
                     strictly increase"
                )));
            }
        }
        let stub = message_bytes(
            item.get("message").expect("checked"),
            &format!("'items[{i}].message'"),
            line,
        )?;
        items.push((index, stub));
    }
    let time = time_member(record, line)?;
    Ok(Elision { items, time })
}

impl Transcript {
    /// A compaction, checked against the current conversation, taken in.
    pub(super) fn read_compaction(
        &mut self,
        compaction: &Compaction,
        line: usize,
    ) -> Result<(), TranscriptError> {
        if compaction.end > self.messages {
            return Err(TranscriptError {
                kind: ErrorKind::Compaction,
                line,
                message: format!(
                    "the compaction replaces messages [{}, {}), but the conversation holds {} \
                     at this line",
                    compaction.start, compaction.end, self.messages
                ),
            });
        }
        let length =
            self.messages - (compaction.end - compaction.start) + compaction.messages.len();
        if length == 0 {
            return Err(TranscriptError {
                kind: ErrorKind::Compaction,
                line,
                message: format!(
                    "the compaction replaces all {} messages with none: a conversation keeps at \
                     least one message, which the next run continues",
                    self.messages
                ),
            });
        }
        self.messages = length;
        Ok(())
    }

    /// An elision, checked against the current conversation.
    pub(super) fn read_elision(
        &mut self,
        elision: &Elision,
        line: usize,
    ) -> Result<(), TranscriptError> {
        let (last, _) = elision.items.last().expect("at least one item");
        if *last >= self.messages {
            return Err(TranscriptError {
                kind: ErrorKind::Elision,
                line,
                message: format!(
                    "the elision replaces message {last}, but the conversation holds {} at \
                     this line (positions 0 to {})",
                    self.messages,
                    self.messages.saturating_sub(1)
                ),
            });
        }
        Ok(())
    }

    // --- writing -------------------------------------------------------------------------------

    /// The `compaction` line replacing [`start`, `end`) of `conversation` (the current
    /// conversation, each message's canonical JSON) with `compaction.messages`. Refuses a
    /// range outside the conversation, a summary without messages, a replacement a reader
    /// would refuse, one that is not pair-aligned ([`check_pairs`]), or a record over the
    /// line cap; nothing moves then.
    pub fn write_compaction(
        &mut self,
        conversation: &[&[u8]],
        compaction: &Compaction,
    ) -> Result<Vec<u8>, WriteError> {
        self.check_writable()?;
        self.check_conversation_len(conversation)?;
        let Compaction {
            start,
            end,
            messages,
            mode,
            tokens,
            time,
        } = compaction;
        let (start, end) = (*start, *end);
        if start >= end || end > conversation.len() {
            return Err(WriteError(format!(
                "the range [{start}, {end}) is not a range of the conversation's {} messages: \
                 give 0 <= start < end <= {}",
                conversation.len(),
                conversation.len()
            )));
        }
        if messages.is_empty() && end - start == conversation.len() {
            return Err(WriteError(format!(
                "the compaction would replace all {} messages with none: a conversation keeps \
                 at least one message (the conversation check compares the next run's first \
                 and last messages with it); keep one, or give the messages sent in its place",
                conversation.len()
            )));
        }
        if *mode == Mode::Summary && messages.is_empty() {
            return Err(WriteError(
                "a summary compaction needs the messages sent in place of the range (the \
                 summariser's output); to drop the range without them, use mode=\"trim\""
                    .into(),
            ));
        }
        for (i, message) in messages.iter().enumerate() {
            check_nested(message, MAX_DEPTH - 2, &format!("messages[{i}]"))?;
        }
        check_time(time).map_err(WriteError)?;
        if let Some(t) = tokens {
            for (name, value) in [("before", t.before), ("after", t.after)] {
                if value > MAX_SAFE_INTEGER as u64 {
                    return Err(WriteError(format!(
                        "tokens_{name}: {value} is beyond 2**53 - 1"
                    )));
                }
            }
        }
        let replacement: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
        check_pairs(conversation, start, end, &replacement)?;
        let mut body = Vec::with_capacity(messages.iter().map(Vec::len).sum::<usize>() + 160);
        body.extend_from_slice(br#"{"end":"#);
        body.extend_from_slice(end.to_string().as_bytes());
        body.extend_from_slice(br#","messages":["#);
        for (i, message) in messages.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(message);
        }
        body.extend_from_slice(br#"],"mode":""#);
        body.extend_from_slice(mode.as_str().as_bytes());
        body.extend_from_slice(br#"","start":"#);
        body.extend_from_slice(start.to_string().as_bytes());
        body.extend_from_slice(br#","time":"#);
        write_str(&mut body, time);
        if let Some(t) = tokens {
            body.extend_from_slice(br#","tokens":{"after":"#);
            body.extend_from_slice(t.after.to_string().as_bytes());
            body.extend_from_slice(br#","before":"#);
            body.extend_from_slice(t.before.to_string().as_bytes());
            body.extend_from_slice(br#","quality":""#);
            body.extend_from_slice(t.quality.as_str().as_bytes());
            body.extend_from_slice(br#""}"#);
        }
        body.extend_from_slice(br#","type":"compaction"}"#);
        self.check_record_len("the compaction record", body.len())?;
        self.messages = self.messages - (end - start) + messages.len();
        Ok(self.chained(&body))
    }

    /// The `elision` line replacing each `(index, stub)` of `items` (indices strictly
    /// increasing) in `conversation`, the current conversation. Refuses an empty list, an
    /// index outside the conversation or out of order, a stub a reader would refuse or that
    /// does not keep the tool calls and results of the message it replaces, or a record over
    /// the line cap.
    pub fn write_elision(
        &mut self,
        conversation: &[&[u8]],
        items: &[(usize, &[u8])],
        time: &str,
    ) -> Result<Vec<u8>, WriteError> {
        self.check_writable()?;
        self.check_conversation_len(conversation)?;
        if items.is_empty() {
            return Err(WriteError(
                "stubs: an elision replaces at least one message: give {index: stub}".into(),
            ));
        }
        let mut previous: Option<usize> = None;
        for (index, stub) in items {
            let index = *index;
            if previous.is_some_and(|p| index <= p) {
                return Err(WriteError(format!(
                    "stubs: the indices must strictly increase ({index} after {})",
                    previous.unwrap_or(0)
                )));
            }
            previous = Some(index);
            if index >= conversation.len() {
                return Err(WriteError(format!(
                    "stubs[{index}]: the conversation has no message {index} (it holds {})",
                    conversation.len()
                )));
            }
            check_nested(stub, MAX_DEPTH - 3, &format!("stubs[{index}]"))?;
            let (mut kept, mut stubbed) = (
                tool_ids(&parse_message(conversation[index])),
                tool_ids(&parse_message(stub)),
            );
            kept.sort();
            stubbed.sort();
            if kept != stubbed {
                return Err(WriteError(format!(
                    "stubs[{index}]: the stub holds the tool calls and results {}, but message \
                     {index} holds {}: a stub keeps its message's tool-call identifiers (the \
                     call or the result stays, only its content is cleared), or the \
                     conversation would hold a call without its result",
                    show_ids(&stubbed),
                    show_ids(&kept)
                )));
            }
        }
        check_time(time).map_err(WriteError)?;
        let mut body =
            Vec::with_capacity(items.iter().map(|(_, s)| s.len() + 32).sum::<usize>() + 80);
        body.extend_from_slice(br#"{"items":["#);
        for (i, (index, stub)) in items.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(br#"{"index":"#);
            body.extend_from_slice(index.to_string().as_bytes());
            body.extend_from_slice(br#","message":"#);
            body.extend_from_slice(stub);
            body.push(b'}');
        }
        body.extend_from_slice(br#"],"time":"#);
        write_str(&mut body, time);
        body.extend_from_slice(br#","type":"elision"}"#);
        self.check_record_len("the elision record", body.len())?;
        Ok(self.chained(&body))
    }

    fn check_conversation_len(&self, conversation: &[&[u8]]) -> Result<(), WriteError> {
        if conversation.len() != self.messages {
            return Err(WriteError(format!(
                "the conversation given has {} messages, but the transcript's current \
                 conversation has {}",
                conversation.len(),
                self.messages
            )));
        }
        Ok(())
    }

    fn check_record_len(&self, what: &str, body_len: usize) -> Result<(), WriteError> {
        let len = line_len(body_len);
        if len <= self.max_line_bytes {
            return Ok(());
        }
        Err(WriteError(format!(
            "{what} would make a {len}-byte record, longer than the transcript's line cap of \
             {} bytes, so a reader with that cap would refuse the whole transcript; give a \
             larger max_line_bytes= to Session.create or Session.open (and to every reader)",
            self.max_line_bytes
        )))
    }
}

/// A message a reader would refuse at `limit` levels of its own nesting (its place in the
/// record adds the rest up to `MAX_DEPTH`).
fn check_nested(message: &[u8], limit: usize, what: &str) -> Result<(), WriteError> {
    check_message(message).map_err(|e| WriteError(format!("{what}: {e}")))?;
    let depth = nesting(message);
    if depth > limit {
        return Err(WriteError(format!(
            "{what}: the message nests {depth} arrays and objects deep; in this record it may \
             nest at most {limit} (MAX_DEPTH is {MAX_DEPTH}), or it could not be read back"
        )));
    }
    Ok(())
}

fn parse_message(message: &[u8]) -> Value {
    parse(message).unwrap_or(Value::Null)
}

// --- tool calls and their results ----------------------------------------------------------

/// Whether an identifier is a tool call's (`Call`) or a tool result's (`Result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolSide {
    Call,
    Result,
}

/// The tool calls and results `message` holds, by the table of docs/TRANSCRIPT.md (*Tool
/// calls stay with their results*): chat `tool_calls[].id` / `role: "tool"` +
/// `tool_call_id`; Responses `function_call` / `function_call_output` `call_id`; Anthropic
/// `tool_use` `id` / `tool_result` `tool_use_id` content blocks.
pub fn tool_ids(message: &Value) -> Vec<(ToolSide, String)> {
    let mut found = Vec::new();
    let string = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let role = message.get("role").and_then(Value::as_str);
    if role == Some("assistant") {
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            found.extend(
                calls
                    .iter()
                    .filter_map(|call| string(call, "id"))
                    .map(|id| (ToolSide::Call, id)),
            );
        }
    }
    if role == Some("tool") {
        if let Some(id) = string(message, "tool_call_id") {
            found.push((ToolSide::Result, id));
        }
    }
    if let Some(id) = string(message, "call_id") {
        match message.get("type").and_then(Value::as_str) {
            Some("function_call") => found.push((ToolSide::Call, id)),
            Some("function_call_output") => found.push((ToolSide::Result, id)),
            _ => {}
        }
    }
    if let Some(blocks) = message.get("content").and_then(Value::as_array) {
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    if let Some(id) = string(block, "id") {
                        found.push((ToolSide::Call, id));
                    }
                }
                Some("tool_result") => {
                    if let Some(id) = string(block, "tool_use_id") {
                        found.push((ToolSide::Result, id));
                    }
                }
                _ => {}
            }
        }
    }
    found
}

fn show_ids(ids: &[(ToolSide, String)]) -> String {
    if ids.is_empty() {
        return "none".into();
    }
    ids.iter()
        .map(|(side, id)| {
            let side = match side {
                ToolSide::Call => "call",
                ToolSide::Result => "result",
            };
            format!("{side} {id:?}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The positions at which each tool identifier occurs in `conversation`: (first, last).
fn spans(conversation: &[&[u8]]) -> HashMap<String, (usize, usize)> {
    let mut spans: HashMap<String, (usize, usize)> = HashMap::new();
    for (position, message) in conversation.iter().enumerate() {
        for (_, id) in tool_ids(&parse_message(message)) {
            spans
                .entry(id)
                .and_modify(|span| span.1 = position)
                .or_insert((position, position));
        }
    }
    spans
}

/// The writer's pair rule for replacing [`start`, `end`) of `conversation` with
/// `replacement` (docs/TRANSCRIPT.md, *Tool calls stay with their results*): every tool
/// identifier that occurs in the range occurs only there, and the replacement, taken alone,
/// holds each result's call before it and each call's result after it.
pub fn check_pairs(
    conversation: &[&[u8]],
    start: usize,
    end: usize,
    replacement: &[&[u8]],
) -> Result<(), WriteError> {
    // Each identifier's first position inside the range and first outside it.
    let mut seen: HashMap<String, (Option<usize>, Option<usize>)> = HashMap::new();
    for (position, message) in conversation.iter().enumerate() {
        for (_, id) in tool_ids(&parse_message(message)) {
            let entry = seen.entry(id).or_default();
            let slot = if (start..end).contains(&position) {
                &mut entry.0
            } else {
                &mut entry.1
            };
            slot.get_or_insert(position);
        }
    }
    let mut split: Vec<(usize, usize, String)> = seen
        .into_iter()
        .filter_map(|(id, (inside, outside))| Some((inside?, outside?, id)))
        .collect();
    split.sort();
    if let Some((inside, outside, id)) = split.first() {
        return Err(WriteError(format!(
            "the compaction of messages [{start}, {end}) would separate tool call {id:?} \
             (message {inside}, in the range) from message {outside} (outside it): a \
             compaction never leaves a tool result without its call, nor a call without its \
             result; choose a range that holds both messages or neither (Session.trim finds \
             one)"
        )));
    }
    let mut calls: Vec<String> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    for (i, message) in replacement.iter().enumerate() {
        for (side, id) in tool_ids(&parse_message(message)) {
            match side {
                ToolSide::Call => calls.push(id),
                ToolSide::Result if calls.contains(&id) => answered.push(id),
                ToolSide::Result => {
                    return Err(WriteError(format!(
                        "messages[{i}]: the result of tool call {id:?} comes without its call \
                         among the compaction's messages"
                    )))
                }
            }
        }
    }
    if let Some(id) = calls.iter().find(|id| !answered.contains(id)) {
        return Err(WriteError(format!(
            "the compaction's messages hold tool call {id:?} without its result"
        )));
    }
    Ok(())
}

/// The range a pair-aligned hard trim drops: keep the first `sticky` messages and at least the
/// last `keep`, and never split a tool call from its result (the range grows at its start and
/// shrinks at its end until no pair straddles either edge). `None` when nothing can be dropped.
pub fn trim_range(conversation: &[&[u8]], sticky: usize, keep: usize) -> Option<(usize, usize)> {
    let spans: Vec<(usize, usize)> = spans(conversation).into_values().collect();
    let mut start = sticky;
    // A pair straddling the start moves the start past the pair.
    while let Some(&(_, last)) = spans
        .iter()
        .find(|(first, last)| *first < start && start <= *last)
    {
        start = last + 1;
    }
    let mut end = conversation.len().checked_sub(keep)?;
    // A pair straddling the end moves the end before the pair (keeping more).
    while let Some(&(first, _)) = spans
        .iter()
        .find(|(first, last)| *first < end && end <= *last)
    {
        end = first;
    }
    (start < end).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{read_all, seeded};
    use super::*;

    const CALL: &[u8] =
        br#"{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"ls"},"id":"c1","type":"function"}]}"#;
    const RESULT: &[u8] = br#"{"content":"a b c","role":"tool","tool_call_id":"c1"}"#;
    const USER: &[u8] = br#"{"content":"go on","role":"user"}"#;
    const SUMMARY: &[u8] = br#"{"content":"summary","role":"user"}"#;
    const TIME: &str = "2026-12-01T10:00:00Z";

    fn compaction(start: usize, end: usize, messages: &[&[u8]], mode: Mode) -> Compaction {
        Compaction {
            start,
            end,
            messages: messages.iter().map(|m| m.to_vec()).collect(),
            mode,
            tokens: Some(CompactionTokens {
                before: 900,
                after: 100,
                quality: Quality::Estimated,
            }),
            time: TIME.into(),
        }
    }

    /// Writes the seeded transcript's message and `more`; returns the state, its lines and
    /// the conversation.
    fn conversation(more: &[&'static [u8]]) -> (Transcript, Vec<Vec<u8>>, Vec<&'static [u8]>) {
        let (mut t, mut lines) = seeded();
        let mut held: Vec<&'static [u8]> = vec![br#"{"content":"hi","role":"user"}"#];
        for message in more {
            lines.push(t.write_message(message).unwrap());
            held.push(message);
        }
        (t, lines, held)
    }

    #[test]
    fn a_compaction_and_an_elision_read_back_and_move_the_length() {
        let (mut t, mut lines, held) = conversation(&[CALL, RESULT, USER]);
        lines.push(
            t.write_compaction(&held, &compaction(1, 3, &[SUMMARY], Mode::Summary))
                .unwrap(),
        );
        assert_eq!(t.messages(), 3);
        let now: Vec<&[u8]> = vec![held[0], SUMMARY, USER];
        let stub: &[u8] = br#"{"content":"[cleared]","role":"user"}"#;
        lines.push(t.write_elision(&now, &[(1, stub)], TIME).unwrap());
        lines.push(t.write_message(USER).unwrap());
        let read = read_all(&lines).unwrap();
        assert_eq!((read.messages(), read.chain()), (4, t.chain()));
        let mut reader = Transcript::new();
        let items: Vec<_> = lines
            .iter()
            .map(|l| reader.read_line(&l[..l.len() - 1]).unwrap())
            .collect();
        assert!(matches!(&items[5], super::super::Item::Compaction(c)
            if c.start == 1 && c.end == 3 && c.messages == vec![SUMMARY.to_vec()]));
        assert!(matches!(&items[6], super::super::Item::Elision(e)
            if e.items == vec![(1, stub.to_vec())]));
    }

    #[test]
    fn a_compaction_that_splits_a_pair_is_refused_before_anything_moves() {
        let (mut t, _, held) = conversation(&[CALL, RESULT, USER]);
        let chain = t.chain().to_owned();
        let error = t
            .write_compaction(&held, &compaction(0, 2, &[SUMMARY], Mode::Summary))
            .unwrap_err();
        assert_eq!(
            error.0,
            "the compaction of messages [0, 2) would separate tool call \"c1\" (message 1, \
             in the range) from message 2 (outside it): a compaction never leaves a tool \
             result without its call, nor a call without its result; choose a range that \
             holds both messages or neither (Session.trim finds one)"
        );
        assert_eq!((t.messages(), t.chain()), (4, chain.as_str()));
        // The replacement alone: a result without its call.
        let error = t
            .write_compaction(&held, &compaction(1, 3, &[RESULT], Mode::Summary))
            .unwrap_err();
        assert_eq!(
            error.0,
            "messages[0]: the result of tool call \"c1\" comes without its call among the \
             compaction's messages"
        );
        let error = t
            .write_compaction(&held, &compaction(1, 3, &[CALL], Mode::Summary))
            .unwrap_err();
        assert_eq!(
            error.0,
            "the compaction's messages hold tool call \"c1\" without its result"
        );
        // Both inside: accepted.
        t.write_compaction(&held, &compaction(1, 3, &[], Mode::Trim))
            .unwrap();
    }

    #[test]
    fn a_stub_keeps_the_tool_ids_of_its_message() {
        let (mut t, _, held) = conversation(&[CALL, RESULT]);
        let bare: &[u8] = br#"{"content":"[cleared]","role":"user"}"#;
        let error = t.write_elision(&held, &[(2, bare)], TIME).unwrap_err();
        assert!(error.0.starts_with(
            "stubs[2]: the stub holds the tool calls and results none, but message 2 holds \
             result \"c1\""
        ));
        let kept: &[u8] = br#"{"content":"[cleared]","role":"tool","tool_call_id":"c1"}"#;
        t.write_elision(&held, &[(2, kept)], TIME).unwrap();
        for (items, want) in [
            (
                vec![],
                "stubs: an elision replaces at least one message: give {index: stub}",
            ),
            (
                vec![(3, kept)],
                "stubs[3]: the conversation has no message 3 (it holds 3)",
            ),
            (
                vec![(2, kept), (2, kept)],
                "stubs: the indices must strictly increase (2 after 2)",
            ),
        ] {
            assert_eq!(t.write_elision(&held, &items, TIME).unwrap_err().0, want);
        }
    }

    #[test]
    fn the_trim_range_never_splits_a_pair() {
        let (_, _, held) = conversation(&[USER, CALL, RESULT, USER, USER]);
        // 6 messages: 0 hi, 1 user, 2 call, 3 result, 4 user, 5 user.
        assert_eq!(trim_range(&held, 1, 2), Some((1, 4)));
        // Keeping 3 would cut between the call (2) and its result (3): the end moves to 2.
        assert_eq!(trim_range(&held, 1, 3), Some((1, 2)));
        // A sticky part ending inside the pair moves the start past it.
        assert_eq!(trim_range(&held, 3, 1), Some((4, 5)));
        assert_eq!(trim_range(&held, 1, 5), None);
        assert_eq!(trim_range(&held, 1, 9), None);
    }

    #[test]
    fn the_reader_checks_the_range_against_the_current_length() {
        let (mut t, mut lines, held) = conversation(&[USER]);
        lines.push(
            t.write_compaction(&held, &compaction(0, 2, &[SUMMARY], Mode::Summary))
                .unwrap(),
        );
        // A second compaction of [0, 2) of what is now one message: refused on read.
        let mut forged = t.clone();
        forged.messages = 2;
        let line = forged
            .write_compaction(
                &[SUMMARY, USER],
                &compaction(0, 2, &[SUMMARY], Mode::Summary),
            )
            .unwrap();
        lines.push(line);
        let error = read_all(&lines).unwrap_err();
        assert_eq!((error.kind, error.line), (ErrorKind::Compaction, 5));
    }
}
