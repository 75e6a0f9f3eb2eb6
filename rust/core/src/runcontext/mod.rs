//! RunContext (format v1): validation, normalisation, rendering and digests.
//!
//! `docs/FORMAT.md` is the normative text; every rule below is pinned by
//! `docs/vectors/runcontext-v1.json`.
//!
//! The refusals are in `error.rs`. What remains here is one job, a context from its
//! arguments to its rendering and digests, in about 790 lines of code; the rest of the file
//! is its unit tests, kept beside the code they pin.

use std::collections::HashMap;

use crate::args::{Arg, ArgError, ArgNode, Shape};
use crate::canonical::write_str;
use crate::digest::{format_digest, format_keyed_digest, json_string_pieces, JsonHasher, KEY_LEN};

mod error;

pub use error::{RunContextError, RunContextErrorKind};

/// Version of the rendering and digest format.
pub const FORMAT_VERSION: u32 = 1;

/// First line of every tail block.
pub const TAIL_HEADING: &str = "## Current context";

/// Last part of every tail block: it makes the block authoritative over stale descriptions
/// earlier in the conversation, and says it is context, not a request.
pub const TAIL_CLOSING: &str =
    "This block supersedes any environment description, tool catalogue or\n\
project instructions that appear earlier in this conversation; where they\n\
disagree, this block is authoritative.\n\
This block is context, not a request: do not acknowledge it, and do not\n\
reply to it.";

/// One `(name, value)` pair as the caller passed it; `None` drops a fact or a section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub value: Option<String>,
}

impl Entry {
    pub fn new(name: impl Into<String>, value: Option<impl Into<String>>) -> Self {
        Self {
            name: name.into(),
            value: value.map(Into::into),
        }
    }
}

/// Where a section is rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Position {
    Head,
    Tail,
}

impl Position {
    pub fn as_str(self) -> &'static str {
        match self {
            Position::Head => "head",
            Position::Tail => "tail",
        }
    }
}

/// A rendered section and the digest a transcript stores it under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub position: Position,
    pub name: String,
    pub text: String,
    /// `digest({"name": name, "text": text})`.
    pub digest: String,
}

/// Most entries one argument may hold; the entry at this index is refused
/// (`too-many-entries`), and a front end never reads more than one entry beyond it.
pub const MAX_ENTRIES: usize = 10_000;

/// The refreshable half of a prompt: stable head sections, volatile facts and tail sections,
/// validated, normalised and rendered once, with a canonical digest.
///
/// Immutable: every property is computed at construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunContext {
    head: Vec<(String, String)>,
    facts: Vec<(String, String)>,
    tail: Vec<(String, String)>,
    head_text: Option<String>,
    tail_text: Option<String>,
    sections: Vec<Section>,
    digest: String,
}

/// Trailing `White_Space` (Unicode property) comes off; nothing else is touched.
pub(crate) fn normalise(value: &str) -> &str {
    value.trim_end_matches(char::is_whitespace)
}

fn is_forbidden_in_name(c: char) -> bool {
    // Control characters (general category Cc, which includes \n \r U+0085) and the two
    // Unicode line breaks outside Cc.
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}

/// A value or section text as the rules keep it: the caller's text, and how much of it
/// normalisation (§ 3.3) keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept<T> {
    raw: T,
    len: usize,
}

impl<T: AsRef<str>> Kept<T> {
    fn new(raw: T) -> Self {
        let len = normalise(raw.as_ref()).len();
        Self { raw, len }
    }

    /// The normalised text.
    pub fn as_str(&self) -> &str {
        &self.raw.as_ref()[..self.len]
    }

    /// The text as the caller passed it.
    pub fn raw(&self) -> &T {
        &self.raw
    }

    /// True when normalisation removed nothing: the caller's text is the kept text.
    pub fn is_whole(&self) -> bool {
        self.len == self.raw.as_ref().len()
    }
}

/// The entries a RunContext keeps (names validated, values normalised, dropped entries
/// gone), in order, before anything is rendered or hashed: what
/// [`RunContext::validate`] returns to a front end that renders and hashes them itself,
/// holding on to its own text objects rather than copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptEntries<T> {
    pub head: Vec<(T, Kept<T>)>,
    pub facts: Vec<(T, Kept<T>)>,
    pub tail: Vec<(T, Kept<T>)>,
}

/// Collects validated entries, in order, for the three arguments.
struct Collector<T> {
    head: Vec<(T, Option<Kept<T>>)>,
    facts: Vec<(T, Option<Kept<T>>)>,
    tail: Vec<(T, Option<Kept<T>>)>,
    // Where each name was first used, for duplicate messages: one namespace for the facts,
    // one for head and tail sections together. Filled only once a namespace holds
    // SCAN_NAMES names (see `first_use`).
    fact_names: HashMap<String, usize>,
    section_names: HashMap<String, (Arg, usize)>,
}

