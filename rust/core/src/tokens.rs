//! The `tokens` member of a `run-context` record (docs/TRANSCRIPT.md, *`tokens`*): the
//! request's input tokens by part as counted before the call, the count's quality, the
//! budget limit it was checked against, and what the provider billed.
//!
//! One rule for reading and writing: a writer builds [`Tokens`] with [`Tokens::from_value`]
//! (the same check a reader makes), so what is written can always be read back.

use crate::canonical::MAX_SAFE_INTEGER;
use crate::value::Value;

/// How a count was reached (docs/BUDGET.md, *Quality*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Quality {
    Exact,
    Calibrated,
    Estimated,
}

impl Quality {
    pub fn as_str(self) -> &'static str {
        match self {
            Quality::Exact => "exact",
            Quality::Calibrated => "calibrated",
            Quality::Estimated => "estimated",
        }
    }

    /// The quality named `text` (`"exact"`, `"calibrated"`, `"estimated"`).
    pub fn from_id(text: &str) -> Option<Self> {
        Self::from_str(text)
    }

    pub(crate) fn from_str(text: &str) -> Option<Self> {
        match text {
            "exact" => Some(Quality::Exact),
            "calibrated" => Some(Quality::Calibrated),
            "estimated" => Some(Quality::Estimated),
            _ => None,
        }
    }
}

/// What the provider reported for the request: `input` is every prompt token, the cached
/// ones (`cache_read`) and those written to the cache (`cache_write`) included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Billed {
    pub input: u64,
    pub output: Option<u64>,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// A run's token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tokens {
    pub head: u64,
    pub conversation: u64,
    pub tail: u64,
    pub tools: u64,
    pub quality: Quality,
    pub limit: Option<u64>,
    pub billed: Option<Billed>,
}

const MEMBERS: &[&str] = &[
    "billed",
    "conversation",
    "head",
    "limit",
    "quality",
    "tail",
    "tools",
];
const REQUIRED: &[&str] = &["conversation", "head", "quality", "tail", "tools"];
const BILLED_MEMBERS: &[&str] = &["cache_read", "cache_write", "input", "output"];
const BILLED_REQUIRED: &[&str] = &["cache_read", "cache_write", "input"];

fn members<'a>(
    value: &'a Value,
    what: &str,
    allowed: &[&str],
    required: &[&str],
) -> Result<&'a [(String, Value)], String> {
    let Value::Object(items) = value else {
        return Err(format!(
            "'{what}' must be an object, got {}",
            value.type_name()
        ));
    };
    if let Some((name, _)) = items.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "'{what}' has an unexpected member {name:?} (its members are {})",
            allowed.join(", ")
        ));
    }
    if let Some(name) = required
        .iter()
        .find(|r| !items.iter().any(|(k, _)| k == *r))
    {
        return Err(format!("'{what}' is missing its member {name:?}"));
    }
    Ok(items)
}

fn count(items: &[(String, Value)], what: &str, key: &str) -> Result<Option<u64>, String> {
    match items.iter().find(|(k, _)| k == key).map(|(_, v)| v) {
        None => Ok(None),
        Some(Value::Number(v))
            if *v >= 0.0 && v.fract() == 0.0 && *v <= MAX_SAFE_INTEGER as f64 =>
        {
            Ok(Some(*v as u64))
        }
        Some(other) => Err(format!(
            "'{what}.{key}' must be a whole number from 0 to 2**53 - 1, got {}",
            match other {
                Value::Number(v) => format!("{v}"),
                other => other.type_name().to_owned(),
            }
        )),
    }
}

impl Tokens {
    /// Check a `tokens` value (docs/TRANSCRIPT.md): an error names the member, e.g.
    /// `'tokens.head' must be a whole number …`.
    pub fn from_value(value: &Value) -> Result<Self, String> {
        let items = members(value, "tokens", MEMBERS, REQUIRED)?;
        let need = |key: &str| count(items, "tokens", key).map(|c| c.expect("required"));
        let quality = match items.iter().find(|(k, _)| k == "quality").map(|(_, v)| v) {
            Some(Value::String(text)) => Quality::from_str(text),
            _ => None,
        }
        .ok_or_else(|| {
            "'tokens.quality' must be \"exact\", \"calibrated\" or \"estimated\"".to_owned()
        })?;
        let billed = match items.iter().find(|(k, _)| k == "billed").map(|(_, v)| v) {
            None => None,
            Some(billed) => {
                let what = "tokens.billed";
                let inner = members(billed, what, BILLED_MEMBERS, BILLED_REQUIRED)?;
                let need = |key: &str| count(inner, what, key).map(|c| c.expect("required"));
                let billed = Billed {
                    input: need("input")?,
                    output: count(inner, what, "output")?,
                    cache_read: need("cache_read")?,
                    cache_write: need("cache_write")?,
                };
                if billed.cache_read + billed.cache_write > billed.input {
                    return Err(format!(
                        "'tokens.billed': cache_read ({}) + cache_write ({}) exceed input ({}), \
                         which counts every prompt token, cached or not",
                        billed.cache_read, billed.cache_write, billed.input
                    ));
                }
                Some(billed)
            }
        };
        let tokens = Tokens {
            head: need("head")?,
            conversation: need("conversation")?,
            tail: need("tail")?,
            tools: need("tools")?,
            quality,
            limit: count(items, "tokens", "limit")?,
            billed,
        };
        if tokens.total() > MAX_SAFE_INTEGER as u64 {
            return Err("'tokens': head + conversation + tail + tools exceed 2**53 - 1".into());
        }
        Ok(tokens)
    }

