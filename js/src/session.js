// Transcripts (docs/TRANSCRIPT.md), mirroring Python's Session: every record is written and
// verified by the core; this file reads and appends bytes (a file on Node, or memory), and
// keeps the conversation and the runs the core read.

import { RunContext, EMPTY, canonicalJsonBytes, checkContext, checkMessages, digestBytes } from "./index.js";
import {
  CanonicalJSONError,
  ConversationMismatchError,
  SeedMismatchError,
  TornTranscriptError,
  TranscriptError,
  TranscriptFormatError,
  TranscriptReplacedError,
  TranscriptVersionError,
  transcriptError,
} from "./errors.js";
import { core, decoder, fs, outputJson, outputView, setFields, setInput } from "./wasm.js";

/** The default line cap (docs/TRANSCRIPT.md): 64 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;
/** The largest line cap this package takes: the wasm module addresses 4 GiB. */
const MAX_LINE_CAP = 2 ** 32 - 1;

const utf8 = new TextEncoder();
const released = new FinalizationRegistry((handle) => core.rc_transcript_free(handle));

function checkMaxLineBytes(maxLineBytes) {
  if (typeof maxLineBytes !== "number" || !Number.isInteger(maxLineBytes)) {
    throw new TypeError(`maxLineBytes: expected an integer, got ${typeof maxLineBytes}`);
  }
  if (maxLineBytes < 1 || maxLineBytes > MAX_LINE_CAP) {
    throw new RangeError(
      `maxLineBytes: expected 1 to ${MAX_LINE_CAP}, got ${maxLineBytes} (there is no ` +
      "'unlimited': every record is longer than 0 bytes; give a large cap instead)");
  }
}

/** The canonical JSON of one message; an error names `argument` (`messages[3]`). */
function messageBody(message, argument) {
  try {
    return canonicalJsonBytes(message);
  } catch (error) {
    if (!(error instanceof CanonicalJSONError)) throw error;
    const Class = error.constructor;
    const wrapped = new Class(`${argument}: the message cannot be stored in a transcript: ${error.message}`, error);
    wrapped.cause = error;
    throw wrapped;
  }
}

function pad(n, width = 2) {
  return String(n).padStart(width, "0");
}

/** ISO 8601 in UTC with `Z`, microseconds only when there are some (as Python writes it). */
export function timestamp(date) {
  if (!(date instanceof Date) || Number.isNaN(date.getTime())) {
    throw new TypeError(`the session clock returned ${date instanceof Date ? "an invalid Date" : typeof date}, not a Date`);
  }
  const base = `${pad(date.getUTCFullYear(), 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}` +
    `T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}`;
  const ms = date.getUTCMilliseconds();
  return ms === 0 ? `${base}Z` : `${base}.${pad(ms, 3)}000Z`;
}