/// Below this many names in a namespace, a duplicate is found by comparing with each earlier
/// name (an entry's index is its position in its vector) rather than in a map of owned
/// names: hashing and copying every name would be a large part of a small context's cost.
const SCAN_NAMES: usize = 16;

impl<T> Default for Collector<T> {
    fn default() -> Self {
        Self {
            head: Vec::new(),
            facts: Vec::new(),
            tail: Vec::new(),
            fact_names: HashMap::new(),
            section_names: HashMap::new(),
        }
    }
}

impl<T: AsRef<str>> Collector<T> {
    fn add(
        &mut self,
        arg: Arg,
        index: usize,
        name: T,
        value: Option<T>,
    ) -> Result<(), RunContextError> {
        use RunContextErrorKind as K;
        let at = |name: Option<&str>, kind| Err(RunContextError::entry(arg, index, name, kind));
        let text = name.as_ref();
        if text.is_empty() {
            return at(None, K::EmptyName);
        }
        if text.chars().any(is_forbidden_in_name) {
            return at(Some(text), K::NameControl);
        }
        if text.starts_with(char::is_whitespace) || text.ends_with(char::is_whitespace) {
            return at(Some(text), K::NameWhitespace);
        }
        let (first, indexed) = self.first_use(arg, text);
        if let Some((first_arg, first_index)) = first {
            let kind = K::DuplicateName {
                first_arg,
                first_index,
            };
            return at(Some(text), kind);
        }
        let value = value.map(Kept::new);
        if indexed && arg == Arg::Facts {
            self.fact_names.insert(text.to_owned(), index);
        } else if indexed {
            self.section_names.insert(text.to_owned(), (arg, index));
        }
        match arg {
            Arg::HeadSections => self.head.push((name, value)),
            Arg::TailSections => self.tail.push((name, value)),
            Arg::Facts => self.facts.push((name, value)),
        }
        Ok(())
    }

    /// Where `text` was first used in `arg`'s namespace, and whether that namespace is now
    /// looked up in its map (the new name must then be added to it).
    fn first_use(&mut self, arg: Arg, text: &str) -> (Option<(Arg, usize)>, bool) {
        let position = |entries: &[(T, Option<Kept<T>>)]| {
            entries.iter().position(|(name, _)| name.as_ref() == text)
        };
        if arg == Arg::Facts {
            if self.facts.len() < SCAN_NAMES {
                return (position(&self.facts).map(|i| (Arg::Facts, i)), false);
            }
            if self.fact_names.is_empty() {
                for (i, (name, _)) in self.facts.iter().enumerate() {
                    self.fact_names.insert(name.as_ref().to_owned(), i);
                }
            }
            return (self.fact_names.get(text).map(|&i| (Arg::Facts, i)), true);
        }
        if self.head.len() + self.tail.len() < SCAN_NAMES {
            let first = match position(&self.head) {
                Some(i) => Some((Arg::HeadSections, i)),
                None => position(&self.tail).map(|i| (Arg::TailSections, i)),
            };
            return (first, false);
        }
        if self.section_names.is_empty() {
            for (part, entries) in [
                (Arg::HeadSections, &self.head),
                (Arg::TailSections, &self.tail),
            ] {
                for (i, (name, _)) in entries.iter().enumerate() {
                    self.section_names
                        .insert(name.as_ref().to_owned(), (part, i));
                }
            }
        }
        (self.section_names.get(text).copied(), true)
    }

    fn finish(self) -> KeptEntries<T> {
        // Empty is empty: a section with no text is dropped; a fact is dropped only for None.
        let keep_sections = |entries: Vec<(T, Option<Kept<T>>)>| -> Vec<(T, Kept<T>)> {
            entries
                .into_iter()
                .filter_map(|(n, t)| t.filter(|t| t.len > 0).map(|t| (n, t)))
                .collect()
        };
        KeptEntries {
            head: keep_sections(self.head),
            tail: keep_sections(self.tail),
            facts: self
                .facts
                .into_iter()
                .filter_map(|(n, v)| v.map(|v| (n, v)))
                .collect(),
        }
    }
}

impl KeptEntries<String> {
    fn into_context(self) -> RunContext {
        let owned = |entries: Vec<(String, Kept<String>)>| -> Vec<(String, String)> {
            entries
                .into_iter()
                .map(|(n, mut t)| {
                    t.raw.truncate(t.len);
                    (n, t.raw)
                })
                .collect()
        };
        RunContext::render(owned(self.head), owned(self.facts), owned(self.tail))
    }
}

