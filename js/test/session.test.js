// Sessions on Node: create, open, record, the conversation checks, torn lines, replaced files.
import { test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import {
  ConversationMismatchError, RunContext, SeedMismatchError, Session, TornTranscriptError,
  TranscriptDigestError, TranscriptReplacedError, UnsupportedTypeError, verifyTranscript,
} from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "runcontext-js-"));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(dir, `t${n++}.jsonl`);
const clock = () => new Date(Date.UTC(2026, 0, 31, 9, 30, 0, 250));
const system = { role: "system", content: "You are a careful agent." };
const rc = new RunContext({ headSections: [["AGENTS.md", "Use tabs."]], facts: [["date", "2026-01-31"]] });

test("create, record runs, reopen: the conversation and every run read back", () => {
  const path = fresh();
  const session = Session.create(path, [system], { clock });
  const user = { role: "user", content: "hi", n: 1.0 };
  const run = session.recordRun([system, user], rc, { role: "assistant", content: "hello" });
  assert.equal(run.number, 1);
  assert.equal(run.digest, rc.digest);
  assert.equal(run.messages, 2);
  assert.equal(run.timestamp, "2026-01-31T09:30:00.250000Z");
  const second = session.recordRun([system, user, { role: "assistant", content: "hello" }, { role: "user", content: "more" }], null);
  assert.equal(second.number, 2);
  session.close();

  const reopened = Session.open(path);
  assert.deepEqual(reopened.messages(), [system, user, { role: "assistant", content: "hello" }, { role: "user", content: "more" }]);
  const runs = reopened.runs();
  assert.deepEqual(runs.map((r) => [r.number, r.digest, r.messages]), [[1, rc.digest, 2], [2, new RunContext().digest, 4]]);
  assert.equal(runs[0].context.headText, "Use tabs.");
  assert.equal(reopened.chain, verifyTranscript(readFileSync(path)).chain);
  reopened.close();
  assert.throws(() => Session.create(path, [system]), { code: "EEXIST" });
});

test("a conversation that does not continue the transcript is refused, naming the message", () => {
  const session = Session.create(fresh(), [system, { role: "user", content: "a" }], { clock });
  assert.throws(() => session.recordRun([{ role: "system", content: "other" }], rc),
    (e) => e instanceof SeedMismatchError && e.index === 0 && e.line === 1 && e.recorded === session.seed);
  assert.throws(() => session.recordRun([system, { role: "user", content: "b" }], rc),
    (e) => e instanceof ConversationMismatchError && e.index === 1 && e.line === 3);
  assert.throws(() => session.recordRun([system], rc), (e) => e instanceof ConversationMismatchError && e.index === null);
  assert.throws(() => session.recordRun([system, { role: "user", content: "a" }, { role: "user", content: NaN }], rc),
    /messages\[2\]: the message cannot be stored in a transcript: \$\.content: NaN/);
  assert.throws(() => session.recordRun([system, { role: "user", content: "a" }, { role: "user", d: new Date() }]),
    (e) => e instanceof UnsupportedTypeError && e.path === "$.d");
  // Nothing was written by the refusals.
  assert.equal(session.runs().length, 0);
  assert.equal(session.messages().length, 2);
  session.close();
});

test("a torn last line is reported, refuses appends, and repair truncates it", () => {
  const path = fresh();
  Session.create(path, [system], { clock }).close();
  const whole = readFileSync(path);
  appendFileSync(path, '{"chain":"blake3:');
  const session = Session.open(path);
  assert.deepEqual(session.torn, { line: 3, offset: whole.length, length: 17 });
  assert.throws(() => session.recordRun([system], rc), (e) => e instanceof TornTranscriptError && e.line === 3);
  session.close();
  const repaired = Session.open(path, { repair: true });
  assert.equal(repaired.repaired.length, 17);
  assert.equal(repaired.torn, null);
  repaired.recordRun([system], rc);
  repaired.close();
  assert.equal(verifyTranscript(readFileSync(path)).runs.length, 1);
});

test("an edited record is refused with its line; a replaced file refuses appends", () => {
  const path = fresh();
  Session.create(path, [system, { role: "user", content: "a" }], { clock }).close();
  const text = readFileSync(path, "utf8");
  const edited = fresh();
  writeFileSync(edited, text.replace('"content":"a"', '"content":"b"'));
  assert.throws(() => Session.open(edited), (e) => e instanceof TranscriptDigestError && e.kind === "chain" && e.line === 3);

  const session = Session.open(path);
  const other = fresh();
  writeFileSync(other, text);
  renameSync(other, path);
  assert.throws(() => session.recordRun([system, { role: "user", content: "a" }], rc), TranscriptReplacedError);
  session.close();
});

test("fromBytes: a session in memory records runs, and the bytes read back the same", () => {
  const path = fresh();
  Session.create(path, [system], { clock }).close();
  const session = Session.fromBytes(readFileSync(path), { clock });
  session.recordRun([system, { role: "user", content: "x" }], rc);
  const bytes = session.toBytes();
  session.close();
  const verified = verifyTranscript(bytes);
  assert.equal(verified.runs[0].context.digest, rc.digest);
  assert.equal(verified.messages.length, 2);
  assert.throws(() => session.messages(), /the session is closed/);
});

test("two sessions on one file: the second catches up before it appends", () => {
  const path = fresh();
  Session.create(path, [system], { clock }).close();
  const a = Session.open(path, { clock });
  const b = Session.open(path, { clock });
  a.recordRun([system, { role: "user", content: "1" }], rc);
  b.recordRun([system, { role: "user", content: "1" }, { role: "user", content: "2" }], rc);
  a.close();
  b.close();
  const verified = verifyTranscript(readFileSync(path));
  assert.deepEqual(verified.runs.map((r) => r.number), [1, 2]);
  assert.equal(verified.messages.length, 3);
});

test("a read-only session reads but refuses to append; options are checked", () => {
  const path = fresh();
  Session.create(path, [system], { clock }).close();
  const session = Session.open(path, { writable: false });
  assert.equal(session.writable, false);
  assert.throws(() => session.recordRun([system], rc), /the session is read-only/);
  assert.throws(() => Session.open(path, { writable: false, repair: true }), /repair: true needs a writable session/);
  assert.throws(() => Session.open(path, { maxLineBytes: 0 }), /maxLineBytes: expected 1 to 4294967295, got 0/);
  assert.throws(() => Session.create(fresh(), []), /messages: a transcript needs the conversation's first message/);
  assert.throws(() => Session.create(fresh(), [{ content: "x" }]), /messages\[0\]: the message has no 'role' key \(or, for a Responses item, 'type'\)/);
  assert.throws(() => Session.open(join(dir, "missing.jsonl")), { code: "ENOENT" });
  session.close();
});
