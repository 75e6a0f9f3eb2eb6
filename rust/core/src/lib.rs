//! The format rules of runcontext, in pure Rust.
//!
//! * [`canonical`]: RFC 8785 (JCS) output primitives, and canonical JSON of a [`Value`].
//! * [`parse`]: a strict JSON text parser that refuses what JCS cannot represent.
//! * [`digest`]: `blake3:`-prefixed digests of bytes and of canonical JSON.
//! * [`runcontext`]: validation, rendering and digests of a [`RunContext`] (format v1).
//!
//! Front ends (the Python binding, a Rust program) convert their own values and call these;
//! no rule of the format lives anywhere else. `docs/FORMAT.md` is the normative text.

pub mod args;
pub mod canonical;
pub mod digest;
pub mod parse;
pub mod path;
pub mod runcontext;
pub mod value;

pub use args::{Arg, ArgError, ArgNode, Shape};
pub use canonical::{CanonicalError, CanonicalErrorKind, MAX_DEPTH, MAX_SAFE_INTEGER};
pub use digest::{digest, digest_bytes, DIGEST_PREFIX};
pub use parse::{canonicalize_text, parse, ParseError, ParseErrorKind};
pub use path::JsonPath;
pub use runcontext::{
    section_digest, Entry, Position, RunContext, RunContextError, Section, FORMAT_VERSION,
    TAIL_CLOSING, TAIL_HEADING,
};
pub use value::Value;