/** A run as recorded: its number, time, context digest, conversation length and context. */
export class Run {
  #generation;
  constructor({ number, timestamp: time, digest, messages, tokens, context, generation = [] }) {
    this.number = number;
    this.timestamp = time;
    this.digest = digest;
    this.messages = messages;
    this.tokens = tokens;
    this.context = context;
    this.#generation = generation;
    Object.freeze(this);
  }
  /** The conversation exactly as this run was sent it (docs/TRANSCRIPT.md, *Replay*). */
  conversation() { return this.#generation.slice(0, this.messages).map((text) => JSON.parse(text)); }
  get time() { return new Date(this.timestamp); }
  get sections() { return this.context.sections; }
  get facts() { return this.context.facts; }
}

/** How long an append waits for another writer's `flock` on the file (Linux): 10 s. */
const WRITER_WAIT_MS = 10_000;
/** How often an append retries when other writers keep appending under it: 100 times. */
const APPEND_ATTEMPTS = 100;
// /proc/locks: "<n>: FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF" for a held
// exclusive flock ("<n>: -> FLOCK …" for a waiter, not matched). Major and minor in hex.
const FLOCK_WRITE = /^\d+: FLOCK\s+\S+\s+WRITE\s+(\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/gm;
let pause = null;

/** Sleeps `ms` milliseconds, synchronously (the session's API is synchronous); Node only. */
function sleep(ms) {
  pause ??= new Int32Array(new SharedArrayBuffer(4));
  Atomics.wait(pause, 0, 0, ms);
}

/** A file's bytes on Node (`fs`). */
class FileStore {
  constructor(path, fd, writable, durable) {
    this.name = String(path);
    this.path = path;
    this.fd = fd;
    this.writable = writable;
    this.durable = durable;
    const st = fs.fstatSync(fd);
    this.identity = [st.dev, st.ino];
  }
  size() { return fs.fstatSync(this.fd).size; }
  read(offset, end) {
    const out = new Uint8Array(end - offset);
    let done = 0;
    while (done < out.length) {
      const n = fs.readSync(this.fd, out, done, out.length - done, offset + done);
      if (n === 0) break;
      done += n;
    }
    return out.subarray(0, done);
  }
  /** Appends `bytes` with one write on the O_APPEND descriptor (and fsync when durable). */
  append(bytes) {
    let done = 0;
    while (done < bytes.length) done += fs.writeSync(this.fd, bytes, done, bytes.length - done);
    if (this.durable) fs.fsyncSync(this.fd);
  }
  truncate(offset) {
    fs.ftruncateSync(this.fd, offset);
    if (this.durable) fs.fsyncSync(this.fd);
  }
  /** Refuses when the path no longer names the file opened (replaced, deleted, relinked). */
  checkSame(file) {
    let st = null;
    try { st = fs.statSync(this.path); } catch { st = null; }
    if (st === null || st.dev !== this.identity[0] || st.ino !== this.identity[1]) {
      throw new TranscriptReplacedError(
        "the path no longer names the file this session opened and verified (it was replaced, " +
        "renamed over or deleted); nothing was written: open the path again to continue the " +
        "file now there", { file });
    }
  }
  /**
   * The pid of a process holding an exclusive `flock` on this file (a Python writer
   * appending), read from Linux's /proc/locks; `null` when there is none, or no /proc/locks.
   */
  writer() {
    let table;
    try { table = fs.readFileSync("/proc/locks", "latin1"); } catch { return null; }
    const [dev, ino] = this.identity;
    const major = (dev >>> 8) & 0xfff;
    const minor = (dev & 0xff) | ((dev >>> 12) & 0xfff00);
    for (const m of table.matchAll(FLOCK_WRITE)) {
      if (Number(m[4]) === ino && parseInt(m[2], 16) === major && parseInt(m[3], 16) === minor) return Number(m[1]);
    }
    return null;
  }
  close() { if (this.fd !== null) { fs.closeSync(this.fd); this.fd = null; } }
}

/** Bytes in memory (`Session.fromBytes`); appends extend them (`session.toBytes()`). */
class BytesStore {
  constructor(bytes, name) {
    this.name = name;
    this.bytes = Uint8Array.from(bytes);
    this.length = this.bytes.length;
    this.writable = true;
  }
  size() { return this.length; }
  read(offset, end) { return this.bytes.subarray(offset, end); }
  append(bytes) {
    if (this.length + bytes.length > this.bytes.length) {
      const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.length + bytes.length));
      grown.set(this.bytes.subarray(0, this.length));
      this.bytes = grown;
    }
    this.bytes.set(bytes, this.length);
    this.length += bytes.length;
  }
  truncate(offset) { this.length = offset; }
  checkSame() {}
  writer() { return null; }
  close() {}
}

const NEWLINE = 0x0a;

/**
 * An append-only transcript of one conversation and of the context of each run
 * (docs/TRANSCRIPT.md). `Session.create(path, messages)` starts one, `Session.open(path)`
 * verifies and resumes one (Node), `Session.fromBytes(bytes)` reads one from memory
 * (anywhere). Files written by Python's `runcontext.Session` and by this class continue
 * each other.
 */
export class Session {
  // #messages is the current generation of the conversation (canonical texts); a compaction
  // or elision replaces it with a new array, so each run keeps the generation it was sent.
  #store; #handle; #messages = []; #runs = []; #edits = []; #offset = 0; #lastMessageLine = 0;
  #headerTime = ""; #torn = null; #repaired = null; #closed = false; #clock; #token; #maxLineBytes;

  constructor(secret) {
    if (secret !== PRIVATE) {
      throw new TypeError("use Session.create(path, messages), Session.open(path) or Session.fromBytes(bytes)");
    }
  }