impl RunContext {
    /// Builds a context from entries a Rust program already holds. Names are validated,
    /// values normalised; `None` drops an entry but its name stays taken.
    pub fn new(
        head: Vec<Entry>,
        facts: Vec<Entry>,
        tail: Vec<Entry>,
    ) -> Result<Self, RunContextError> {
        let pairs = |entries: Vec<Entry>| -> Vec<(String, Option<String>)> {
            entries.into_iter().map(|e| (e.name, e.value)).collect()
        };
        Ok(Self::keep(pairs(head), pairs(facts), pairs(tail))?.into_context())
    }

    /// The rules of [`RunContext::new`] without the rendering: the entries it would keep,
    /// each text still the caller's (a reader that only judges entries builds nothing).
    pub fn keep<T: AsRef<str>>(
        head: Vec<(T, Option<T>)>,
        facts: Vec<(T, Option<T>)>,
        tail: Vec<(T, Option<T>)>,
    ) -> Result<KeptEntries<T>, RunContextError> {
        let mut collector = Collector::default();
        for (arg, entries) in [
            (Arg::HeadSections, head),
            (Arg::Facts, facts),
            (Arg::TailSections, tail),
        ] {
            if entries.len() > MAX_ENTRIES {
                let kind = RunContextErrorKind::TooManyEntries;
                return Err(RunContextError::entry(arg, MAX_ENTRIES, None, kind));
            }
            for (index, (name, value)) in entries.into_iter().enumerate() {
                collector.add(arg, index, name, value)?;
            }
        }
        Ok(collector.finish())
    }

    /// Builds a context from front-end values, applying the shape rules of [`crate::args`]
    /// first. `None` for an argument means empty.
    ///
    /// Order of checks (the conformance vectors rely on it): the arguments in the order
    /// head_sections, facts, tail_sections; for each, its own shape, then each entry in turn:
    /// pair shape, name type, value type, name rules, duplicates.
    pub fn from_args<N: ArgNode<Text = String>>(
        head: Option<&N>,
        facts: Option<&N>,
        tail: Option<&N>,
    ) -> Result<Self, ArgError<N::Error>> {
        Ok(Self::validate(head, facts, tail)?.into_context())
    }

    /// The rules of [`RunContext::from_args`] without the rendering: the kept entries, each
    /// text still the front end's own handle (`N::Text`). A front end that keeps its own
    /// text objects renders them with [`render_head`] and [`render_tail`] and hashes them
    /// with [`context_digests`], which give what a [`RunContext`] built from them would.
    pub fn validate<N: ArgNode>(
        head: Option<&N>,
        facts: Option<&N>,
        tail: Option<&N>,
    ) -> Result<KeptEntries<N::Text>, ArgError<N::Error>> {
        let mut collector = Collector::default();
        for (arg, node) in [
            (Arg::HeadSections, head),
            (Arg::Facts, facts),
            (Arg::TailSections, tail),
        ] {
            if let Some(node) = node {
                add_pairs(&mut collector, arg, node)?;
            }
        }
        Ok(collector.finish())
    }

    fn render(
        head: Vec<(String, String)>,
        facts: Vec<(String, String)>,
        tail: Vec<(String, String)>,
    ) -> Self {
        let mut head_text = String::new();
        let head_text =
            render_head(&head, &mut |piece| head_text.push_str(piece)).then_some(head_text);
        let mut tail_text = String::new();
        let tail_text =
            render_tail(&facts, &tail, &mut |piece| tail_text.push_str(piece)).then_some(tail_text);
        let digests = context_digests(&head, &facts, &tail);
        let sections = head
            .iter()
            .map(|e| (Position::Head, e))
            .chain(tail.iter().map(|e| (Position::Tail, e)))
            .zip(&digests.sections)
            .map(|((position, (name, text)), digest)| Section {
                position,
                digest: format_digest(digest),
                name: name.clone(),
                text: text.clone(),
            })
            .collect();
        let digest = format_digest(&digests.digest);
        RunContext {
            head,
            facts,
            tail,
            head_text,
            tail_text,
            sections,
            digest,
        }
    }

    /// Head sections that were kept, normalised, in order.
    pub fn head_sections(&self) -> &[(String, String)] {
        &self.head
    }

    /// Facts that were kept (value not `None`), normalised, in order.
    pub fn facts(&self) -> &[(String, String)] {
        &self.facts
    }

    /// Tail sections that were kept, normalised, in order.
    pub fn tail_sections(&self) -> &[(String, String)] {
        &self.tail
    }

