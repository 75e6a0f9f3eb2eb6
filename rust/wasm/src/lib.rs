//! The runcontext core for JavaScript: a small C-style ABI over `runcontext-core`, compiled
//! to `wasm32-unknown-unknown` and loaded by `js/src/wasm.js` (docs/JAVASCRIPT.md).
//!
//! Converts arguments and results, nothing else: every format rule is the core's.
//!
//! The ABI has no pointers to own and no `unsafe`: the module holds one input buffer and one
//! output buffer. The caller sizes the input with [`rc_input`], writes its bytes at the
//! address returned, calls a function, and reads the output at [`rc_out_ptr`] /
//! [`rc_out_len`]. Every function returns 0 when the output is its result and 1 when it is
//! an error, as canonical JSON (`{"kind": …, "message": …, …}`). A wasm instance runs one
//! call at a time, so the buffers are never shared.
//!
//! Values cross as the compact encoding of [`encoding`]; multi-argument calls read their
//! arguments as length-prefixed fields ([`Fields`]).

pub mod encoding;

use std::cell::RefCell;

use encoding::{decode, Key, Node};
use runcontext_core::canonical::{
    enter, write_array, write_f64, write_i64, write_object, write_str,
};
use runcontext_core::transcript::{self as tr, Item};
use runcontext_core::{
    canonicalize_text, digest_bytes, format_keyed_digest, keyed_context_digests,
    keyed_digest_bytes, ArgError, ArgNode, CanonicalError, CanonicalErrorKind, Entry,
    ParseErrorKind, RunContext, Shape, Value, KEY_LEN, MAX_SAFE_INTEGER,
};

thread_local! {
    static INPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static OUTPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    static TRANSCRIPTS: RefCell<Vec<Option<tr::Transcript>>> = const { RefCell::new(Vec::new()) };
}

type Outcome = Result<Vec<u8>, Vec<u8>>;

/// Runs `f` on the input and stores its result or error as the output.
fn call(f: impl FnOnce(&[u8]) -> Outcome) -> u32 {
    let outcome = INPUT.with(|input| f(&input.borrow()));
    let (status, bytes) = match outcome {
        Ok(bytes) => (0, bytes),
        Err(bytes) => (1, bytes),
    };
    OUTPUT.with(|out| *out.borrow_mut() = bytes);
    status
}

/// Makes the input buffer `len` bytes long and returns its address, for the caller to fill.
#[no_mangle]
pub extern "C" fn rc_input(len: usize) -> usize {
    INPUT.with(|input| {
        let mut input = input.borrow_mut();
        input.clear();
        input.resize(len, 0);
        input.as_ptr() as usize
    })
}

#[no_mangle]
pub extern "C" fn rc_out_ptr() -> usize {
    OUTPUT.with(|out| out.borrow().as_ptr() as usize)
}

#[no_mangle]
pub extern "C" fn rc_out_len() -> usize {
    OUTPUT.with(|out| out.borrow().len())
}

/// Frees both buffers' memory (the module keeps its grown memory, but not the data).
#[no_mangle]
pub extern "C" fn rc_release() {
    INPUT.with(|b| *b.borrow_mut() = Vec::new());
    OUTPUT.with(|b| *b.borrow_mut() = Vec::new());
}

// --- errors, as canonical JSON objects --------------------------------------------------------

