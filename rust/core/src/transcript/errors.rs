//! What a refused line and a refused write say.

use std::fmt;

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
    Compaction,
    Elision,
    Run,
    SectionDigest,
    DanglingSection,
    Context,
    ContextDigest,
}

impl ErrorKind {
    /// Every kind, in the order the checks run on one line.
    pub const ALL: [ErrorKind; 21] = [
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
        Self::Compaction,
        Self::Elision,
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
            Self::Compaction => "compaction",
            Self::Elision => "elision",
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