    /// The head sections' texts joined by a blank line, or `None` when there are none.
    pub fn head_text(&self) -> Option<&str> {
        self.head_text.as_deref()
    }

    /// The tail block, or `None` when there are no facts and no tail sections.
    pub fn tail_text(&self) -> Option<&str> {
        self.tail_text.as_deref()
    }

    /// Every kept section, head first, with its digest.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// The digest of each kept section, in [`RunContext::sections`] order (head first).
    pub fn section_digests(&self) -> impl ExactSizeIterator<Item = &str> {
        self.sections.iter().map(|s| s.digest.as_str())
    }

    /// True when the context would send neither a head nor a tail message: no head section
    /// and no tail section has text, and every fact is `None`.
    pub fn is_empty(&self) -> bool {
        self.head_text.is_none() && self.tail_text.is_none()
    }

    /// The digest of the canonical document (see [`RunContext::canonical_document`]).
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The canonical JSON document the digest is taken of:
    /// `{"facts":[[n,v],…],"head":[[n,t],…],"tail":[[n,t],…],"v":1}`.
    pub fn canonical_document(&self) -> Vec<u8> {
        document(&self.head, &self.facts, &self.tail)
    }
}

/// Writes `head_text` (§ 3.5) piece by piece into `out`: the head sections' texts joined by
/// a blank line. Returns false, writing nothing, when there is no head text (no section).
pub fn render_head<A: AsRef<str>, B: AsRef<str>>(
    head: &[(A, B)],
    out: &mut dyn FnMut(&str),
) -> bool {
    for (i, (_, text)) in head.iter().enumerate() {
        if i > 0 {
            out("\n\n");
        }
        out(text.as_ref());
    }
    !head.is_empty()
}

/// Writes `tail_text` (§ 3.5) piece by piece into `out`. Returns false, writing nothing,
/// when there is no tail text (no fact and no tail section).
pub fn render_tail<A: AsRef<str>, B: AsRef<str>, C: AsRef<str>, D: AsRef<str>>(
    facts: &[(A, B)],
    tail: &[(C, D)],
    out: &mut dyn FnMut(&str),
) -> bool {
    if facts.is_empty() && tail.is_empty() {
        return false;
    }
    out(TAIL_HEADING);
    for (i, (name, value)) in facts.iter().enumerate() {
        out(if i == 0 { "\n\n- " } else { "\n- " });
        out(name.as_ref());
        out(":");
        if !value.as_ref().is_empty() {
            out(" ");
            out(value.as_ref());
        }
    }
    for (_, text) in tail {
        out("\n\n");
        out(text.as_ref());
    }
    out("\n\n");
    out(TAIL_CLOSING);
    true
}

/// The BLAKE3 hashes of a context made of kept, normalised entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextDigests {
    /// Of the canonical document (§ 3.6).
    pub digest: [u8; 32],
    /// Of `{"name": name, "text": text}` for each section, head first.
    pub sections: Vec<[u8; 32]>,
}

/// Both digests of § 3.6 in one pass over the texts: each section text is escaped once, a
/// block at a time, and every block goes to the document's hasher and to the section's, so
/// neither the canonical document nor a section's JSON is ever built.
pub fn context_digests<A: AsRef<str>, B: AsRef<str>, C: AsRef<str>, D: AsRef<str>>(
    head: &[(A, B)],
    facts: &[(C, D)],
    tail: &[(A, B)],
) -> ContextDigests {
    hash_document(None, head, facts, tail, true)
}

/// [`context_digests`] in BLAKE3's keyed mode with `key`, over the same canonical bytes
/// (FORMAT.md § 2.1): format each hash with
/// [`format_keyed_digest`](crate::digest::format_keyed_digest).
pub fn keyed_context_digests<A: AsRef<str>, B: AsRef<str>, C: AsRef<str>, D: AsRef<str>>(
    key: &[u8; KEY_LEN],
    head: &[(A, B)],
    facts: &[(C, D)],
    tail: &[(A, B)],
) -> ContextDigests {
    hash_document(Some(key), head, facts, tail, true)
}

