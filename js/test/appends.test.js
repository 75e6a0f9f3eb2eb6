// Durable appends and concurrent writers on Node: fsync where `durable: true` asks for it, and
// an append another writer raced is taken back and built again on that writer's records.
// (Real Python and Node processes on one file: tests/test_js_concurrent_writers.py.)
import { test } from "node:test";
import assert from "node:assert/strict";
import fsCjs, { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { RunContext, Session, TranscriptError, verifyTranscript } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "runcontext-js-appends-"));
test.after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(dir, `t${n++}.jsonl`);
const clock = () => new Date(Date.UTC(2026, 11, 6, 9, 30));
const system = { role: "system", content: "You are a careful agent." };
const user = (content) => ({ role: "user", content });
const rc = new RunContext({ facts: [["date", "2026-12-06"]] });

/** Runs `body` with `node:fs`'s `name` replaced by `wrap(original)`, as the package sees it. */
function patched(name, wrap, body) {
  const original = fsCjs[name];
  fsCjs[name] = wrap(original);
  syncBuiltinESMExports();
  try {
    return body();
  } finally {
    fsCjs[name] = original;
    syncBuiltinESMExports();
  }
}

/** Each fsync, as "file" or "directory". */
function fsyncs(body) {
  const seen = [];
  patched("fsyncSync", (fsync) => (fd) => {
    seen.push(fsCjs.fstatSync(fd).isDirectory() ? "directory" : "file");
    return fsync(fd);
  }, body);
  return seen;
}

test("durable: the new file and its directory entry on create, the file after each append", () => {
  const path = fresh();
  assert.deepEqual(fsyncs(() => {
    const session = Session.create(path, [system], { clock, durable: true });
    session.recordRun([system, user("a")], rc, { role: "assistant", content: "b" });
    session.appendMessages([user("c")]);
    session.close();
  }), ["file", "directory", "file", "file"]);
  assert.deepEqual(fsyncs(() => {
    const session = Session.open(path, { clock, durable: true });
    session.recordRun([system, user("a"), { role: "assistant", content: "b" }, user("c")], null);
    session.close();
  }), ["file"]);
  // Without it, none: a record survives the process, not a power loss.
  assert.deepEqual(fsyncs(() => {
    const session = Session.create(fresh(), [system], { clock });
    session.appendMessages([user("x")]);
    session.close();
  }), []);
  assert.throws(() => Session.open(path, { durable: "yes" }), { name: "TypeError", message: "durable: expected a boolean, got string" });
  assert.equal(verifyTranscript(readFileSync(path)).runs.length, 2);
});

test("an append that lands after another writer's is taken back and built again on it", () => {
  const path = fresh();
  Session.create(path, [system], { clock }).close();
  const a = Session.open(path, { clock });
  const b = Session.open(path, { clock });
  let raced = false;
  // B appends in the instant between A's last check and A's write (what a second process
  // can do, since Node takes no lock): A's bytes land after B's record.
  patched("writeSync", (write) => function (fd, ...rest) {
    if (!raced) {
      raced = true;
      b.appendMessages([user("from b")]);
    }
    return write.call(this, fd, ...rest);
  }, () => a.appendMessages([user("from a")]));
  assert.ok(raced);
  const verified = verifyTranscript(readFileSync(path));
  assert.deepEqual(verified.messages.map((m) => m.content), [system.content, "from b", "from a"]);
  assert.deepEqual(a.messages(), verified.messages);
  a.close();
  b.close();
});

test("a writer that fell behind in such a race is refused by the conversation check, nothing written", () => {
  const path = fresh();
  Session.create(path, [system], { clock }).close();
  const a = Session.open(path, { clock });
  const b = Session.open(path, { clock });
  let raced = false;
  let before;
  assert.throws(() => patched("writeSync", (write) => function (fd, ...rest) {
    if (!raced) {
      raced = true;
      b.recordRun([system, user("b's turn")], rc);
      before = readFileSync(path);
    }
    return write.call(this, fd, ...rest);
  }, () => a.recordRun([system, user("a's turn")], rc)), (e) => e.name === "ConversationMismatchError" && e.index === 1);
  assert.deepEqual(readFileSync(path), before);
  assert.deepEqual(verifyTranscript(before).runs.length, 1);
  a.close();
  b.close();
});

test("misplaced bytes that another append already follows are reported, not hidden", () => {
  const path = fresh();
  Session.create(path, [system], { clock }).close();
  const a = Session.open(path, { clock });
  const b = Session.open(path, { clock });
  let inside = false;
  let start;
  assert.throws(() => patched("writeSync", (write) => function (fd, ...rest) {
    if (inside) return write.call(this, fd, ...rest);
    inside = true;
    start = fsCjs.statSync(path).size;
    b.appendMessages([user("b")]); // lands first
    const written = write.call(this, fd, ...rest);
    // A third writer appends right after A's misplaced bytes, before A can take them back.
    fsCjs.appendFileSync(path, "{}\n");
    return written;
  }, () => a.appendMessages([user("a")])), (e) => {
    assert.ok(e instanceof TranscriptError);
    assert.equal(e.message, `${path}: another writer appended at the same instant as this one, and further ` +
      `records followed before this append could take its own back: the file no longer verifies after byte ${start} ` +
      "(a chain error there); give the transcript one writer at a time");
    return true;
  });
  a.close();
  b.close();
});
