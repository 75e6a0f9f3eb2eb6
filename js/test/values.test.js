// JavaScript values and the refusals of FORMAT.md § 1.6 (the vectors cover JSON text only).
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  DuplicateKeyError, InvalidNumberError, InvalidStringError, NestingTooDeepError, RunContext,
  RunContextTypeError, RunContextValueError, UnsupportedTypeError, canonicalJson,
  canonicalJsonBytes, canonicalizeText, digest, digestBytes, requestFingerprint, splice,
} from "../src/index.js";

const refused = (value, Class, kind, path) =>
  assert.throws(() => canonicalJson(value), (e) => {
    assert.ok(e instanceof Class, `${e}`);
    assert.equal(e.kind, kind);
    assert.equal(e.path, path);
    assert.ok(e.message.startsWith(`${path}: `), e.message);
    return true;
  });

test("numbers are doubles, written as Python floats are", () => {
  assert.equal(canonicalJson([1, 1.5, -0, 1e21, 1e-7, 2 ** 60, 5e-324]), "[1,1.5,0,1e+21,1e-7,1152921504606847000,5e-324]");
  assert.equal(canonicalJson(9007199254740991n), "9007199254740991");
  refused(NaN, InvalidNumberError, "non-finite", "$");
  refused({ a: [1, -Infinity] }, InvalidNumberError, "non-finite", "$.a[1]");
  refused([2n ** 53n], InvalidNumberError, "integer-out-of-range", "$[0]");
});

test("members sorted by UTF-16 code units; keys checked before values, values in canonical order", () => {
  assert.equal(canonicalJson({ "\uE000": 1, "😀": 2, b: 3, a: 4 }), '{"a":4,"b":3,"😀":2,"\uE000":1}');
  refused({ b: NaN, a: [Infinity] }, InvalidNumberError, "non-finite", "$.a[0]");
  refused({ a: NaN, "\ud800": 1 }, InvalidStringError, "lone-surrogate", "$");
  refused({ x: { "1a": [0, "\udc00"] } }, InvalidStringError, "lone-surrogate", '$.x["1a"][1]');
});

test("values with no JSON form are refused with their type, never converted", () => {
  refused({ a: undefined }, UnsupportedTypeError, "unsupported-type", "$.a");
  refused([new Date(0)], UnsupportedTypeError, "unsupported-type", "$[0]");
  refused(new Map([["a", 1]]), UnsupportedTypeError, "unsupported-type", "$");
  refused({ s: new Set() }, UnsupportedTypeError, "unsupported-type", "$.s");
  refused([() => 1], UnsupportedTypeError, "unsupported-type", "$[0]");
  refused([Symbol("x")], UnsupportedTypeError, "unsupported-type", "$[0]");
  refused(new Uint8Array(2), UnsupportedTypeError, "unsupported-type", "$");
  class Point { constructor() { this.x = 1; } }
  assert.throws(() => canonicalJson(new Point()), /a value of type Point has no JSON form/);
  assert.equal(canonicalJson(Object.assign(Object.create(null), { b: 1, a: 2 })), '{"a":2,"b":1}');
});

test("depth: the 513th container is refused, and a cycle is refused as too deep", () => {
  let ok = [];
  for (let i = 1; i < 512; i++) ok = [ok];
  assert.equal(canonicalJson(ok).length, 1024);
  refused([ok], NestingTooDeepError, "too-deep", `$${"[0]".repeat(512)}`);
  const cycle = { a: [] };
  cycle.a.push(cycle);
  assert.throws(() => canonicalJson(cycle), NestingTooDeepError);
});