fn hash_document<A: AsRef<str>, B: AsRef<str>, C: AsRef<str>, D: AsRef<str>>(
    key: Option<&[u8; KEY_LEN]>,
    head: &[(A, B)],
    facts: &[(C, D)],
    tail: &[(A, B)],
    with_sections: bool,
) -> ContextDigests {
    // Written in canonical form directly: the keys are already in sorted order.
    let mut doc = JsonHasher::new_keyed(key);
    let mut sections = Vec::with_capacity(if with_sections {
        head.len() + tail.len()
    } else {
        0
    });
    doc.raw(b"{\"facts\":[");
    for (i, (name, value)) in facts.iter().enumerate() {
        doc.raw(if i == 0 { b"[" } else { b",[" });
        doc.string(name.as_ref());
        doc.raw(b",");
        doc.string(value.as_ref());
        doc.raw(b"]");
    }
    for (member, part) in [(&b"],\"head\":["[..], head), (&b"],\"tail\":["[..], tail)] {
        doc.raw(member);
        for (i, (name, text)) in part.iter().enumerate() {
            let (name, text) = (name.as_ref(), text.as_ref());
            doc.raw(if i == 0 { b"[" } else { b",[" });
            doc.string(name);
            doc.raw(b",");
            if with_sections {
                let mut section = JsonHasher::new_keyed(key);
                section.raw(b"{\"name\":");
                section.string(name);
                section.raw(b",\"text\":");
                json_string_pieces(text, &mut |piece| {
                    doc.raw(piece);
                    section.raw(piece);
                });
                section.raw(b"}");
                sections.push(section.finalize());
            } else {
                doc.string(text);
            }
            doc.raw(b"]");
        }
    }
    doc.raw(b"],\"v\":");
    doc.raw(FORMAT_VERSION.to_string().as_bytes());
    doc.raw(b"}");
    ContextDigests {
        digest: doc.finalize(),
        sections,
    }
}

fn write_pairs<A: AsRef<str>, B: AsRef<str>>(out: &mut Vec<u8>, pairs: &[(A, B)]) {
    out.push(b'[');
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'[');
        write_str(out, name.as_ref());
        out.push(b',');
        write_str(out, value.as_ref());
        out.push(b']');
    }
    out.push(b']');
}

fn pairs_size<A: AsRef<str>, B: AsRef<str>>(pairs: &[(A, B)]) -> usize {
    pairs
        .iter()
        .map(|(n, v)| n.as_ref().len() + v.as_ref().len() + 8)
        .sum()
}

// Written directly in canonical form: the keys are already in sorted order. Built only for
// `canonical_document`; the digests are hashed as they are written (`hash_document`).
fn document<S: AsRef<str>, T: AsRef<str>, F: AsRef<str>, G: AsRef<str>>(
    head: &[(S, T)],
    facts: &[(F, G)],
    tail: &[(S, T)],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + pairs_size(head) + pairs_size(facts) + pairs_size(tail));
    out.extend_from_slice(b"{\"facts\":");
    write_pairs(&mut out, facts);
    out.extend_from_slice(b",\"head\":");
    write_pairs(&mut out, head);
    out.extend_from_slice(b",\"tail\":");
    write_pairs(&mut out, tail);
    out.extend_from_slice(b",\"v\":");
    out.extend_from_slice(FORMAT_VERSION.to_string().as_bytes());
    out.push(b'}');
    out
}

/// The digest of the context that kept, normalised entries make, without rendering it: what
/// a transcript reader checks a run's envelope against (the caller has already checked that
/// the entries are what a [`RunContext`] would keep).
pub fn digest_of_kept<S: AsRef<str>, T: AsRef<str>, F: AsRef<str>, G: AsRef<str>>(
    head: &[(S, T)],
    facts: &[(F, G)],
    tail: &[(S, T)],
) -> String {
    format_digest(&hash_document(None, head, facts, tail, false).digest)
}

/// `digest({"name": name, "text": text})`: what a transcript stores a section body under.
pub fn section_digest(name: &str, text: &str) -> String {
    format_digest(&hash_section(None, name, text))
}

/// `keyed_digest(key, {"name": name, "text": text})`: the keyed form of [`section_digest`].
pub fn keyed_section_digest(key: &[u8; KEY_LEN], name: &str, text: &str) -> String {
    format_keyed_digest(&hash_section(Some(key), name, text))
}

fn hash_section(key: Option<&[u8; KEY_LEN]>, name: &str, text: &str) -> [u8; 32] {
    let mut section = JsonHasher::new_keyed(key);
    section.raw(b"{\"name\":");
    section.string(name);
    section.raw(b",\"text\":");
    section.string(text);
    section.raw(b"}");
    section.finalize()
}

/// `found` of a [`RunContextErrorKind::NotAPair`]: the type, and the length of a sequence.
fn describe<N: ArgNode>(shape: &Shape<N, N::Text>, node: &N) -> String {
    match shape {
        Shape::Seq { len: Some(len), .. } => format!("a {} of {len} items", node.type_name()),
        Shape::Seq { items, len: None } => format!(
            "a {} of more than {} items",
            node.type_name(),
            items.len().saturating_sub(1)
        ),
        _ => node.type_name(),
    }
}

