//! What a refused RunContext argument says: the rule broken ([`RunContextErrorKind`]) and
//! where ([`RunContextError`]: the argument, the entry's index and name).

use std::fmt;

use super::MAX_ENTRIES;
use crate::args::Arg;
use crate::canonical::quoted;

/// Which rule arguments broke, with what the message needs to say about it. Where it
/// happened is the [`RunContextError`] around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunContextErrorKind {
    /// The argument is not a sequence (a `str`, an iterator, a number).
    NotASequence {
        type_name: String,
    },
    /// The argument is a mapping: its order is not the caller's.
    Mapping,
    /// The argument is a set: it has no order.
    Unordered {
        type_name: String,
    },
    /// The argument is one `(name, text-or-None)` pair, passed without a list around it.
    BarePair {
        name: String,
    },
    /// The argument holds more than [`MAX_ENTRIES`] entries.
    TooManyEntries,
    NotAPair {
        found: String,
        /// The name, when the whole argument looks like one pair passed bare with a value of
        /// the wrong type (`("n", 3)`): the message then suggests the fix.
        bare_name: Option<String>,
    },
    NameType {
        type_name: String,
    },
    ValueType {
        type_name: String,
    },
    /// A name or value that is not Unicode text (a lone surrogate); the error carries the
    /// name when it is the value that is not text.
    NotText,
    EmptyName,
    NameControl,
    NameWhitespace,
    DuplicateName {
        first_arg: Arg,
        first_index: usize,
    },
}

impl RunContextErrorKind {
    /// A stable identifier of the rule broken, as used by the conformance vectors.
    pub fn id(&self) -> &'static str {
        match self {
            Self::NotASequence { .. } => "not-a-sequence",
            Self::Mapping => "mapping",
            Self::Unordered { .. } => "unordered",
            Self::BarePair { .. } => "bare-pair",
            Self::TooManyEntries => "too-many-entries",
            Self::NotAPair { .. } => "not-a-pair",
            Self::NameType { .. } => "name-type",
            Self::ValueType { .. } => "value-type",
            Self::NotText => "not-text",
            Self::EmptyName => "empty-name",
            Self::NameControl => "name-control",
            Self::NameWhitespace => "name-whitespace",
            Self::DuplicateName { .. } => "duplicate-name",
        }
    }

    /// True where the argument has the wrong type (Python raises a `TypeError`), false
    /// where it has the right type and a wrong value (`ValueError`).
    pub fn is_type_error(&self) -> bool {
        matches!(
            self,
            Self::NotASequence { .. }
                | Self::Mapping
                | Self::Unordered { .. }
                | Self::BarePair { .. }
                | Self::NotAPair { .. }
                | Self::NameType { .. }
                | Self::ValueType { .. }
        )
    }

    /// What was wrong and how to fix it, for an error in `arg` (which names the second item
    /// of a pair: a fact's value, a section's text).
    fn describe(&self, f: &mut fmt::Formatter<'_>, arg: Arg) -> fmt::Result {
        let v = arg.value_word();
        match self {
            Self::NotASequence { type_name } => write!(
                f,
                "expected a sequence of (name, {v}) pairs, got {type_name}"
            ),
            Self::Mapping => write!(
                f,
                "a mapping is refused because the render order must be explicit. A mapping \
built from a set, a hash-ordered source or another language's map renders a different prompt in \
each process while its canonical digest stays the same (sorted keys), so two processes would send \
different prompts and agree they were the same context. Pass a list of (name, {v}) pairs; \
list(d.items()) when you vouch for the mapping's order."
            ),
            Self::Unordered { type_name } => write!(
                f,
                "a {type_name} has no order, and the render order must be explicit; pass a \
list of (name, {v}) pairs in the order to render"
            ),
            Self::BarePair { name } => write!(
                f,
                "got one bare pair ({n}, ...), not a sequence of pairs; wrap it in a list: \
[({n}, ...)]",
                n = quoted(name)
            ),
            Self::TooManyEntries => write!(
                f,
                "more than {MAX_ENTRIES} entries; a context this large is not a prompt (is \
the sequence endless?)"
            ),
            Self::NotAPair { found, bare_name } => {
                write!(f, "expected a (name, {v}) pair, got {found}")?;
                if let Some(name) = bare_name {
                    write!(
                        f,
                        "; if ({n}, ...) is meant as one pair, wrap it in a list: [({n}, ...)]",
                        n = quoted(name)
                    )?;
                }
                Ok(())
            }
            Self::NameType { type_name } => write!(f, "the name must be a str, got {type_name}"),
            Self::ValueType { type_name } => write!(
                f,
                "the {v} must be a str or None, got {type_name}; render it to text yourself (a \
value of type {type_name} stringified into a prompt is rarely what was meant)"
            ),
            Self::NotText => f.write_str("is not valid Unicode text (it holds a lone surrogate)"),
            Self::EmptyName => f.write_str("the name is empty"),
            Self::NameControl => {
                f.write_str("a name may not hold control characters or line breaks")
            }
            Self::NameWhitespace => f.write_str(
                "a name may not begin or end with whitespace (names are validated, never \
rewritten)",
            ),
            Self::DuplicateName {
                first_arg,
                first_index,
            } => {
                let scope = if arg == Arg::Facts {
                    "fact names are unique among the facts"
                } else {
                    "section names are unique across head and tail together"
                };
                write!(
                    f,
                    "duplicate name, already used by {first_arg}[{first_index}] ({scope}; a \
dropped entry still owns its name)"
                )
            }
        }
    }
}

/// Why arguments are not a valid RunContext: the rule broken, and where — the argument,
/// the entry's index (none when the argument as a whole is wrong) and the entry's name once
/// it is known to be text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunContextError {
    pub kind: RunContextErrorKind,
    pub arg: Arg,
    pub index: Option<usize>,
    pub name: Option<String>,
}

impl RunContextError {
    pub(super) fn whole(arg: Arg, kind: RunContextErrorKind) -> Self {
        Self {
            kind,
            arg,
            index: None,
            name: None,
        }
    }

    pub(super) fn entry(
        arg: Arg,
        index: usize,
        name: Option<&str>,
        kind: RunContextErrorKind,
    ) -> Self {
        Self {
            kind,
            arg,
            index: Some(index),
            name: name.map(str::to_owned),
        }
    }

    /// A stable identifier of the rule broken, as used by the conformance vectors.
    pub fn kind(&self) -> &'static str {
        self.kind.id()
    }

    /// The argument the error is in.
    pub fn arg(&self) -> Arg {
        self.arg
    }

    /// The index of the offending entry within its argument; `None` where the argument as a
    /// whole is wrong.
    pub fn index(&self) -> Option<usize> {
        self.index
    }

    /// True where the argument has the wrong type (Python raises a `TypeError`), false
    /// where it has the right type and a wrong value (`ValueError`).
    pub fn is_type_error(&self) -> bool {
        self.kind.is_type_error()
    }
}

impl fmt::Display for RunContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.arg)?;
        if let Some(index) = self.index {
            write!(f, "[{index}]")?;
        }
        if let Some(name) = &self.name {
            write!(f, " ({})", quoted(name))?;
        }
        f.write_str(": ")?;
        if self.kind == RunContextErrorKind::NotText {
            // Says which half of the pair is not text.
            let what = if self.name.is_some() {
                self.arg.value_word()
            } else {
                "name"
            };
            write!(f, "the {what} ")?;
        }
        self.kind.describe(f, self.arg)
    }
}

impl std::error::Error for RunContextError {}
