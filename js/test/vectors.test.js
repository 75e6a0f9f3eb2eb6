// Every conformance vector in docs/vectors (docs/CONFORMANCE.md), run against the package as
// python/runcontext/conformance.py runs them against the Python one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import {
  CanonicalJSONError, RunContext, RunContextError, RunContextTypeError, TranscriptError,
  canonicalJson, canonicalizeText, digest, digestBytes, keyedDigest, keyedDigestBytes,
  verifyTranscript,
} from "../src/index.js";

const VECTORS = new URL("../../docs/vectors/", import.meta.url);
const load = (name) => JSON.parse(readFileSync(new URL(name, VECTORS), "utf8"));
const hex = (s) => Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));
const utf8 = new TextEncoder();

/** RunContext arguments as the vectors write them: `{"utf16": [...]}` is that string. */
function vectorArgs(value) {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === "utf16" && Array.isArray(value.utf16) &&
        value.utf16.every((u) => Number.isInteger(u) && u >= 0 && u <= 0xffff)) {
      return String.fromCharCode(...value.utf16);
    }
    return Object.fromEntries(keys.map((k) => [k, vectorArgs(value[k])]));
  }
  return Array.isArray(value) ? value.map(vectorArgs) : value;
}

test("es-numbers.txt: every double is written as ECMAScript writes it", () => {
  const lines = readFileSync(new URL("es-numbers.txt", VECTORS), "utf8").split("\n").filter(Boolean);
  assert.ok(lines.length > 100000);
  const view = new DataView(new ArrayBuffer(8));
  // One array per 4096 doubles: the same writer as a lone number, far fewer calls.
  for (let start = 0; start < lines.length; start += 4096) {
    const chunk = lines.slice(start, start + 4096).map((line) => {
      const [bits, text] = line.split(" ");
      view.setBigUint64(0, BigInt(`0x${bits}`));
      return [view.getFloat64(0), text];
    });
    const written = canonicalJson(chunk.map(([v]) => v)).slice(1, -1).split(",");
    chunk.forEach(([, text], i) => assert.equal(written[i], text, lines[start + i]));
  }
});

for (const file of ["jcs.json", "jcs-refusals.json"]) {
  test(`${file}: canonical forms and refusals (kind, and where given, place)`, () => {
    const cases = load(file).cases;
    assert.ok(cases.length > 50);
    for (const c of cases) {
      const input = c.input_hex !== undefined ? hex(c.input_hex) : utf8.encode(c.input);
      if (c.error === undefined) {
        assert.equal(canonicalizeText(input), c.canonical, c.name);
        continue;
      }
      assert.throws(() => canonicalizeText(input), (error) => {
        assert.ok(error instanceof CanonicalJSONError, c.name);
        assert.equal(error.kind, c.error, c.name);
        if (c.at !== undefined) {
          const { offset, line, column, path } = c.at;
          assert.deepEqual({ offset: error.offset, line: error.line, column: error.column, path: error.path },
            { offset, line, column, path }, c.name);
        }
        return true;
      });
    }
  });
}

test("runcontext-v1.json: texts, digests and sections, or the error's kind and place", () => {
  const doc = load("runcontext-v1.json");
  assert.equal(doc.format, "runcontext-v1");
  const argument = { head_sections: "headSections", facts: "facts", tail_sections: "tailSections" };
  for (const c of doc.cases) {
    const args = vectorArgs(c.args ?? {});
    const build = () => new RunContext({
      headSections: args.head_sections, facts: args.facts, tailSections: args.tail_sections,
    });
    if (c.error !== undefined) {
      assert.throws(build, (error) => {
        assert.ok(error instanceof RunContextError, c.name);
        assert.deepEqual(
          { kind: error.kind, type_error: error instanceof RunContextTypeError, arg: error.argument, index: error.index },
          { ...c.error, arg: argument[c.error.arg] }, c.name);
        return true;
      });
      continue;
    }
    const rc = build();
    const e = c.expect;
    assert.equal(rc.headText, e.head_text, c.name);
    assert.equal(rc.tailText, e.tail_text, c.name);
    assert.equal(rc.digest, e.digest, c.name);
    assert.deepEqual(rc.facts, e.facts, c.name);
    assert.deepEqual(rc.headSections, e.head_sections, c.name);
    assert.deepEqual(rc.tailSections, e.tail_sections, c.name);
    assert.deepEqual(rc.sections.map(({ position, name, digest: d }) => ({ position, name, digest: d })), e.sections, c.name);
  }
});

test("keyed-digest.json: plain and keyed digests of bytes, values and contexts", () => {
  const doc = load("keyed-digest.json");
  for (const c of doc.cases) {
    const key = hex(c.key_hex);
    const e = c.expect;
    if (c.input_hex !== undefined) {
      const data = hex(c.input_hex);
      assert.equal(digestBytes(data), e.digest, c.name);
      assert.equal(keyedDigestBytes(key, data), e.keyed_digest, c.name);
    } else if (c.value !== undefined) {
      assert.equal(canonicalJson(c.value), e.canonical, c.name);
      assert.equal(digest(c.value), e.digest, c.name);
      assert.equal(keyedDigest(key, c.value), e.keyed_digest, c.name);
    } else {
      const rc = new RunContext({
        headSections: c.args.head_sections, facts: c.args.facts, tailSections: c.args.tail_sections,
      });
      const keyed = rc.keyedDigests(key);
      assert.equal(rc.digest, e.digest, c.name);
      assert.equal(keyed.digest, e.keyed_digest, c.name);
      assert.deepEqual(rc.sectionDigests, e.section_digests, c.name);
      assert.deepEqual(keyed.sectionDigests, e.keyed_section_digests, c.name);
    }
  }
});

test("transcript-v2.json: what a reader reads, or the refusal's kind and line", () => {
  const doc = load("transcript-v2.json");
  assert.equal(doc.format, "transcript-v2");
  for (const c of doc.cases) {
    const bytes = c.hex !== undefined ? hex(c.hex) : utf8.encode(c.text);
    const options = c.max_line_bytes !== undefined ? { maxLineBytes: c.max_line_bytes, name: c.name } : { name: c.name };
    if (c.error !== undefined) {
      assert.throws(() => verifyTranscript(bytes, options), (error) => {
        assert.ok(error instanceof TranscriptError, `${c.name}: ${error}`);
        assert.deepEqual({ kind: error.kind, line: error.line }, c.error, c.name);
        return true;
      });
      continue;
    }
    const v = verifyTranscript(bytes, options);
    const observed = {
      messages: v.messages.map((m) => canonicalJson(m)),
      runs: v.runs.map((run) => ({
        run: run.number, digest: run.digest, time: run.timestamp, messages: run.messages,
        head_text: run.context.headText, tail_text: run.context.tailText,
        sections: run.context.sections.map(({ position, name, digest: d }) => ({ position, name, digest: d })),
        facts: run.context.facts.map((p) => [...p]), tokens: run.tokens,
        sent: run.conversation().map((m) => canonicalJson(m)),
      })),
      edits: v.edits.map((e) => (e.kind === "compaction"
        ? { ...e, messages: e.messages.map((m) => canonicalJson(m)) }
        : { ...e, items: e.items.map(([i, m]) => [i, canonicalJson(m)]) })),
      chain: v.chain,
      torn: v.torn,
      unchained: v.unchained,
    };
    assert.deepEqual(observed, c.expect, c.name);
  }
});