fn object(members: Vec<(&str, Value)>) -> Vec<u8> {
    Value::Object(
        members
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
    .to_canonical()
    .expect("strings, numbers and null have a canonical form")
}

fn text(s: impl Into<String>) -> Value {
    Value::String(s.into())
}

fn opt_number(n: Option<usize>) -> Value {
    n.map_or(Value::Null, |n| Value::Number(n as f64))
}

/// Error of a malformed call (a bug in the loader, never the caller's value).
fn abi_error(what: &str) -> Vec<u8> {
    object(vec![
        ("kind", text("abi")),
        ("message", text(format!("runcontext wasm: {what}"))),
    ])
}

fn canonical_error(error: &CanonicalError) -> Vec<u8> {
    // The core's messages for these two name Python types; a JavaScript caller gets its own.
    let message = match &error.kind {
        CanonicalErrorKind::UnsupportedType(t) => format!(
            "{}: a value of type {t} has no JSON form; convert it to a plain object, an array, a \
             string, a finite number, a boolean or null first",
            error.path
        ),
        _ => error.to_string(),
    };
    object(vec![
        ("kind", text(error.kind.id())),
        ("path", text(error.path.to_string())),
        ("message", text(message)),
    ])
}

// --- canonical JSON of JavaScript values --------------------------------------------------

/// Writes the canonical JSON of `node`, refusing as FORMAT.md § 1.6 orders: a container's
/// depth, then an object's keys in the caller's order, then its values in canonical order.
fn write_node(out: &mut Vec<u8>, node: &Node, depth: usize) -> Result<(), CanonicalError> {
    let unsupported = |t: &str| CanonicalError::new(CanonicalErrorKind::UnsupportedType(t.into()));
    match node {
        Node::Null => out.extend_from_slice(b"null"),
        Node::Bool(true) => out.extend_from_slice(b"true"),
        Node::Bool(false) => out.extend_from_slice(b"false"),
        Node::Number(v) => write_f64(out, *v)?,
        Node::BigInt(digits) => match digits.parse::<i64>() {
            Ok(v) if v.abs() <= MAX_SAFE_INTEGER => write_i64(out, v)?,
            _ => {
                return Err(CanonicalError::new(CanonicalErrorKind::IntegerOutOfRange(
                    (*digits).to_owned(),
                )))
            }
        },
        Node::Str(s) => write_str(out, s),
        Node::LoneStr => return Err(CanonicalError::new(CanonicalErrorKind::LoneSurrogate)),
        Node::Array(items) => write_array(out, items.len(), depth, |out, i, depth| {
            write_node(out, &items[i], depth).map(|()| 1)
        })?,
        Node::Object(members) => {
            enter(depth)?;
            let mut keyed = Vec::with_capacity(members.len());
            for (key, value) in members {
                match key {
                    Key::Str(k) => keyed.push((*k, value)),
                    Key::Lone => {
                        return Err(CanonicalError::new(CanonicalErrorKind::LoneSurrogate))
                    }
                }
            }
            write_object(out, &mut keyed, depth, |out, v, depth| {
                write_node(out, v, depth)
            })?
        }
        Node::Undefined => return Err(unsupported("undefined")),
        Node::Other(t) | Node::MapLike(t) | Node::SetLike(t) => return Err(unsupported(t)),
    }
    Ok(())
}

fn canonical_of(input: &[u8]) -> Result<Vec<u8>, Vec<u8>> {
    let node = decode(input).map_err(|e| abi_error(&e))?;
    let mut out = Vec::with_capacity(input.len() + 16);
    write_node(&mut out, &node, 0).map_err(|e| canonical_error(&e))?;
    Ok(out)
}

/// The canonical JSON of the encoded value in the input.
#[no_mangle]
pub extern "C" fn rc_canonical_json() -> u32 {
    call(canonical_of)
}

/// `blake3:<hex>` of the canonical JSON of the encoded value in the input.
#[no_mangle]
pub extern "C" fn rc_digest() -> u32 {
    call(|input| canonical_of(input).map(|bytes| digest_bytes(&bytes).into_bytes()))
}

/// `blake3:<hex>` of the input bytes.
#[no_mangle]
pub extern "C" fn rc_digest_bytes() -> u32 {
    call(|input| Ok(digest_bytes(input).into_bytes()))
}

/// Fields: a 32-byte key, then bytes. `blake3-keyed:<hex>` of the bytes.
#[no_mangle]
pub extern "C" fn rc_keyed_digest_bytes() -> u32 {
    call(|input| {
        let mut fields = Fields(input);
        let key = fields.key()?;
        Ok(keyed_digest_bytes(&key, fields.next()?).into_bytes())
    })
}

/// Fields: a 32-byte key, then an encoded value: `blake3-keyed:<hex>` of its canonical JSON.
#[no_mangle]
pub extern "C" fn rc_keyed_digest() -> u32 {
    call(|input| {
        let mut fields = Fields(input);
        let key = fields.key()?;
        let bytes = canonical_of(fields.next()?)?;
        Ok(keyed_digest_bytes(&key, &bytes).into_bytes())
    })
}

fn parse_error(e: &runcontext_core::ParseError) -> Vec<u8> {
    object(vec![
        ("kind", text(e.kind.id())),
        ("path", text(e.path.to_string())),
        ("line", Value::Number(e.line as f64)),
        ("column", Value::Number(e.column as f64)),
        ("offset", Value::Number(e.offset as f64)),
        ("message", text(e.to_string())),
    ])
}

/// The canonical form of the JSON text in the input, by the core's strict parser.
#[no_mangle]
pub extern "C" fn rc_canonicalize_text() -> u32 {
    call(|input| canonicalize_text(input).map_err(|e| parse_error(&e)))
}

/// [`rc_canonicalize_text`] of a JavaScript string holding a lone surrogate, given as its
/// UTF-8 with each lone surrogate as the three bytes UTF-8 would give its code point (as
/// Python's `surrogatepass` encodes a `str`). The refusal is the one those bytes get, with
/// `invalid-utf8` named `lone-surrogate`, as the Python binding names it for a `str`.
#[no_mangle]
pub extern "C" fn rc_canonicalize_string() -> u32 {
    call(|input| match canonicalize_text(input) {
        Err(mut e) => {
            if e.kind == ParseErrorKind::InvalidUtf8 {
                e.kind = ParseErrorKind::Canonical(CanonicalErrorKind::LoneSurrogate);
            }
            Err(parse_error(&e))
        }
        Ok(_) => Err(canonical_error(&CanonicalError::new(
            CanonicalErrorKind::LoneSurrogate,
        ))),
    })
}

// --- RunContext -----------------------------------------------------------------------------

impl ArgNode for Node<'_> {
    type Error = std::convert::Infallible;
    type Text = String;

    fn shape(&self, limit: usize) -> Result<Shape<Self, String>, Self::Error> {
        Ok(match self {
            Node::Null | Node::Undefined => Shape::Null,
            Node::Str(s) => Shape::Str((*s).to_owned()),
            Node::LoneStr => Shape::NotText,
            Node::Array(items) => Shape::Seq {
                items: items
                    .iter()
                    .take(limit.saturating_add(1))
                    .cloned()
                    .collect(),
                len: Some(items.len()),
            },
            Node::Object(_) | Node::MapLike(_) => Shape::Mapping,
            Node::SetLike(_) => Shape::Unordered,
            Node::Bool(_) | Node::Number(_) | Node::BigInt(_) | Node::Other(_) => Shape::Other,
        })
    }

    fn type_name(&self) -> String {
        match self {
            Node::Null => "null".into(),
            Node::Undefined => "undefined".into(),
            Node::Bool(_) => "boolean".into(),
            Node::Number(_) => "number".into(),
            Node::BigInt(_) => "bigint".into(),
            Node::Str(_) | Node::LoneStr => "string".into(),
            Node::Array(_) => "Array".into(),
            Node::Object(_) => "Object".into(),
            Node::Other(t) | Node::MapLike(t) | Node::SetLike(t) => (*t).to_owned(),
        }
    }
}