    /// head + conversation + tail + tools.
    pub fn total(&self) -> u64 {
        self.head + self.conversation + self.tail + self.tools
    }

    /// The canonical JSON of the member's value (members in sorted order, absent options
    /// left out).
    pub fn write(&self, out: &mut Vec<u8>) {
        let number = |out: &mut Vec<u8>, key: &str, value: u64| {
            out.push(b'"');
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"\":");
            out.extend_from_slice(value.to_string().as_bytes());
        };
        out.push(b'{');
        if let Some(billed) = &self.billed {
            out.extend_from_slice(b"\"billed\":{");
            number(out, "cache_read", billed.cache_read);
            out.push(b',');
            number(out, "cache_write", billed.cache_write);
            out.push(b',');
            number(out, "input", billed.input);
            if let Some(output) = billed.output {
                out.push(b',');
                number(out, "output", output);
            }
            out.extend_from_slice(b"},");
        }
        number(out, "conversation", self.conversation);
        out.push(b',');
        number(out, "head", self.head);
        if let Some(limit) = self.limit {
            out.push(b',');
            number(out, "limit", limit);
        }
        out.extend_from_slice(b",\"quality\":\"");
        out.extend_from_slice(self.quality.as_str().as_bytes());
        out.extend_from_slice(b"\",");
        number(out, "tail", self.tail);
        out.push(b',');
        number(out, "tools", self.tools);
        out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn tokens(text: &str) -> Result<Tokens, String> {
        Tokens::from_value(&parse(text.as_bytes()).expect("JSON"))
    }

    #[test]
    fn writes_the_canonical_form_of_what_it_read() {
        for text in [
            r#"{"conversation":5,"head":1,"quality":"estimated","tail":2,"tools":0}"#,
            r#"{"billed":{"cache_read":3,"cache_write":0,"input":9,"output":4},"conversation":5,"head":1,"limit":100,"quality":"exact","tail":2,"tools":1}"#,
            r#"{"billed":{"cache_read":0,"cache_write":0,"input":9},"conversation":5,"head":1,"quality":"calibrated","tail":2,"tools":1}"#,
        ] {
            let mut out = Vec::new();
            tokens(text).expect("valid").write(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), text);
            assert_eq!(
                crate::canonicalize_text(text.as_bytes()).unwrap(),
                text.as_bytes()
            );
        }
    }

    #[test]
    fn refusals_name_the_member() {
        let cases = [
            (r#"[]"#, "'tokens' must be an object"),
            (
                r#"{"conversation":5,"head":1,"quality":"estimated","tail":2}"#,
                "missing its member \"tools\"",
            ),
            (
                r#"{"conversation":5,"head":1,"quality":"estimated","tail":2,"tools":0,"x":1}"#,
                "unexpected member \"x\"",
            ),
            (
                r#"{"conversation":5,"head":-1,"quality":"estimated","tail":2,"tools":0}"#,
                "'tokens.head' must be a whole number",
            ),
            (
                r#"{"conversation":5.5,"head":1,"quality":"estimated","tail":2,"tools":0}"#,
                "'tokens.conversation' must be a whole number",
            ),
            (
                r#"{"conversation":5,"head":1,"quality":"guessed","tail":2,"tools":0}"#,
                "'tokens.quality' must be",
            ),
            (
                r#"{"billed":{"cache_read":5,"cache_write":5,"input":9},"conversation":5,"head":1,"quality":"exact","tail":2,"tools":0}"#,
                "exceed input (9)",
            ),
            (
                r#"{"billed":{"input":9},"conversation":5,"head":1,"quality":"exact","tail":2,"tools":0}"#,
                "'tokens.billed' is missing its member \"cache_read\"",
            ),
            (
                r#"{"conversation":9007199254740991,"head":1,"quality":"exact","tail":0,"tools":0}"#,
                "exceed 2**53 - 1",
            ),
        ];
        for (text, expected) in cases {
            let error = tokens(text).expect_err(text);
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
