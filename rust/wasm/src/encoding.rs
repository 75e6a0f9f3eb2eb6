//! The compact encoding a JavaScript value crosses into wasm in (`js/src/encode.js` writes
//! it). Each value is a tag byte and its payload; lengths and counts are little-endian u32,
//! numbers little-endian IEEE 754 doubles, texts UTF-8.
//!
//! | tag | value | payload |
//! |---|---|---|
//! | 0, 1, 2 | `null`, `false`, `true` | — |
//! | 3 | number | 8 bytes |
//! | 4 | string | length, UTF-8 |
//! | 5 | string holding a lone surrogate | — |
//! | 6 | array | count, then each element |
//! | 7 | plain object | count, then each member: key flag (0: text, 1: lone surrogate), key length and UTF-8 (absent for 1), value |
//! | 8 | bigint | length, decimal digits with an optional `-` |
//! | 9 | `undefined` | — |
//! | 10 | any other value | length, its type name |
//! | 11 | a `Map` (an object with its own order of keys) | length, its type name |
//! | 12 | a `Set` | length, its type name |
//!
//! *Why not JSON text:* `JSON.stringify` cannot carry what FORMAT.md § 1.6 must refuse
//! (it writes NaN as `null`, drops `undefined`, calls `toJSON`, replaces lone surrogates with
//! escapes), and it would lose the order of the refusals.

/// A JavaScript value, decoded; its texts borrow the encoded bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    Null,
    Bool(bool),
    Number(f64),
    Str(&'a str),
    LoneStr,
    Array(Vec<Node<'a>>),
    Object(Vec<(Key<'a>, Node<'a>)>),
    BigInt(&'a str),
    Undefined,
    Other(&'a str),
    MapLike(&'a str),
    SetLike(&'a str),
}

/// An object's key: text, or a string holding a lone surrogate.
#[derive(Debug, Clone, PartialEq)]
pub enum Key<'a> {
    Str(&'a str),
    Lone,
}

/// The one value `bytes` holds, or why it is malformed.
pub fn decode(bytes: &[u8]) -> Result<Node<'_>, String> {
    let mut reader = Reader { bytes, at: 0 };
    let node = reader.node()?;
    if reader.at != bytes.len() {
        return Err(format!("{} bytes after the value", bytes.len() - reader.at));
    }
    Ok(node)
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("truncated value at byte {}", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<usize, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    fn text(&mut self) -> Result<&'a str, String> {
        let len = self.u32()?;
        let at = self.at;
        let raw = self.take(len)?;
        std::str::from_utf8(raw).map_err(|_| format!("a string at byte {at} is not UTF-8"))
    }

    fn node(&mut self) -> Result<Node<'a>, String> {
        let tag = self.take(1)?[0];
        Ok(match tag {
            0 => Node::Null,
            1 => Node::Bool(false),
            2 => Node::Bool(true),
            3 => {
                let b = self.take(8)?;
                Node::Number(f64::from_le_bytes(b.try_into().expect("8 bytes")))
            }
            4 => Node::Str(self.text()?),
            5 => Node::LoneStr,
            6 => {
                let count = self.u32()?;
                // Every element takes at least one byte: a count beyond that is malformed.
                let mut items = Vec::with_capacity(count.min(self.bytes.len() - self.at));
                for _ in 0..count {
                    items.push(self.node()?);
                }
                Node::Array(items)
            }
            7 => {
                let count = self.u32()?;
                let mut members = Vec::with_capacity(count.min(self.bytes.len() - self.at));
                for _ in 0..count {
                    let key = match self.take(1)?[0] {
                        0 => Key::Str(self.text()?),
                        1 => Key::Lone,
                        flag => return Err(format!("unknown key flag {flag}")),
                    };
                    members.push((key, self.node()?));
                }
                Node::Object(members)
            }
            8 => Node::BigInt(self.text()?),
            9 => Node::Undefined,
            10 => Node::Other(self.text()?),
            11 => Node::MapLike(self.text()?),
            12 => Node::SetLike(self.text()?),
            _ => return Err(format!("unknown tag {tag} at byte {}", self.at - 1)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_nested_values_and_refuses_trailing_bytes() {
        let bytes = [6, 2, 0, 0, 0, 4, 1, 0, 0, 0, b'a', 7, 1, 0, 0, 0, 1, 9];
        assert_eq!(
            decode(&bytes),
            Ok(Node::Array(vec![
                Node::Str("a"),
                Node::Object(vec![(Key::Lone, Node::Undefined)])
            ]))
        );
        assert_eq!(decode(&[0, 0]), Err("1 bytes after the value".into()));
        assert_eq!(
            decode(&[4, 9, 0, 0, 0]),
            Err("truncated value at byte 5".into())
        );
    }
}