/// An argument, or `None` for null and undefined (the default: empty).
fn present<'n, 'a>(node: &'n Node<'a>) -> Option<&'n Node<'a>> {
    (!matches!(node, Node::Null | Node::Undefined)).then_some(node)
}

/// The JavaScript name of a constructor argument.
fn js_argument(arg: runcontext_core::Arg) -> &'static str {
    match arg {
        runcontext_core::Arg::HeadSections => "headSections",
        runcontext_core::Arg::Facts => "facts",
        runcontext_core::Arg::TailSections => "tailSections",
    }
}

fn pairs(entries: &[(String, String)]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|(n, v)| Value::Array(vec![text(n.clone()), text(v.clone())]))
            .collect(),
    )
}

/// A context as the JavaScript `RunContext` holds it (canonical JSON, for `JSON.parse`).
fn context_json(rc: &RunContext) -> Vec<u8> {
    let opt = |s: Option<&str>| s.map_or(Value::Null, text);
    let sections = rc
        .sections()
        .iter()
        .map(|s| {
            Value::Object(vec![
                ("name".into(), text(s.name.clone())),
                ("digest".into(), text(s.digest.clone())),
                ("text".into(), text(s.text.clone())),
                ("position".into(), text(s.position.as_str())),
            ])
        })
        .collect();
    object(vec![
        ("headText", opt(rc.head_text())),
        ("tailText", opt(rc.tail_text())),
        ("digest", text(rc.digest())),
        ("headSections", pairs(rc.head_sections())),
        ("facts", pairs(rc.facts())),
        ("tailSections", pairs(rc.tail_sections())),
        ("sections", Value::Array(sections)),
    ])
}