/// The entries of one argument, after the rules on the argument as a whole: it is a
/// sequence, not one bare pair, and holds at most [`MAX_ENTRIES`] entries.
fn argument_items<N: ArgNode>(arg: Arg, node: &N) -> Result<Vec<N>, ArgError<N::Error>> {
    use RunContextErrorKind as K;
    let whole = |kind| Err(RunContextError::whole(arg, kind).into());
    let items = match node.shape(MAX_ENTRIES).map_err(ArgError::Host)? {
        Shape::Null => return Ok(Vec::new()),
        Shape::Seq { items, .. } => items,
        Shape::Mapping => return whole(K::Mapping),
        Shape::Unordered => {
            return whole(K::Unordered {
                type_name: node.type_name(),
            })
        }
        Shape::Str(_) | Shape::NotText | Shape::Other => {
            return whole(K::NotASequence {
                type_name: node.type_name(),
            })
        }
    };
    if items.len() > MAX_ENTRIES {
        return Err(RunContextError::entry(arg, MAX_ENTRIES, None, K::TooManyEntries).into());
    }
    Ok(items)
}

/// The name of a bare pair `(name, x)`: the whole argument is two items, the first text.
/// Returns `Ok(None)` when it is not one.
fn bare_pair_name<N: ArgNode>(items: &[N]) -> Result<Option<(String, bool)>, N::Error> {
    let [first, second] = items else {
        return Ok(None);
    };
    let Shape::Str(name) = first.shape(0)? else {
        return Ok(None);
    };
    let text_or_none = matches!(second.shape(0)?, Shape::Str(_) | Shape::Null);
    Ok(Some((name.as_ref().to_owned(), text_or_none)))
}

/// A name and its value (`None` for a `None` value), as the front end holds them.
type TextPair<N> = (<N as ArgNode>::Text, Option<<N as ArgNode>::Text>);

/// One entry, checked in the order of docs/FORMAT.md § 3.1: pair shape, name type, value
/// type, then whether both are text (name first). The name rules come after, in
/// [`Collector::add`].
fn entry<N: ArgNode>(
    arg: Arg,
    index: usize,
    item: &N,
    bare_name: Option<&str>,
) -> Result<TextPair<N>, ArgError<N::Error>> {
    use RunContextErrorKind as K;
    let at = |name: Option<&str>, kind| Err(RunContextError::entry(arg, index, name, kind).into());
    let pair = match item.shape(2).map_err(ArgError::Host)? {
        Shape::Seq {
            items,
            len: Some(2),
        } => items,
        other => {
            return at(
                None,
                K::NotAPair {
                    found: describe(&other, item),
                    bare_name: bare_name.map(str::to_owned),
                },
            )
        }
    };
    let (name, value) = (
        pair[0].shape(0).map_err(ArgError::Host)?,
        pair[1].shape(0).map_err(ArgError::Host)?,
    );
    if !matches!(name, Shape::Str(_) | Shape::NotText) {
        let type_name = pair[0].type_name();
        return at(None, K::NameType { type_name });
    }
    let name = match name {
        Shape::Str(name) => Some(name),
        _ => None,
    };
    if !matches!(value, Shape::Str(_) | Shape::NotText | Shape::Null) {
        let type_name = pair[1].type_name();
        return at(name.as_ref().map(AsRef::as_ref), K::ValueType { type_name });
    }
    let Some(name) = name else {
        return at(None, K::NotText);
    };
    match value {
        Shape::Str(value) => Ok((name, Some(value))),
        Shape::Null => Ok((name, None)),
        _ => at(Some(name.as_ref()), K::NotText),
    }
}

