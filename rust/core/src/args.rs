//! The shape rules for RunContext arguments, written once for every front end.
//!
//! A front end (the Python binding, the JSON of the conformance vectors) describes each of
//! its values as a [`Shape`]; [`crate::RunContext::from_args`] applies the rules: mappings
//! and sets are refused (their order is not the caller's), a bare pair is told what it is,
//! every entry must be a `(name, value)` pair of text and text-or-nothing.

use std::fmt;

/// One of the three constructor arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    HeadSections,
    Facts,
    TailSections,
}

impl Arg {
    /// The keyword the caller used.
    pub fn keyword(self) -> &'static str {
        match self {
            Arg::HeadSections => "head_sections",
            Arg::Facts => "facts",
            Arg::TailSections => "tail_sections",
        }
    }

    /// What the second item of a pair is called: a fact's value, a section's text.
    pub fn value_word(self) -> &'static str {
        match self {
            Arg::Facts => "value",
            _ => "text",
        }
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// What a front-end value is, as far as the argument rules care. `T` is the front end's
/// handle on a text ([`ArgNode::Text`]): the rules read it as a `&str` and keep it as it is,
/// so a text is never copied to be checked or hashed.
pub enum Shape<N, T> {
    /// Nothing: Python's `None`, JSON's `null`.
    Null,
    /// Text (Python `str`, JSON string).
    Str(T),
    /// Text that is not valid Unicode (a Python `str` with a lone surrogate).
    NotText,
    /// An ordered sequence (list, tuple, any other sequence); never a string. `items` holds
    /// its first items, at most `limit + 1` for the `limit` [`ArgNode::shape`] was given, so
    /// that an endless sequence is never read to its end; `len` is its whole length where
    /// the front end knows it without reading further, `None` where it stopped reading.
    Seq { items: Vec<N>, len: Option<usize> },
    /// A mapping (dict, JSON object): refused, the render order must be explicit.
    Mapping,
    /// An unordered collection (set, frozenset): refused for the same reason.
    Unordered,
    /// Anything else.
    Other,
}

/// A front-end value the argument rules can inspect.
pub trait ArgNode: Sized {
    /// A failure of the front end itself while it looks (an iterator that raised).
    type Error;

    /// A text this front end holds (a Python `str` object, a Rust `String`). The rules keep
    /// the handle and read it through `as_ref()`.
    type Text: AsRef<str>;

    /// Classifies this value, reading at most `limit + 1` items of a sequence.
    fn shape(&self, limit: usize) -> Result<Shape<Self, Self::Text>, Self::Error>;

    /// The front end's name for this value's type, for messages (`dict`, `int`, `object`).
    fn type_name(&self) -> String;
}

/// Why arguments could not become a RunContext: a rule of the format was broken, or the
/// front end failed while it was being read.
#[derive(Debug)]
pub enum ArgError<E> {
    Invalid(crate::RunContextError),
    Host(E),
}

impl<E> From<crate::RunContextError> for ArgError<E> {
    fn from(e: crate::RunContextError) -> Self {
        ArgError::Invalid(e)
    }
}

/// The text a `{"utf16": [code units]}` object of the vectors stands for: `Some(Ok(text))`,
/// `Some(Err(()))` when the units hold a lone surrogate, `None` when it is not such an object.
fn utf16_text(value: &crate::Value) -> Option<Result<String, ()>> {
    let crate::Value::Object(members) = value else {
        return None;
    };
    let [(key, crate::Value::Array(units))] = members.as_slice() else {
        return None;
    };
    let units = units
        .iter()
        .map(|u| match u {
            crate::Value::Number(n) if n.fract() == 0.0 && (0.0..=65535.0).contains(n) => {
                Some(*n as u16)
            }
            _ => None,
        })
        .collect::<Option<Vec<u16>>>()?;
    (key == "utf16").then(|| String::from_utf16(&units).map_err(|_| ()))
}

/// JSON values as RunContext arguments, as the conformance vectors write them: an array is
/// a sequence, a string text, `null` nothing, `{"utf16": [code units]}` the string of those
/// UTF-16 code units (how a vector writes a lone surrogate), and any other object a mapping.
impl ArgNode for crate::Value {
    type Error = std::convert::Infallible;
    type Text = String;

    fn shape(&self, limit: usize) -> Result<Shape<Self, String>, Self::Error> {
        use crate::Value;
        Ok(match self {
            Value::Null => Shape::Null,
            Value::String(s) => Shape::Str(s.clone()),
            Value::Array(items) => Shape::Seq {
                items: items
                    .iter()
                    .take(limit.saturating_add(1))
                    .cloned()
                    .collect(),
                len: Some(items.len()),
            },
            Value::Object(_) => match utf16_text(self) {
                Some(Ok(text)) => Shape::Str(text),
                Some(Err(())) => Shape::NotText,
                None => Shape::Mapping,
            },
            Value::Bool(_) | Value::Number(_) => Shape::Other,
        })
    }

    fn type_name(&self) -> String {
        self.type_name().to_owned()
    }
}