/// The input: an encoded array `[headSections, facts, tailSections]` (each may be null or
/// undefined: empty). The context, or its error with `kind`, `argument`, `index`, `typeError`.
#[no_mangle]
pub extern "C" fn rc_runcontext() -> u32 {
    call(|input| {
        let node = decode(input).map_err(|e| abi_error(&e))?;
        let Node::Array(args) = node else {
            return Err(abi_error("runcontext arguments are not an array"));
        };
        let [head, facts, tail] = args.as_slice() else {
            return Err(abi_error("runcontext takes three arguments"));
        };
        let rc = RunContext::from_args(present(head), present(facts), present(tail)).map_err(
            |e| match e {
                ArgError::Invalid(e) => {
                    let keyword = e.arg().keyword();
                    let message = e.to_string();
                    let message = match message.strip_prefix(keyword) {
                        Some(rest) => format!("{}{rest}", js_argument(e.arg())),
                        None => message,
                    };
                    object(vec![
                        ("kind", text(e.kind())),
                        ("argument", text(js_argument(e.arg()))),
                        ("index", opt_number(e.index())),
                        ("typeError", Value::Bool(e.is_type_error())),
                        ("message", text(message)),
                    ])
                }
                ArgError::Host(never) => match never {},
            },
        )?;
        Ok(context_json(&rc))
    })
}

/// The context of kept entries a JavaScript `RunContext` holds: JSON text
/// `[[[name, text], …], [[name, value], …], [[name, text], …]]`.
fn context_from_entries(json: &[u8]) -> Result<RunContext, Vec<u8>> {
    let value = runcontext_core::parse(json).map_err(|e| abi_error(&e.to_string()))?;
    let lists: Vec<Vec<Entry>> = value
        .as_array()
        .unwrap_or_default()
        .iter()
        .map(|list| {
            list.as_array()
                .unwrap_or_default()
                .iter()
                .map(|pair| {
                    let pair = pair.as_array().unwrap_or_default();
                    let at = |i: usize| pair.get(i).and_then(Value::as_str).unwrap_or_default();
                    Entry::new(at(0), Some(at(1)))
                })
                .collect()
        })
        .collect();
    let [head, facts, tail]: [Vec<Entry>; 3] = lists
        .try_into()
        .map_err(|_| abi_error("a context is three lists of entries"))?;
    RunContext::new(head, facts, tail).map_err(|e| abi_error(&e.to_string()))
}

/// Fields: a 32-byte key, then a context's entries (as [`context_from_entries`] reads
/// them). `{"digest": …, "sectionDigests": […]}`, keyed (FORMAT.md § 2.1).
#[no_mangle]
pub extern "C" fn rc_keyed_context_digests() -> u32 {
    call(|input| {
        let mut fields = Fields(input);
        let key = fields.key()?;
        let rc = context_from_entries(fields.next()?)?;
        let digests =
            keyed_context_digests(&key, rc.head_sections(), rc.facts(), rc.tail_sections());
        Ok(object(vec![
            ("digest", text(format_keyed_digest(&digests.digest))),
            (
                "sectionDigests",
                Value::Array(
                    digests
                        .sections
                        .iter()
                        .map(|d| text(format_keyed_digest(d)))
                        .collect(),
                ),
            ),
        ]))
    })
}

// --- transcripts ----------------------------------------------------------------------------