/// Applies the shape rules to one argument, a sequence of (name, str-or-None) pairs, and
/// adds each entry as soon as it is read, so that errors come in entry order.
fn add_pairs<N: ArgNode>(
    collector: &mut Collector<N::Text>,
    arg: Arg,
    node: &N,
) -> Result<(), ArgError<N::Error>> {
    let items = argument_items(arg, node)?;
    let bare_name = match bare_pair_name(&items).map_err(ArgError::Host)? {
        Some((name, true)) => {
            let kind = RunContextErrorKind::BarePair { name };
            return Err(RunContextError::whole(arg, kind).into());
        }
        Some((name, false)) => Some(name),
        None => None,
    };
    for (index, item) in items.iter().enumerate() {
        let bare_name = bare_name.as_deref().filter(|_| index == 0);
        let (name, value) = entry(arg, index, item, bare_name)?;
        collector.add(arg, index, name, value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::digest_bytes;

    fn e(name: &str, value: &str) -> Entry {
        Entry::new(name, Some(value))
    }

    #[test]
    fn renders_head_and_tail() {
        let rc = RunContext::new(
            vec![
                e("identity", "You are a careful agent.  \n"),
                e("empty", " \u{3000}"),
            ],
            vec![
                e("date", "2026-11-30"),
                e("note", ""),
                Entry::new("gone", None::<String>),
            ],
            vec![e("agents", "Use tabs.")],
        )
        .unwrap();
        assert_eq!(rc.head_text(), Some("You are a careful agent."));
        let expected =
            format!("{TAIL_HEADING}\n\n- date: 2026-11-30\n- note:\n\nUse tabs.\n\n{TAIL_CLOSING}");
        assert_eq!(rc.tail_text(), Some(expected.as_str()));
        assert_eq!(rc.sections().len(), 2);
        assert_eq!(rc.sections()[1].position, Position::Tail);
        assert!(!rc.is_empty());
        assert_eq!(
            rc.section_digests().collect::<Vec<_>>(),
            [
                section_digest("identity", "You are a careful agent."),
                section_digest("agents", "Use tabs.")
            ]
        );
        assert_eq!(
            String::from_utf8(rc.canonical_document()).unwrap(),
            r#"{"facts":[["date","2026-11-30"],["note",""]],"head":[["identity","You are a careful agent."]],"tail":[["agents","Use tabs."]],"v":1}"#
        );
    }

    #[test]
    fn empty_context_renders_nothing() {
        let rc = RunContext::new(vec![], vec![], vec![]).unwrap();
        assert_eq!((rc.head_text(), rc.tail_text()), (None, None));
        assert!(rc.is_empty());
        assert_eq!(rc.section_digests().len(), 0);
        // Dropped entries leave it empty; an empty fact value does not.
        let dropped = RunContext::new(
            vec![e("h", " \n")],
            vec![Entry::new("f", None::<String>)],
            vec![e("t", "")],
        )
        .unwrap();
        assert!(dropped.is_empty());
        assert!(!RunContext::new(vec![], vec![e("f", "")], vec![])
            .unwrap()
            .is_empty());
        assert_eq!(
            rc.digest(),
            digest_bytes(br#"{"facts":[],"head":[],"tail":[],"v":1}"#)
        );
    }

    #[test]
    fn normalisation_uses_white_space_exactly() {
        let rc = RunContext::new(
            vec![],
            vec![e("a", "x\u{1c}"), e("b", "y\u{a0}\t "), e("c", "  z")],
            vec![],
        )
        .unwrap();
        let values: Vec<&str> = rc.facts().iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(values, ["x\u{1c}", "y", "  z"]);
    }

    #[test]
    fn names_are_validated_and_unique() {
        let err = |r: Result<RunContext, RunContextError>| r.unwrap_err().kind();
        assert_eq!(
            err(RunContext::new(vec![], vec![e("", "x")], vec![])),
            "empty-name"
        );
        assert_eq!(
            err(RunContext::new(vec![], vec![e("a\nb", "x")], vec![])),
            "name-control"
        );
        assert_eq!(
            err(RunContext::new(vec![], vec![e("a\u{2028}", "x")], vec![])),
            "name-control"
        );
        assert_eq!(
            err(RunContext::new(vec![], vec![e(" a", "x")], vec![])),
            "name-whitespace"
        );
        let dup = RunContext::new(
            vec![Entry::new("s", None::<String>)],
            vec![],
            vec![e("s", "x")],
        )
        .unwrap_err();
        assert_eq!(
            dup.to_string(),
            "tail_sections[0] (\"s\"): duplicate name, already used by head_sections[0] (section names \
are unique across head and tail together; a dropped entry still owns its name)"
        );
        // Facts and sections are separate namespaces.
        assert!(RunContext::new(vec![e("date", "x")], vec![e("date", "y")], vec![]).is_ok());
    }

    #[test]
    fn duplicates_name_their_first_use_below_and_above_the_scan_limit() {
        // Names compared one by one below SCAN_NAMES and looked up in a map from there on:
        // every count around the limit, every earlier position, in both namespaces.
        let names = |n: usize| (0..n).map(|i| format!("n{i}")).collect::<Vec<_>>();
        let entries = |names: &[String]| -> Vec<Entry> {
            names
                .iter()
                .map(|n| Entry::new(n.clone(), Some("x")))
                .collect()
        };
        for count in [
            1,
            2,
            SCAN_NAMES - 1,
            SCAN_NAMES,
            SCAN_NAMES + 1,
            3 * SCAN_NAMES,
        ] {
            for first in 0..count {
                let mut facts = names(count);
                facts.push(facts[first].clone());
                let error = RunContext::new(vec![], entries(&facts), vec![]).unwrap_err();
                let expected = RunContextErrorKind::DuplicateName {
                    first_arg: Arg::Facts,
                    first_index: first,
                };
                assert_eq!((error.kind, error.index), (expected, Some(count)));
                // Sections: head then tail; the duplicate repeats a head or a tail name.
                let (head, mut tail) = (names(count), names(count + 1).split_off(count));
                tail[0] = format!("t{count}");
                for (repeat, first_arg, first_index) in [
                    (head[first].clone(), Arg::HeadSections, first),
                    (tail[0].clone(), Arg::TailSections, 0),
                ] {
                    let mut tail = tail.clone();
                    tail.push(repeat);
                    let error =
                        RunContext::new(entries(&head), vec![], entries(&tail)).unwrap_err();
                    let expected = RunContextErrorKind::DuplicateName {
                        first_arg,
                        first_index,
                    };
                    assert_eq!(
                        (error.arg, error.kind, error.index),
                        (Arg::TailSections, expected, Some(1))
                    );
                }
            }
            // No false duplicates: every name distinct passes at every count.
            let all = names(2 * count);
            let (head, tail) = all.split_at(count);
            assert!(RunContext::new(entries(head), entries(&names(count)), entries(tail)).is_ok());
        }
    }

    #[test]
    fn entries_are_bounded_and_types_come_before_text() {
        use crate::Value;
        let pair = |i: usize| Value::Array(vec![Value::from(format!("f{i}")), Value::Null]);
        let at_limit = Value::Array((0..MAX_ENTRIES).map(pair).collect());
        assert!(RunContext::from_args(None, Some(&at_limit), None).is_ok());
        let over = Value::Array(vec![Value::Null; MAX_ENTRIES + 1]);
        let Err(ArgError::Invalid(err)) = RunContext::from_args(None, None, Some(&over)) else {
            panic!("not refused")
        };
        assert_eq!(
            (err.kind(), err.index()),
            ("too-many-entries", Some(MAX_ENTRIES))
        );
        // A name that is not text, with a value of the wrong type: the type is reported.
        let lone = Value::Object(vec![(
            "utf16".into(),
            Value::Array(vec![Value::Number(55296.0)]),
        )]);
        let facts = Value::Array(vec![Value::Array(vec![lone.clone(), Value::Number(3.0)])]);
        let Err(ArgError::Invalid(err)) = RunContext::from_args(None, Some(&facts), None) else {
            panic!("not refused")
        };
        assert_eq!(err.kind(), "value-type");
        let facts = Value::Array(vec![Value::Array(vec![Value::from("a"), lone])]);
        let Err(ArgError::Invalid(err)) = RunContext::from_args(None, Some(&facts), None) else {
            panic!("not refused")
        };
        assert_eq!(
            err.to_string(),
            "facts[0] (\"a\"): the value is not valid Unicode text (it holds a lone surrogate)"
        );
    }

    #[test]
    fn section_digest_is_digest_of_name_and_text() {
        assert_eq!(
            section_digest("a", "b\n"),
            digest_bytes(br#"{"name":"a","text":"b\n"}"#)
        );
    }

    #[test]
    fn keyed_digests_are_keyed_hashes_of_the_same_documents() {
        use crate::digest::keyed_digest_bytes;
        let key = [7_u8; 32];
        let long = "x\u{e9}\"".repeat(20_000); // past the hashers' 16 KiB blocks
        let rc = RunContext::new(
            vec![e("identity", "You are a careful agent."), e("big", &long)],
            vec![e("date", "2026-11-30")],
            vec![e("agents", "Use tabs.")],
        )
        .unwrap();
        let keyed = keyed_context_digests(&key, rc.head_sections(), rc.facts(), rc.tail_sections());
        assert_eq!(
            format_keyed_digest(&keyed.digest),
            keyed_digest_bytes(&key, &rc.canonical_document())
        );
        let pairs = rc.head_sections().iter().chain(rc.tail_sections());
        let expected: Vec<String> = pairs
            .map(|(name, text)| {
                let mut json = br#"{"name":"#.to_vec();
                write_str(&mut json, name);
                json.extend_from_slice(br#","text":"#);
                write_str(&mut json, text);
                json.push(b'}');
                keyed_digest_bytes(&key, &json)
            })
            .collect();
        let got: Vec<String> = keyed.sections.iter().map(format_keyed_digest).collect();
        assert_eq!(got, expected);
        assert_eq!(got[1], keyed_section_digest(&key, "big", &long));
        // The plain digests are unchanged by the keyed path.
        let plain = context_digests(rc.head_sections(), rc.facts(), rc.tail_sections());
        assert_eq!(format_digest(&plain.digest), rc.digest());
    }
}
