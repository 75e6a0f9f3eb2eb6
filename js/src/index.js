// runcontext for JavaScript: the same Rust core as the Python package, compiled to
// WebAssembly, so both languages write the same bytes and digests by construction
// (docs/JAVASCRIPT.md).

import { MAX_DEPTH, encodeValue, setInputValue } from "./encode.js";
import { canonicalError, runContextError } from "./errors.js";
import {
  core,
  outputBytes,
  outputJson,
  outputText,
  setFields,
  setInput,
} from "./wasm.js";

export {
  CanonicalJSONError, ConversationMismatchError, DuplicateKeyError, InvalidNumberError,
  InvalidStringError, JSONSyntaxError, NestingTooDeepError, RunContextError, RunContextTypeError,
  RunContextValueError, SeedMismatchError, TornTranscriptError, TranscriptDigestError,
  TranscriptError, TranscriptFormatError, TranscriptReplacedError, TranscriptVersionError,
  UnsupportedTypeError,
} from "./errors.js";
export { MAX_DEPTH };
export { DEFAULT_MAX_LINE_BYTES, Run, Session, verifyTranscript } from "./session.js";
export {
  ANTHROPIC_MAX_BREAKPOINTS, OPENAI_CACHE_MODES, anthropicMessages, openaiChat, openaiChatRequest,
  openaiPromptCaching, openaiResponses,
} from "./adapters/index.js";

/** The RunContext format version (FORMAT.md § 3). */
export const FORMAT_VERSION = 1;

const utf8 = new TextEncoder();

function canonicalCall(value, fn) {
  setInputValue(value);
  if (fn() !== 0) throw canonicalError(outputJson());
}

/** The canonical JSON (RFC 8785, FORMAT.md § 1) of `value`, as a string. */
export function canonicalJson(value) {
  canonicalCall(value, core.rc_canonical_json);
  return outputText();
}

/** The canonical JSON of `value`, as UTF-8 bytes. */
export function canonicalJsonBytes(value) {
  canonicalCall(value, core.rc_canonical_json);
  return outputBytes();
}

/** `blake3:<hex>` of the canonical JSON of `value`. */
export function digest(value) {
  canonicalCall(value, core.rc_digest);
  return outputText();
}

function toBytes(data, argument) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError(`${argument}: expected a Uint8Array, ArrayBuffer or typed array, got ${describe(data)}`);
}

function describe(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "Array";
  if (typeof value === "object") return value.constructor?.name ?? "object";
  return typeof value;
}

/** `blake3:<hex>` of `data` (a Uint8Array, ArrayBuffer or typed array). */
export function digestBytes(data) {
  setInput(toBytes(data, "data"));
  core.rc_digest_bytes();
  return outputText();
}

function checkKey(key) {
  const bytes = toBytes(key, "key");
  if (bytes.length !== 32) {
    throw new RangeError(`key: expected 32 bytes (a BLAKE3 key), got ${bytes.length}`);
  }
  return bytes;
}

/** `blake3-keyed:<hex>` of `data` under the 32-byte `key` (FORMAT.md § 2.1). */
export function keyedDigestBytes(key, data) {
  setFields(checkKey(key), toBytes(data, "data"));
  core.rc_keyed_digest_bytes();
  return outputText();
}

/** `blake3-keyed:<hex>` of the canonical JSON of `value` under the 32-byte `key`. */
export function keyedDigest(key, value) {
  const k = checkKey(key);
  setFields(k, encodeValue(value));
  if (core.rc_keyed_digest() !== 0) throw canonicalError(outputJson());
  return outputText();
}

/**
 * The canonical form of a JSON text (a string or its UTF-8 bytes), read by the core's
 * strict parser (FORMAT.md § 1.7): a refusal carries `line`, `column`, `offset` and `path`.
 */
export function canonicalizeText(text) {
  if (typeof text === "string") {
    if (typeof text.isWellFormed === "function" ? !text.isWellFormed() : /\p{Cs}/u.test(text)) {
      // No UTF-8 form: the core reads it as Python's surrogatepass bytes, so the refusal is
      // the one those bytes get (FORMAT.md § 1.7.2), located at the first lone surrogate.
      setInput(surrogatepass(text));
      core.rc_canonicalize_string();
      throw canonicalError(outputJson());
    }
    setInput(utf8.encode(text));
  } else {
    setInput(toBytes(text, "text"));
  }
  if (core.rc_canonicalize_text() !== 0) throw canonicalError(outputJson());
  return outputText();
}