/// A new transcript state with a line cap of `max_line_bytes`; returns its handle.
#[no_mangle]
pub extern "C" fn rc_transcript_new(max_line_bytes: usize) -> u32 {
    TRANSCRIPTS.with(|all| {
        let mut all = all.borrow_mut();
        let state = Some(tr::Transcript::with_max_line_bytes(max_line_bytes));
        match all.iter().position(Option::is_none) {
            Some(free) => {
                all[free] = state;
                free as u32
            }
            None => {
                all.push(state);
                (all.len() - 1) as u32
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn rc_transcript_free(handle: u32) {
    TRANSCRIPTS.with(|all| {
        if let Some(slot) = all.borrow_mut().get_mut(handle as usize) {
            *slot = None;
        }
    });
}

fn with_transcript(handle: u32, f: impl FnOnce(&mut tr::Transcript, &[u8]) -> Outcome) -> u32 {
    call(|input| {
        TRANSCRIPTS.with(|all| match all.borrow_mut().get_mut(handle as usize) {
            Some(Some(state)) => f(state, input),
            _ => Err(abi_error("no such transcript handle")),
        })
    })
}

fn write_error(e: tr::WriteError) -> Vec<u8> {
    object(vec![("kind", Value::Null), ("message", text(e.0))])
}

/// `{"lines", "chain", "version", "seed", "messages", "runs"}` of a transcript state.
#[no_mangle]
pub extern "C" fn rc_transcript_state(handle: u32) -> u32 {
    with_transcript(handle, |state, _| {
        Ok(object(vec![
            ("lines", Value::Number(state.lines() as f64)),
            ("chain", text(state.chain())),
            ("version", Value::Number(f64::from(state.version()))),
            ("seed", text(state.seed())),
            ("messages", Value::Number(state.messages() as f64)),
            ("runs", Value::Number(state.runs() as f64)),
        ]))
    })
}

/// Verifies one line (without its `\n`) and takes it in. The output is one tag byte and its
/// data: `h` + the header's time; `m` + the message's canonical JSON; `s` (a section); `r` +
/// the run as canonical JSON; `c` (a compaction) + `{"end","mode","start","time","tokens"}`
/// and then each replacement message, every part after a `\n`; `e` (an elision) +
/// `{"indices","time"}` and then each stub after a `\n` (canonical JSON holds no raw `\n`).
/// An error is `{"kind", "line", "message"}`.
#[no_mangle]
pub extern "C" fn rc_transcript_read(handle: u32) -> u32 {
    with_transcript(handle, |state, line| {
        let item = state.read_line(line).map_err(|e| {
            object(vec![
                ("kind", text(e.kind.id())),
                ("line", Value::Number(e.line as f64)),
                ("message", text(e.message)),
            ])
        })?;
        Ok(match item {
            Item::Header { time, .. } => [b"h".as_slice(), time.as_bytes()].concat(),
            Item::Message { body, .. } => [b"m".as_slice(), &body].concat(),
            Item::Section { .. } => b"s".to_vec(),
            Item::Compaction(c) => {
                let tokens = c.tokens.map_or(Value::Null, |t| {
                    Value::Object(vec![
                        ("after".into(), Value::Number(t.after as f64)),
                        ("before".into(), Value::Number(t.before as f64)),
                        ("quality".into(), text(t.quality.as_str())),
                    ])
                });
                let mut out = b"c".to_vec();
                out.extend(object(vec![
                    ("end", Value::Number(c.end as f64)),
                    ("mode", text(c.mode.as_str())),
                    ("start", Value::Number(c.start as f64)),
                    ("time", text(c.time)),
                    ("tokens", tokens),
                ]));
                for message in c.messages {
                    out.push(b'\n');
                    out.extend(message);
                }
                out
            }
            Item::Elision(e) => {
                let indices = e
                    .items
                    .iter()
                    .map(|(i, _)| Value::Number(*i as f64))
                    .collect();
                let mut out = b"e".to_vec();
                out.extend(object(vec![
                    ("indices", Value::Array(indices)),
                    ("time", text(e.time)),
                ]));
                for (_, stub) in e.items {
                    out.push(b'\n');
                    out.extend(stub);
                }
                out
            }
            Item::Run(envelope) => {
                let rc = state.context_of(&envelope).map_err(|e| abi_error(&e))?;
                let tokens = envelope.tokens.as_ref().map_or(Value::Null, |t| {
                    let mut json = Vec::new();
                    t.write(&mut json);
                    runcontext_core::parse(&json).expect("the core writes valid JSON")
                });
                let context = runcontext_core::parse(&context_json(&rc)).expect("valid JSON");
                let mut out = b"r".to_vec();
                out.extend(object(vec![
                    ("run", Value::Number(envelope.run as f64)),
                    ("digest", text(envelope.digest)),
                    ("time", text(envelope.time)),
                    ("messages", Value::Number(envelope.messages as f64)),
                    ("tokens", tokens),
                    ("context", context),
                ]));
                out
            }
        })
    })
}

#[no_mangle]
pub extern "C" fn rc_transcript_begin(handle: u32) -> u32 {
    with_transcript(handle, |state, _| {
        state.begin();
        Ok(Vec::new())
    })
}

#[no_mangle]
pub extern "C" fn rc_transcript_commit(handle: u32) -> u32 {
    with_transcript(handle, |state, _| {
        state.commit();
        Ok(Vec::new())
    })
}

#[no_mangle]
pub extern "C" fn rc_transcript_rollback(handle: u32) -> u32 {
    with_transcript(handle, |state, _| {
        state.rollback();
        Ok(Vec::new())
    })
}

/// Fields: seed, time. The header line.
#[no_mangle]
pub extern "C" fn rc_transcript_write_header(handle: u32) -> u32 {
    with_transcript(handle, |state, input| {
        let mut fields = Fields(input);
        let seed = fields.str()?;
        let time = fields.str()?;
        state.write_header(seed, time).map_err(write_error)
    })
}

/// The input: a message's canonical JSON. Its line.
#[no_mangle]
pub extern "C" fn rc_transcript_write_message(handle: u32) -> u32 {
    with_transcript(handle, |state, message| {
        state.write_message(message).map_err(write_error)
    })
}

/// Fields: the index the message would have, its canonical JSON. Refuses what
/// `rc_transcript_write_message` would refuse, writing nothing.
#[no_mangle]
pub extern "C" fn rc_transcript_check_message(handle: u32) -> u32 {
    with_transcript(handle, |state, input| {
        let mut fields = Fields(input);
        let index = fields.str()?.parse().map_err(|_| abi_error("index"))?;
        let message = fields.next()?;
        state.check_message(message, index).map_err(write_error)?;
        Ok(Vec::new())
    })
}

/// Fields: the context's entries (as [`context_from_entries`] reads them), the time, the
/// conversation's length (decimal), the `tokens` member's canonical JSON or nothing. The
/// section lines the transcript does not hold yet and the run-context line, concatenated.
#[no_mangle]
pub extern "C" fn rc_transcript_write_run(handle: u32) -> u32 {
    with_transcript(handle, |state, input| {
        let mut fields = Fields(input);
        let rc = context_from_entries(fields.next()?)?;
        let time = fields.str()?;
        let messages = fields.str()?.parse().map_err(|_| abi_error("messages"))?;
        let tokens = fields.next()?;
        let tokens = if tokens.is_empty() {
            None
        } else {
            let value = runcontext_core::parse(tokens)
                .map_err(|e| write_error(tr::WriteError(format!("tokens: {e}"))))?;
            Some(
                runcontext_core::tokens::Tokens::from_value(&value)
                    .map_err(|why| write_error(tr::WriteError(format!("tokens: {why}"))))?,
            )
        };
        let mut out = Vec::new();
        for line in state.write_sections(&rc).map_err(write_error)? {
            out.extend(line);
        }
        out.extend(
            state
                .write_run(&rc, time, messages, tokens.as_ref())
                .map_err(write_error)?,
        );
        Ok(out)
    })
}

/// Length-prefixed fields (a little-endian u32 length, then that many bytes), in order.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn next(&mut self) -> Result<&'a [u8], Vec<u8>> {
        let bad = || abi_error("truncated fields");
        let len = self.0.get(..4).ok_or_else(bad)?;
        let len = u32::from_le_bytes(len.try_into().map_err(|_| bad())?) as usize;
        let field = self.0.get(4..4 + len).ok_or_else(bad)?;
        self.0 = &self.0[4 + len..];
        Ok(field)
    }

    fn str(&mut self) -> Result<&'a str, Vec<u8>> {
        std::str::from_utf8(self.next()?).map_err(|_| abi_error("a field is not UTF-8"))
    }

    fn key(&mut self) -> Result<[u8; KEY_LEN], Vec<u8>> {
        self.next()?
            .try_into()
            .map_err(|_| abi_error("a key is not 32 bytes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: extern "C" fn() -> u32, input: &[u8]) -> (u32, Vec<u8>) {
        INPUT.with(|i| *i.borrow_mut() = input.to_vec());
        let status = f();
        (status, OUTPUT.with(|o| o.borrow().clone()))
    }

    #[test]
    fn canonicalizes_text_and_reports_errors() {
        assert_eq!(
            run(rc_canonicalize_text, br#"{"b":1.0,"a":[1e21]}"#),
            (0, br#"{"a":[1e+21],"b":1}"#.to_vec())
        );
        let (status, error) = run(rc_canonicalize_text, b"[1,]");
        assert_eq!(status, 1);
        assert!(String::from_utf8(error).unwrap().contains(r#""line":1"#));
    }
}