test("text: strings and bytes; a lone surrogate in a string is refused", () => {
  assert.equal(canonicalizeText('{"b": 1.0, "a": "\\u00e9"}'), '{"a":"é","b":1}');
  assert.deepEqual(canonicalJsonBytes("é"), new Uint8Array([0x22, 0xc3, 0xa9, 0x22]));
  assert.throws(() => canonicalizeText("\"\ud800\""), InvalidStringError);
  assert.throws(() => canonicalizeText('{"a":1,"a":2}'), (e) => e instanceof DuplicateKeyError && e.line === 1 && e.column === 8);
  assert.equal(digest("abc"), digestBytes(new TextEncoder().encode('"abc"')));
  assert.equal(digestBytes(new Uint8Array(0)), "blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
});

test("RunContext: pairs, dropped nulls and undefined, read-only properties, errors with JS names", () => {
  const rc = new RunContext({
    headSections: [["identity", "You are careful."]],
    facts: [["date", "2026-11-30"], ["branch", null], ["sha", undefined]],
  });
  assert.equal(rc.headText, "You are careful.");
  assert.deepEqual(rc.headMessage, { role: "system", content: "You are careful." });
  assert.match(rc.tailText, /^## Current context\n\n- date: 2026-11-30\n\n/);
  assert.match(rc.digest, /^blake3:[0-9a-f]{64}$/);
  assert.deepEqual(rc.sections.map((s) => [s.name, s.position]), [["identity", "head"]]);
  assert.throws(() => { rc.digest = "x"; }, TypeError);
  assert.throws(() => { rc.sections[0].name = "x"; }, TypeError);
  assert.equal(new RunContext().headText, null);
  assert.equal(new RunContext().isEmpty, true);
  assert.throws(() => new RunContext({ tailSections: { a: "b" } }),
    (e) => e instanceof RunContextTypeError && e.kind === "mapping" && e.argument === "tailSections" && e.index === null && e.message.startsWith("tailSections: "));
  assert.throws(() => new RunContext({ facts: new Set() }), (e) => e.kind === "unordered");
  assert.throws(() => new RunContext({ facts: [["a", "1"], ["a", "2"]] }),
    (e) => e instanceof RunContextValueError && e.kind === "duplicate-name" && e.index === 1);
  assert.throws(() => new RunContext({ facts: [["a", 1]] }), (e) => e.kind === "value-type" && /number/.test(e.message));
  assert.throws(() => new RunContext({ facts: [["a", "\ud800"]] }), (e) => e.kind === "not-text");
});

test("splice: head first, tail last, the caller's objects unchanged", () => {
  const rc = new RunContext({ headSections: [["a", "A"]], facts: [["f", "F"]] });
  const messages = [{ role: "user", content: "hi" }];
  const request = splice(messages, rc);
  assert.equal(request.length, 3);
  assert.equal(request[1], messages[0]);
  assert.equal(request[0].content, "A");
  assert.deepEqual(splice(messages, null), messages);
  assert.throws(() => splice([{ content: "x" }], rc), /messages\[0\]: the message has no 'role' key/);
  assert.throws(() => splice(messages, {}), /context: expected a RunContext or null, got Object/);
});

test("requestFingerprint: the document Python's request_fingerprint hashes", () => {
  const rc = new RunContext({ facts: [["date", "2026-11-30"]] });
  const tools = [{ name: "t", parameters: { b: 1, a: 2.0 } }];
  assert.equal(
    requestFingerprint({ model: "m", context: rc, revision: "r1", tools }),
    digest({ fingerprint: 1, model: "m", context: rc.digest, revision: "r1", tools }));
  assert.equal(
    requestFingerprint({ model: "m", context: rc, revision: "r1", basis: "b", sampling: { temperature: 0 } }),
    digest({ fingerprint: 1, model: "m", context: rc.digest, revision: "r1", tools: [], basis: "b", sampling: { temperature: 0 } }));
  assert.throws(() => requestFingerprint({ model: "", context: rc, revision: "r" }), /model: expected a non-empty model name/);
  assert.throws(() => requestFingerprint({ model: "m", context: rc, revision: "r", tools: [{ d: NaN }] }),
    (e) => e instanceof InvalidNumberError && e.path === "$.tools[0].d");
});

test("a string with a lone surrogate is refused where the surrogate is, as Python locates it", () => {
  assert.throws(() => canonicalizeText('{"x":\n ["é\udc00"]}'), (e) =>
    e instanceof InvalidStringError && e.kind === "lone-surrogate" && e.line === 2 && e.column === 5 && e.offset === 11 &&
    e.message === "line 2, column 5: string contains a lone surrogate, which is not Unicode text and has no UTF-8 form");
  // As for bytes, text that is not Unicode is refused before the grammar is read.
  assert.throws(() => canonicalizeText('[1 2, "\ud800"]'), (e) => e.kind === "lone-surrogate" && e.column === 8);
});