  static #make(store, { maxLineBytes, clock }) {
    const session = new Session(PRIVATE);
    session.#store = store;
    session.#clock = clock ?? (() => new Date());
    session.#maxLineBytes = maxLineBytes;
    session.#handle = core.rc_transcript_new(maxLineBytes);
    session.#token = {};
    released.register(session, session.#handle, session.#token);
    return session;
  }

  /**
   * Starts a transcript at `path` for the conversation `messages` (at least message 0, the
   * seed) and opens it. The file appears complete or not at all; an existing file is never
   * overwritten (an `EEXIST` error: open it with `Session.open`). Node only.
   */
  static create(path, messages, { maxLineBytes = DEFAULT_MAX_LINE_BYTES, clock = null, durable = false } = {}) {
    requireFs("Session.create");
    checkMessages(messages, { items: true });
    checkMaxLineBytes(maxLineBytes);
    checkDurable(durable);
    if (messages.length === 0) {
      throw new RangeError("messages: a transcript needs the conversation's first message (its seed); " +
        "create the session once the conversation has one");
    }
    const bodies = messages.map((m, i) => messageBody(m, `messages[${i}]`));
    const when = timestamp((clock ?? (() => new Date()))());
    const handle = core.rc_transcript_new(maxLineBytes);
    let lines;
    try {
      lines = [writeHeader(handle, digestBytes(bodies[0]), when)];
      bodies.forEach((body, i) => lines.push(writeMessage(handle, body, `messages[${i}]`)));
    } finally {
      core.rc_transcript_free(handle);
    }
    // Written beside the target and linked into place: complete or absent, never overwriting.
    const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
    const fd = fs.openSync(temporary, "wx");
    try {
      for (const line of lines) fs.writeSync(fd, line);
      if (durable) fs.fsyncSync(fd);
      fs.closeSync(fd);
      fs.linkSync(temporary, path);
    } finally {
      try { fs.closeSync(fd); } catch { /* already closed */ }
      fs.unlinkSync(temporary);
    }
    if (durable) fsyncDirectory(path);
    return Session.open(path, { writable: true, maxLineBytes, clock, durable });
  }

  /**
   * Reads and verifies the transcript at `path`; the session can then append to it. The
   * first bad line throws a `TranscriptError` naming it and its `kind`. A torn last line (a
   * writer killed mid-append) is `session.torn`; appending is refused until the file is
   * opened with `repair: true`, which truncates it (`session.repaired`). `writable: null`
   * opens for appending when the file may be written, read-only otherwise. Node only.
   */
  static open(path, { repair = false, writable = null, maxLineBytes = DEFAULT_MAX_LINE_BYTES, clock = null, durable = false } = {}) {
    requireFs("Session.open");
    checkMaxLineBytes(maxLineBytes);
    checkDurable(durable);
    if (repair && writable === false) {
      throw new RangeError("repair: true needs a writable session: repairing truncates the file");
    }
    const flags = fs.constants.O_RDWR | fs.constants.O_APPEND;
    let fd;
    let canWrite = writable !== false || repair;
    if (canWrite) {
      try {
        fd = fs.openSync(path, flags);
      } catch (error) {
        if (writable === true || repair || (error.code !== "EACCES" && error.code !== "EPERM" && error.code !== "EROFS")) throw error;
        canWrite = false;
      }
    }
    if (!canWrite) fd = fs.openSync(path, "r");
    const session = Session.#make(new FileStore(path, fd, canWrite, durable), { maxLineBytes, clock });
    try {
      session.#readNew();
      session.#checkHeader();
      if (repair && session.#torn !== null) {
        session.#store.truncate(session.#torn.offset);
        session.#repaired = session.#torn;
        session.#torn = null;
      }
    } catch (error) {
      session.close();
      throw error;
    }
    return session;
  }

