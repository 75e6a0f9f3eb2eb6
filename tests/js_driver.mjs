// The JavaScript side of tests/test_js_differential.py (here, beside it, and not in js/test/,
// where `node --test` would run it as a test): one JSON request per line on stdin,
// one JSON answer per line on stdout. Values arrive in a transport form that JSON can carry:
// {"$f": "<16 hex digits>"} is the double with those IEEE 754 bits, {"$n": "<digits>"} a
// bigint, {"$set": []} a Set, {"$undefined": 0} undefined; strings may hold lone surrogates
// (as \ud800 escapes).
import { createInterface } from "node:readline";
import { readFileSync } from "node:fs";

import {
  CanonicalJSONError, RunContext, RunContextError, RunContextTypeError, Session, TranscriptError,
  canonicalJson, canonicalizeText, digest, verifyTranscript,
} from "../js/src/index.js";
import { runCase } from "../js/test/adapter-cases.js";

const view = new DataView(new ArrayBuffer(8));

function decode(value) {
  if (Array.isArray(value)) return value.map(decode);
  if (value === null || typeof value !== "object") return value;
  const keys = Object.keys(value);
  if (keys.length === 1) {
    const [key] = keys;
    if (key === "$f") { view.setBigUint64(0, BigInt(`0x${value.$f}`)); return view.getFloat64(0); }
    if (key === "$n") return BigInt(value.$n);
    if (key === "$set") return new Set(value.$set.map(decode));
    if (key === "$undefined") return undefined;
  }
  return Object.fromEntries(keys.map((k) => [k, decode(value[k])]));
}

function failure(error) {
  if (error instanceof CanonicalJSONError) {
    return { class: error.name, kind: error.kind, path: error.path, line: error.line, column: error.column, offset: error.offset };
  }
  if (error instanceof RunContextError) {
    return { class: error.name, kind: error.kind, argument: error.argument, index: error.index, type_error: error instanceof RunContextTypeError };
  }
  if (error instanceof TranscriptError) {
    return { class: error.name, kind: error.kind, line: error.line, index: error.index ?? null };
  }
  return { class: error.name, message: error.message };
}

function contextOf(args) {
  return args === null ? null : new RunContext({
    headSections: decode(args.head_sections ?? null), facts: decode(args.facts ?? null), tailSections: decode(args.tail_sections ?? null),
  });
}

function describe(rc) {
  return {
    digest: rc.digest, head_text: rc.headText, tail_text: rc.tailText,
    sections: rc.sections.map((s) => [s.position, s.name, s.digest]), facts: rc.facts.map((p) => [...p]),
  };
}

function verified(path) {
  const v = verifyTranscript(readFileSync(path));
  return {
    messages: v.messages.map((m) => canonicalJson(m)),
    runs: v.runs.map((r) => ({ number: r.number, digest: r.digest, messages: r.messages, time: r.timestamp, context: describe(r.context) })),
    chain: v.chain,
  };
}

const OPS = {
  canonical: ({ value }) => {
    const v = decode(value);
    return { canonical: canonicalJson(v), digest: digest(v) };
  },
  text: ({ hex }) => canonicalizeText(Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16))),
  string: ({ text }) => canonicalizeText(text),
  runcontext: ({ args }) => describe(contextOf(args)),
  verify: ({ path }) => verified(path),
  create: ({ path, messages, time }) => {
    Session.create(path, messages, { clock: () => new Date(time) }).close();
    return verified(path);
  },
  // An adapter case as docs/vectors/adapters.json writes one (Python option names).
  adapter: (request) => runCase(request),
  record: ({ path, messages, context, reply, time }) => {
    const session = Session.open(path, { clock: () => new Date(time) });
    try {
      const run = session.recordRun(messages, contextOf(context), reply);
      return { number: run.number, digest: run.digest };
    } finally {
      session.close();
    }
  },
};

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  const request = JSON.parse(line);
  let answer;
  try {
    answer = { ok: OPS[request.op](request) };
  } catch (error) {
    answer = { error: failure(error) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
