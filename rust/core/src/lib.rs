//! The format rules of runcontext, in pure Rust.
//!
//! * [`canonical`]: RFC 8785 (JCS) output primitives, and canonical JSON of a [`Value`].
//! * [`parse`]: a strict JSON text parser that refuses what JCS cannot represent.
//! * [`digest`]: `blake3:`-prefixed digests of bytes and of canonical JSON, and their keyed
//!   (`blake3-keyed:`) forms.
//! * [`runcontext`]: validation, rendering and digests of a [`RunContext`] (format v1).
//! * [`transcript`]: the transcript record format (version 2): canonical lines, the record
//!   chain, and the strict, ordered verification of each line.
//! * [`tokens`]: the `tokens` member of a run's record (its request's counts and billing).
//!
//! Front ends (the Python binding, a Rust program) convert their own values and call these;
//! no rule of the format lives anywhere else. `docs/FORMAT.md` is the normative text.
//!
//! ```
//! use runcontext_core::{canonicalize_text, digest_bytes, Entry, RunContext};
//!
//! let rc = RunContext::new(
//!     vec![Entry::new("identity", Some("You are a careful agent."))],
//!     vec![Entry::new("date", Some("2026-11-30")), Entry::new("branch", None::<String>)],
//!     vec![],
//! )?;
//! assert_eq!(rc.head_text(), Some("You are a careful agent."));
//! assert!(rc.tail_text().unwrap().starts_with("## Current context\n\n- date: 2026-11-30\n\n"));
//! assert_eq!(rc.digest(), digest_bytes(&rc.canonical_document()));
//!
//! assert_eq!(canonicalize_text(br#"{"b": 1.0, "a": [1e21]}"#)?, br#"{"a":[1e+21],"b":1}"#);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod args;
pub mod canonical;
pub mod digest;
mod number;
mod output;
pub mod parse;
pub mod path;
mod rehash;
pub mod runcontext;
mod scan;
mod string;
pub mod tokens;
pub mod transcript;
pub mod value;

pub use args::{Arg, ArgError, ArgNode, Shape};
pub use canonical::{CanonicalError, CanonicalErrorKind, MAX_DEPTH, MAX_SAFE_INTEGER};
pub use digest::{
    digest, digest_bytes, digest_json_str, format_digest, format_keyed_digest, keyed_digest,
    keyed_digest_bytes, DIGEST_PREFIX, KEYED_DIGEST_PREFIX, KEY_LEN, PARALLEL_THRESHOLD,
};
#[cfg(feature = "rayon")]
pub use digest::{digest_bytes_parallel, keyed_digest_bytes_parallel};
pub use parse::{canonicalize_text, parse, ParseError, ParseErrorKind};
pub use path::JsonPath;
pub use runcontext::{
    context_digests, keyed_context_digests, keyed_section_digest, render_head, render_tail,
    section_digest, ContextDigests, Entry, Kept, KeptEntries, Position, RunContext,
    RunContextError, RunContextErrorKind, Section, FORMAT_VERSION, MAX_ENTRIES, TAIL_CLOSING,
    TAIL_HEADING,
};
pub use value::Value;