  /**
   * A session over a transcript's bytes, verified as `Session.open` verifies a file; it
   * may record runs, which extend the bytes (`toBytes()`). Runs anywhere, browsers too.
   */
  static fromBytes(bytes, { name = "<bytes>", maxLineBytes = DEFAULT_MAX_LINE_BYTES, clock = null, repair = false } = {}) {
    checkMaxLineBytes(maxLineBytes);
    const data = bytes instanceof Uint8Array ? bytes
      : ArrayBuffer.isView(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
        : bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : null;
    if (data === null) throw new TypeError("bytes: expected a Uint8Array or ArrayBuffer");
    const session = Session.#make(new BytesStore(data, name), { maxLineBytes, clock });
    try {
      session.#readNew();
      session.#checkHeader();
      if (repair && session.#torn !== null) {
        session.#store.truncate(session.#torn.offset);
        session.#repaired = session.#torn;
        session.#torn = null;
      }
    } catch (error) {
      session.close();
      throw error;
    }
    return session;
  }

  /** Closes the file and frees the core's state (idempotent). */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#store.close();
    released.unregister(this.#token);
    core.rc_transcript_free(this.#handle);
  }

  #state() {
    core.rc_transcript_state(this.#handle);
    return outputJson();
  }

  /** The file (or the name given to `fromBytes`). */
  get path() { return this.#store.name; }
  /** The digest of message 0 when the transcript started. */
  get seed() { return this.#state().seed; }
  /** The chain digest of the last record (docs/TRANSCRIPT.md, *The chain*). */
  get chain() { return this.#state().chain; }
  /** The transcript's format version (1: unchained and read-only; 2). */
  get version() { return this.#state().version; }
  /** The header's time, as written. */
  get created() { return this.#headerTime; }
  get writable() { return this.#store.writable && !this.#closed; }
  /** `{line, offset, length}` of a torn last line, or `null`. */
  get torn() { return this.#torn; }
  /** What `repair: true` truncated, or `null`. */
  get repaired() { return this.#repaired; }
  get messageCount() { this.#refresh(); return this.#messages.length; }

  /** The whole transcript's bytes (a `fromBytes` session: with what it appended). */
  toBytes() {
    const store = this.#store;
    return store.read(0, store.size()).slice();
  }

  /** The conversation alone, in order, as recorded; fresh objects. */
  messages() {
    this.#refresh();
    return this.#messages.map((text) => JSON.parse(text));
  }

  /** Every compaction and elision, in order (docs/TRANSCRIPT.md). */
  edits() {
    this.#refresh();
    return [...this.#edits];
  }

  /** Every run, each with its RunContext rebuilt from the transcript. */
  runs() {
    this.#refresh();
    return [...this.#runs];
  }

  /** Rereads records other writers appended (called by every read and append). */
  refresh() { this.#refresh(); }

  #refresh() {
    if (this.#closed) throw new Error(`${this.#store.name}: the session is closed`);
    this.#readNew();
  }

  /** Reads and verifies every complete record after the ones read so far; a refused
   * record throws, and the records before it stay read. */
  #readNew() {
    const store = this.#store;
    const end = store.size();
    if (end <= this.#offset) {
      this.#torn = null;
      return;
    }
    const data = store.read(this.#offset, end);
    let line = this.#state().lines;
    let start = 0;
    for (;;) {
      const newline = data.indexOf(NEWLINE, start);
      if (newline === -1) break;
      line += 1;
      this.#take(data.subarray(start, newline), line);
      this.#offset += newline + 1 - start;
      start = newline + 1;
    }
    const partial = data.length - start;
    if (partial > this.#maxLineBytes) {
      // Longer than the cap before its newline: whatever follows, the record is refused.
      throw new TranscriptFormatError(
        `the record is longer than the ${this.#maxLineBytes}-byte line cap; if the transcript ` +
        "is genuine, open it with a larger maxLineBytes", { file: store.name, line: line + 1, kind: "too-long" });
    }
    this.#torn = partial === 0 ? null : { line: line + 1, offset: this.#offset, length: partial };
  }

  #take(raw, lineNumber) {
    setInput(raw);
    if (core.rc_transcript_read(this.#handle) !== 0) {
      throw transcriptError(outputJson(), this.#store.name);
    }
    const out = outputView();
    const tag = out[0];
    if (tag === 0x6d) { // m
      this.#messages.push(decoder.decode(out.subarray(1)));
      this.#lastMessageLine = lineNumber;
    } else if (tag === 0x72) { // r
      const info = JSON.parse(decoder.decode(out.subarray(1)));
      this.#runs.push(new Run({
        number: info.run, timestamp: info.time, digest: info.digest, messages: info.messages,
        tokens: info.tokens, context: RunContext._fromCore(info.context), generation: this.#messages,
      }));
    } else if (tag === 0x63 || tag === 0x65) { // c, e: a compaction or an elision
      const [head, ...bodies] = decoder.decode(out.subarray(1)).split("\n");
      const info = JSON.parse(head);
      const next = [...this.#messages];
      if (tag === 0x63) {
        next.splice(info.start, info.end - info.start, ...bodies);
        this.#edits.push({
          kind: "compaction", after_run: this.#runs.length, time: info.time, start: info.start,
          end: info.end, messages: bodies.map((text) => JSON.parse(text)), mode: info.mode,
          tokens: info.tokens,
        });
      } else {
        info.indices.forEach((index, i) => { next[index] = bodies[i]; });
        this.#edits.push({
          kind: "elision", after_run: this.#runs.length, time: info.time,
          items: info.indices.map((index, i) => [index, JSON.parse(bodies[i])]),
        });
      }
      this.#messages = next;
      this.#lastMessageLine = lineNumber;
    } else if (tag === 0x68) { // h
      this.#headerTime = decoder.decode(out.subarray(1));
    }
  }

  #checkHeader() {
    if (this.#state().lines === 0) {
      throw new TranscriptFormatError(
        "no header record: the file is empty or holds only a torn first line; it is not a " +
        "transcript (create one with Session.create)", { file: this.#store.name, line: 1, kind: "blank-line" });
    }
  }

  /** Refuses a conversation whose message 0 is not this transcript's seed. */
  checkSeed(messages) {
    checkMessages(messages, { items: true, start: Math.max(this.#messages.length - 1, 0) });
    const given = messages.length ? digestBytes(messageBody(messages[0], "messages[0]")) : null;
    const seed = this.seed;
    if (given !== seed) {
      const shown = given === null ? "it is empty" : `its message 0 has digest ${given}`;
      throw new SeedMismatchError(
        `the conversation does not continue this transcript: ${shown}, but the transcript's ` +
        `seed (message 0 when it started) is ${seed}; pass the conversation it records ` +
        "(session.messages()) or start a new transcript with Session.create",
        { file: this.#store.name, recorded: seed, given });
    }
  }

  /** The checks `recordRun` makes of the conversation, without writing. */
  checkConversation(messages) {
    this.checkSeed(messages);
    this.#refresh();
    this.#checkContinues(messages);
  }

  #checkContinues(messages) {
    const recorded = this.#messages.length;
    if (messages.length < recorded) {
      throw new ConversationMismatchError(
        `the conversation has ${messages.length} messages but the transcript already records ` +
        `${recorded}; a transcript is append-only: pass the whole conversation, or start a new ` +
        "transcript with Session.create", { file: this.#store.name });
    }
    if (recorded < 2) return;
    const last = recorded - 1;
    const expected = digestBytes(utf8.encode(this.#messages[last]));
    const given = digestBytes(messageBody(messages[last], `messages[${last}]`));
    if (given !== expected) {
      throw new ConversationMismatchError(
        `the conversation does not continue this transcript: its message ${last} has digest ` +
        `${given}, but the transcript's message ${last} (the last recorded) has digest ` +
        `${expected}; pass the conversation it records (session.messages() plus the new ` +
        "messages) or start a new transcript with Session.create",
        { file: this.#store.name, line: this.#lastMessageLine, index: last, recorded: expected, given });
    }
  }

  #checkWritable() {
    if (this.#closed) throw new Error(`${this.#store.name}: the session is closed`);
    if (!this.#store.writable) {
      throw new Error(`${this.#store.name}: the session is read-only (opened with writable: false, ` +
        "or the file is not writable by this process); open it with writable: true to append");
    }
    if (this.version === 1) {
      throw new TranscriptVersionError(
        "a version 1 transcript is read-only: its records are not chained; start a new " +
        "transcript (Session.create) to record more runs", { file: this.#store.name, kind: "version" });
    }
  }

  #checkNotTorn() {
    const torn = this.#torn;
    if (torn !== null) {
      throw new TornTranscriptError(
        `the file ends with a torn record (${torn.length} bytes without a newline, from a writer ` +
        "that was killed mid-append, or one still appending); appending after it would corrupt " +
        "the next record: if no writer is running, reopen " +
        "with Session.open(path, { repair: true }) to truncate it", { file: this.#store.name, line: torn.line });
    }
  }

  /**
   * Records one run: the conversation as sent (it must continue the recorded one; the new
   * messages are appended), a `section` record for each section body not recorded yet, the
   * `run-context` envelope, and `reply` (if given) as the next message. `context: null` is
   * the empty context; `tokens` is the envelope's optional `tokens` member. Returns the Run.
   */
  recordRun(messages, context = null, reply = null, { tokens = null } = {}) {
    this.checkSeed(messages);
    let tokensBody = new Uint8Array(0);
    if (tokens !== null && tokens !== undefined) {
      if (typeof tokens !== "object" || Array.isArray(tokens)) {
        throw new TypeError(`tokens: expected an object (a request's counts), got ${Array.isArray(tokens) ? "Array" : typeof tokens}`);
      }
      tokensBody = canonicalJsonBytes(tokens);
    }
    const rc = checkContext(context) ?? EMPTY;
    let replyBody = null;
    if (reply !== null && reply !== undefined) {
      checkMessages([reply], { argument: "reply", items: true });
      replyBody = messageBody(reply, "reply");
    }
    const when = timestamp(this.#clock());
    return this.#append(() => {
      this.#checkContinues(messages);
      const recorded = this.#messages.length;
      const lines = [];
      const added = [];
      for (let index = recorded; index < messages.length; index++) {
        const body = messageBody(messages[index], `messages[${index}]`);
        lines.push(writeMessage(this.#handle, body, `messages[${index}]`));
        added.push(body);
      }
      setFields(rc._entriesJson(), when, String(messages.length), tokensBody);
      if (core.rc_transcript_write_run(this.#handle) !== 0) throw new RangeError(outputJson().message);
      lines.push(outputView().slice());
      if (replyBody !== null) {
        lines.push(writeMessage(this.#handle, replyBody, "reply"));
        added.push(replyBody);
      }
      const run = new Run({
        number: this.#state().runs, timestamp: when, digest: rc.digest, messages: messages.length,
        tokens: tokensBody.length ? JSON.parse(decoder.decode(tokensBody)) : null, context: rc,
      });
      return { lines, added, run, replyLast: replyBody !== null };
    });
  }

  /** Appends `messages` to the recorded conversation, each as one `message` record. */
  appendMessages(messages) {
    checkMessages(messages, { items: true });
    const bodies = messages.map((m, i) => messageBody(m, `messages[${i}]`));
    this.#append(() => ({
      lines: bodies.map((body, i) => writeMessage(this.#handle, body, `messages[${i}]`)),
      added: bodies, run: null, replyLast: bodies.length > 0,
    }));
  }

  /**
   * Appends what `build` makes (checked and built against every record read so far), as
   * safely as Node allows without `flock` (docs/JAVASCRIPT.md, *Concurrent writers*): wait
   * while a `flock` writer holds the file; read and verify what others appended; build;
   * write only if the file still ends where this session's reading ended; then check that
   * the bytes landed there. A race found before writing builds again on the new records (so a
   * writer that fell behind is refused by the conversation check, as in Python); one found
   * after writing removes this append's bytes when nothing follows them, and builds again.
   */
  #append(build) {
    this.#checkWritable();
    let partial = 0;
    for (let attempt = 1; attempt <= APPEND_ATTEMPTS; attempt++) {
      this.#waitForWriter();
      this.#readNew();
      if (this.#torn !== null && this.#store instanceof FileStore && partial < 5) {
        partial += 1; // perhaps an append in progress: look again before calling it torn
        sleep(2);
        continue;
      }
      this.#checkNotTorn();
      this.#store.checkSame(this.#store.name);
      const done = this.#attempt(build);
      if (done !== RETRY) return done;
    }
    throw new TranscriptError(
      `other writers appended during each of ${APPEND_ATTEMPTS} attempts to append; nothing was ` +
      "written: retry, or give the transcript one writer at a time", { file: this.#store.name });
  }

  #attempt(build) {
    const store = this.#store;
    const start = this.#offset;
    const before = this.#state().lines;
    core.rc_transcript_begin(this.#handle);
    let built;
    let bytes;
    try {
      built = build();
      const total = built.lines.reduce((n, l) => n + l.length, 0);
      bytes = new Uint8Array(total);
      let at = 0;
      for (const l of built.lines) { bytes.set(l, at); at += l.length; }
      // The file must still end where this session's reading ended (no writer appended while
      // it built), and no flock writer may be at work: else read theirs and build again.
      if (store.writer() !== null || store.size() !== start) {
        core.rc_transcript_rollback(this.#handle);
        return RETRY;
      }
      store.append(bytes);
      if (!this.#landed(start, bytes)) {
        core.rc_transcript_rollback(this.#handle);
        return RETRY;
      }
    } catch (error) {
      core.rc_transcript_rollback(this.#handle);
      throw error;
    }
    core.rc_transcript_commit(this.#handle);
    this.#offset += bytes.length;
    for (const body of built.added) this.#messages.push(decoder.decode(body));
    if (built.added.length) {
      // The last message written is the last line, or the one before the run's lines.
      this.#lastMessageLine = built.replyLast ? this.#state().lines : before + built.added.length;
    }
    if (built.run !== null) this.#runs.push(built.run);
    return built.run;
  }

  /**
   * Whether the bytes just appended start at `start`, right after the records they were
   * built on. If another writer's append landed first, ours are out of place (their chain
   * follows a record that is no longer before them): removed when nothing follows them
   * (false: build again), else the file is refused from there on by every reader.
   */
  #landed(start, bytes) {
    const store = this.#store;
    const end = store.size();
    if (end === start + bytes.length || sameBytes(store.read(start, start + bytes.length), bytes)) return true;
    if (end >= start + bytes.length && sameBytes(store.read(end - bytes.length, end), bytes)) {
      store.truncate(end - bytes.length);
      return false;
    }
    throw new TranscriptError(
      `another writer appended at the same instant as this one, and further records followed ` +
      `before this append could take its own back: the file no longer verifies after byte ${start} ` +
      "(a chain error there); give the transcript one writer at a time", { file: store.name });
  }

  /** Waits while another process holds an exclusive `flock` on the file (Linux). */
  #waitForWriter() {
    const since = Date.now();
    for (let pid = this.#store.writer(); pid !== null; pid = this.#store.writer()) {
      if (Date.now() - since >= WRITER_WAIT_MS) {
        throw new TranscriptError(
          `another process (pid ${pid}) has held the transcript's write lock for ` +
          `${WRITER_WAIT_MS / 1000} s; nothing was written: retry once it has finished`, { file: this.#store.name });
      }
      sleep(1);
    }
  }
}

const RETRY = Symbol("retry");

function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const PRIVATE = Symbol("runcontext.Session");

function checkDurable(durable) {
  if (typeof durable !== "boolean") throw new TypeError(`durable: expected a boolean, got ${typeof durable}`);
}

/** fsync the directory holding `path`, so that a new name in it survives power loss. */
function fsyncDirectory(path) {
  const slash = String(path).lastIndexOf("/");
  const directory = slash === -1 ? "." : slash === 0 ? "/" : String(path).slice(0, slash);
  const fd = fs.openSync(directory, "r");
  try { fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
}

function requireFs(what) {
  if (fs === null) {
    throw new Error(`${what} needs Node's fs; in a browser use Session.fromBytes(bytes)`);
  }
}

function writeHeader(handle, seed, time) {
  setFields(seed, time);
  if (core.rc_transcript_write_header(handle) !== 0) throw new RangeError(outputJson().message);
  return outputView().slice();
}

function writeMessage(handle, body, argument) {
  setInput(body);
  if (core.rc_transcript_write_message(handle) !== 0) {
    throw new RangeError(`${argument}: the message cannot be stored in a transcript: ${outputJson().message}`);
  }
  return outputView().slice();
}

/**
 * Verifies a whole transcript given as bytes, as `Session.open` verifies a file: the first
 * bad line throws its `TranscriptError` (`kind`, `line`). Returns `{messages, runs, chain,
 * torn, unchained}` (`chain` is `null` for an unchained version 1 transcript).
 */
export function verifyTranscript(bytes, { maxLineBytes = DEFAULT_MAX_LINE_BYTES, name = "<bytes>" } = {}) {
  const session = Session.fromBytes(bytes, { name, maxLineBytes });
  try {
    const unchained = session.version === 1;
    return {
      messages: session.messages(),
      runs: session.runs(),
      edits: session.edits(),
      chain: unchained ? null : session.chain,
      torn: session.torn,
      unchained,
    };
  } finally {
    session.close();
  }
}