/** UTF-8 of a string, each lone surrogate written as the three bytes of its code point. */
function surrogatepass(text) {
  const out = [];
  for (const ch of text) { // a lone surrogate is one code point of its own
    const c = ch.codePointAt(0);
    if (c >= 0xd800 && c <= 0xdfff) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
    else out.push(...utf8.encode(ch));
  }
  return Uint8Array.from(out);
}

const PRIVATE = Symbol("runcontext.RunContext");

function freezePairs(pairs) {
  return Object.freeze(pairs.map((p) => Object.freeze(p)));
}

/**
 * The refreshable half of a prompt: head sections (stable prose, index 0), facts and tail
 * sections (after the conversation), each an array of `[name, value]` pairs; a value that
 * is `null` or `undefined` drops its entry (its name stays taken). Immutable.
 */
export class RunContext {
  #state;

  constructor({ headSections = null, facts = null, tailSections = null } = {}) {
    if (headSections === PRIVATE) {
      this.#state = facts;
      return;
    }
    setInputValue([headSections, facts, tailSections]);
    if (core.rc_runcontext() !== 0) throw runContextError(outputJson());
    this.#state = RunContext.#fromCore(outputJson());
  }

  static #fromCore(info) {
    return {
      headText: info.headText,
      tailText: info.tailText,
      digest: info.digest,
      headSections: freezePairs(info.headSections),
      facts: freezePairs(info.facts),
      tailSections: freezePairs(info.tailSections),
      sections: Object.freeze(info.sections.map((s) => Object.freeze(s))),
    };
  }

  /** A context from what the core returned (a run read back from a transcript). */
  static _fromCore(info) {
    return new RunContext({ headSections: PRIVATE, facts: RunContext.#fromCore(info) });
  }

  /** The head sections joined (FORMAT.md § 3.4), or `null` when there are none. */
  get headText() { return this.#state.headText; }
  /** The facts and tail sections rendered (FORMAT.md § 3.5), or `null` when empty. */
  get tailText() { return this.#state.tailText; }
  /** `{role: "system", content: headText}` (a new object each time), or `null`. */
  get headMessage() {
    const text = this.#state.headText;
    return text === null ? null : { role: "system", content: text };
  }
  /** `{role: "system", content: tailText}` (a new object each time), or `null`. */
  get tailMessage() {
    const text = this.#state.tailText;
    return text === null ? null : { role: "system", content: text };
  }
  /** `blake3:<hex>` of the context's canonical document (FORMAT.md § 3.6). */
  get digest() { return this.#state.digest; }
  /** Each kept section: `{name, digest, text, position}`, head first. */
  get sections() { return this.#state.sections; }
  /** The section digests, in the order of `sections`. */
  get sectionDigests() { return this.#state.sections.map((s) => s.digest); }
  /** The kept facts, normalised, as `[name, value]` pairs. */
  get facts() { return this.#state.facts; }
  get headSections() { return this.#state.headSections; }
  get tailSections() { return this.#state.tailSections; }
  /** True when the context renders nothing. */
  get isEmpty() { return this.#state.headText === null && this.#state.tailText === null; }

  /** The keyed digests (FORMAT.md § 2.1): `{digest, sectionDigests}`. */
  keyedDigests(key) {
    setFields(checkKey(key), this._entriesJson());
    if (core.rc_keyed_context_digests() !== 0) throw new Error(outputText());
    return outputJson();
  }

  /** The kept entries, as the binding reads a context back (rust/wasm, `context_from_entries`). */
  _entriesJson() {
    const s = this.#state;
    return JSON.stringify([s.headSections, s.facts, s.tailSections]);
  }

  /** Two contexts are equal when their digests are. */
  equals(other) {
    return other instanceof RunContext && other.digest === this.digest;
  }

  toString() {
    return `RunContext(${this.digest})`;
  }
}

/** The empty context (what `context: null` means where a context is optional). */
export const EMPTY = new RunContext();

/**
 * Checks a message list: an array of plain objects with a `role` (with `items`, a string
 * `role` or a string `type`, as a transcript records them). `start` skips to message 0 and
 * the messages from `start` on. Throws a TypeError naming the argument and index.
 */
export function checkMessages(messages, { argument = "messages", items = false, start = 0 } = {}) {
  if (!Array.isArray(messages)) {
    throw new TypeError(`${argument}: expected an array of message objects, got ${describe(messages)}`);
  }
  const check = (index) => checkMessage(messages[index], `${argument}[${index}]`, items);
  if (start <= 1) {
    for (let i = 0; i < messages.length; i++) check(i);
  } else {
    if (messages.length > 0) check(0);
    for (let i = start; i < messages.length; i++) check(i);
  }
  return messages;
}

function checkMessage(message, where, items) {
  if (message === null || typeof message !== "object" || Array.isArray(message)) {
    throw new TypeError(`${where}: expected a message object with a 'role', got ${describe(message)}`);
  }
  if (!items) {
    if (!("role" in message)) throw new TypeError(`${where}: the message has no 'role' key`);
    return;
  }
  if (typeof message.role === "string" || typeof message.type === "string") return;
  if (!("role" in message) && !("type" in message)) {
    throw new TypeError(`${where}: the message has no 'role' key (or, for a Responses item, 'type')`);
  }
  const shown = (key) => (key in message ? JSON.stringify(message[key]) ?? String(message[key]) : "missing");
  throw new TypeError(
    `${where}: a message needs a string 'role' (a chat message) or a string 'type' (a ` +
    `Responses item), got 'role' ${shown("role")} and 'type' ${shown("type")}`);
}

export function checkContext(context, { optional = true } = {}) {
  if ((context === null || context === undefined) && optional) return null;
  if (context instanceof RunContext) return context;
  const expected = optional ? "a RunContext or null" : "a RunContext";
  throw new TypeError(`context: expected ${expected}, got ${describe(context)}`);
}

/**
 * `[headMessage, ...messages, tailMessage]`, leaving out whichever is `null`. The input is
 * not mutated; the messages in the result are the caller's objects.
 */
export function splice(messages, context) {
  checkMessages(messages);
  const rc = checkContext(context);
  if (rc === null) return [...messages];
  const head = rc.headMessage;
  const tail = rc.tailMessage;
  const request = head === null ? [] : [head];
  for (const m of messages) request.push(m);
  if (tail !== null) request.push(tail);
  return request;
}

/** The fingerprint format version (python/runcontext/fingerprint.py). */
export const FINGERPRINT_VERSION = 1;

function isPlainObject(value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * `blake3:<hex>` over the model, the context digest, the revision and the tools (and,
 * when given, `basis` and `sampling`): one digest for "the same request, measured the same
 * way", equal to Python's `request_fingerprint` for the same arguments.
 */
export function requestFingerprint({ model, context, revision, tools = null, basis = null, sampling = null } = {}) {
  if (typeof model !== "string" || model === "") {
    throw new TypeError(`model: expected a non-empty model name, got ${JSON.stringify(model) ?? describe(model)}`);
  }
  checkContext(context, { optional: false });
  if (typeof revision !== "string" || revision === "") {
    throw new TypeError(`revision: expected a non-empty string (the builder's revision), got ${JSON.stringify(revision) ?? describe(revision)}`);
  }
  const declared = [];
  if (tools !== null && tools !== undefined) {
    if (!Array.isArray(tools)) {
      throw new TypeError(`tools: expected an array of tool declarations, got ${describe(tools)}`);
    }
    tools.forEach((tool, index) => {
      if (!isPlainObject(tool)) {
        throw new TypeError(`tools[${index}]: expected a tool declaration object, got ${describe(tool)}`);
      }
      declared.push(tool);
    });
  }
  const document = { fingerprint: FINGERPRINT_VERSION, model, context: context.digest, revision, tools: declared };
  if (basis !== null && basis !== undefined) {
    if (typeof basis !== "string" || basis === "") {
      throw new TypeError(`basis: expected a digest string, got ${JSON.stringify(basis) ?? describe(basis)}`);
    }
    document.basis = basis;
  }
  if (sampling !== null && sampling !== undefined) {
    if (!isPlainObject(sampling)) {
      throw new TypeError(`sampling: expected an object of sampling parameters, got ${describe(sampling)}`);
    }
    document.sampling = sampling;
  }
  return digest(document);
}
