//! A run's context rebuilt from the transcript, and its digest.

use std::collections::HashMap;
use std::sync::Arc;

use super::write::write_fact_pairs;
use super::{Envelope, SectionRef, Structure, Transcript};
use crate::canonical::write_str;
use crate::digest::format_digest;
use crate::runcontext::{normalise, Entry, Position, RunContext, FORMAT_VERSION};

impl Transcript {
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
    pub(super) fn rebuild(&mut self, structure: &Structure) -> Result<String, String> {
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
pub(super) struct Layout {
    sections: Vec<SectionRef>,
    facts_end: usize,
}
