//! JSON paths (`$.messages[3].content`) that say where an error happened.
//!
//! Paths are built only on the error path: a failing value returns an empty path and each
//! enclosing container prepends its own segment while the error unwinds, so the success
//! path never pays for bookkeeping.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Index(usize),
    Key(String),
}

/// A location inside a JSON value, rendered as `$`, `$.key`, `$[3]` or `$["odd key"]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonPath {
    // Innermost segment first: segments are pushed while an error unwinds outwards.
    reversed: Vec<Segment>,
}

impl JsonPath {
    /// The root, `$`.
    pub fn root() -> Self {
        Self::default()
    }

    /// This path, inside element `index` of an enclosing array.
    pub fn in_index(mut self, index: usize) -> Self {
        self.reversed.push(Segment::Index(index));
        self
    }

    /// This path, inside member `key` of an enclosing object.
    pub fn in_key(mut self, key: &str) -> Self {
        self.reversed.push(Segment::Key(key.to_owned()));
        self
    }

    /// Number of segments below the root.
    pub fn len(&self) -> usize {
        self.reversed.len()
    }

    /// True for the root path `$`.
    pub fn is_empty(&self) -> bool {
        self.reversed.is_empty()
    }
}

fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("$")?;
        for segment in self.reversed.iter().rev() {
            match segment {
                Segment::Index(i) => write!(f, "[{i}]")?,
                Segment::Key(k) if is_identifier(k) => write!(f, ".{k}")?,
                Segment::Key(k) => write!(f, "[{}]", crate::string::quoted(k))?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_innermost_last() {
        let p = JsonPath::root()
            .in_key("content")
            .in_index(3)
            .in_key("messages");
        assert_eq!(p.to_string(), "$.messages[3].content");
        assert_eq!(p.len(), 3);
    }

    #[test]
    fn quotes_keys_that_are_not_identifiers() {
        let p = JsonPath::root().in_key("a b").in_key("1x").in_key("\"");
        assert_eq!(p.to_string(), "$[\"\\\"\"][\"1x\"][\"a b\"]");
        assert_eq!(JsonPath::root().to_string(), "$");
    }
}
