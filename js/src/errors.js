// The exception classes, mirroring Python's (docs/ERRORS.md lists each once, with its
// JavaScript name): the same kinds, the same location members.

/** Every error of runcontext's format rules about a value or its arguments. */
export class RunContextError extends Error {
  /**
   * `kind` names the rule (as in docs/vectors/runcontext-v1.json), `argument` the
   * constructor argument (`headSections`, `facts`, `tailSections`) and `index` the entry,
   * or `null` when the argument as a whole is wrong.
   */
  constructor(message, { kind, argument, index }) {
    super(message);
    this.name = new.target.name;
    this.kind = kind;
    this.argument = argument;
    this.index = index;
  }
}

/** An argument or entry of the wrong type (an object for a list, a bare pair, a number). */
export class RunContextTypeError extends RunContextError {}

/** An entry of the right type with a wrong value (an invalid or duplicate name). */
export class RunContextValueError extends RunContextError {}

/**
 * A value or JSON text that has no canonical (RFC 8785) form. `kind` names the rule,
 * `path` is the JSON path of the offending value; for JSON text `line` and `column`
 * (1-based, in characters) and `offset` (in bytes) say where, `null` for values.
 */
export class CanonicalJSONError extends Error {
  constructor(message, { kind, path = "$", line = null, column = null, offset = null }) {
    super(message);
    this.name = new.target.name;
    this.kind = kind;
    this.path = path;
    this.line = line;
    this.column = column;
    this.offset = offset;
  }
}

/** A value JSON cannot hold (`undefined`, a function, a Map, a Date, a class instance). */
export class UnsupportedTypeError extends CanonicalJSONError {}
/** NaN, ±Infinity, a bigint outside ±(2**53 − 1), a number too large for a double. */
export class InvalidNumberError extends CanonicalJSONError {}
/** Text that is not Unicode: a lone surrogate, or bytes that are not UTF-8. */
export class InvalidStringError extends CanonicalJSONError {}
/** Arrays and objects nested deeper than `MAX_DEPTH`. */
export class NestingTooDeepError extends CanonicalJSONError {}
/** Two object members with the same name (possible in JSON text). */
export class DuplicateKeyError extends CanonicalJSONError {}
/** JSON text that does not follow the JSON grammar. */
export class JSONSyntaxError extends CanonicalJSONError {}

const CANONICAL_CLASSES = {
  "non-finite": InvalidNumberError,
  "integer-out-of-range": InvalidNumberError,
  "number-overflow": InvalidNumberError,
  "lone-surrogate": InvalidStringError,
  "invalid-utf8": InvalidStringError,
  "non-string-key": UnsupportedTypeError,
  "unsupported-type": UnsupportedTypeError,
  "too-deep": NestingTooDeepError,
  "duplicate-key": DuplicateKeyError,
};

/** The error the core described (`{kind, path, message, …}`). */
export function canonicalError(info) {
  const Class = CANONICAL_CLASSES[info.kind] ?? JSONSyntaxError;
  return new Class(info.message, info);
}

export function runContextError(info) {
  const Class = info.typeError ? RunContextTypeError : RunContextValueError;
  return new Class(info.message, info);
}

/**
 * A transcript that cannot be read or appended to as asked. `file` is the file (or the
 * name given to `Session.fromBytes`), `line` the 1-based line of the offending record or
 * `null`, `kind` the refusal kind of docs/TRANSCRIPT.md for a refused record, else `null`.
 */
export class TranscriptError extends Error {
  constructor(message, { file, line = null, kind = null }) {
    super(line === null ? `${file}: ${message}` : `${file}:${line}: ${message}`);
    this.name = new.target.name;
    this.file = file;
    this.line = line;
    this.kind = kind;
  }
}

/** A line that is not a valid record. */
export class TranscriptFormatError extends TranscriptError {}
/** A transcript of a format version this package cannot read or append to. */
export class TranscriptVersionError extends TranscriptFormatError {}
/** A record whose content does not match its recorded digest: the file was altered. */
export class TranscriptDigestError extends TranscriptError {}
/** An append refused because the file ends with a torn (incomplete) record. */
export class TornTranscriptError extends TranscriptError {}
/** An append refused because the path no longer names the file the session opened. */
export class TranscriptReplacedError extends TranscriptError {}

/**
 * A conversation that is not the one the transcript records: `index` is the message that
 * differs, `recorded` and `given` the two digests (all `null` when refused for its length).
 */
export class ConversationMismatchError extends TranscriptError {
  constructor(message, { file, line = null, index = null, recorded = null, given = null }) {
    super(message, { file, line });
    this.index = index;
    this.recorded = recorded;
    this.given = given;
  }
}

/** The conversation's first message does not match the transcript's seed. */
export class SeedMismatchError extends ConversationMismatchError {
  constructor(message, { file, recorded, given }) {
    super(message, { file, line: 1, index: 0, recorded, given });
  }
}

const DIGEST_KINDS = new Set(["chain", "seed", "section-digest", "context-digest"]);

/** The error of a record the core refused (`{kind, line, message}`). */
export function transcriptError(info, file) {
  const Class = DIGEST_KINDS.has(info.kind)
    ? TranscriptDigestError
    : info.kind === "version" ? TranscriptVersionError : TranscriptFormatError;
  return new Class(info.message, { file, line: info.line, kind: info.kind });
}
