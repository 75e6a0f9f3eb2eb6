// Figures for docs/JAVASCRIPT.md (by hand: `node js/bench/bench.mjs` after `make js`; never a
// test): the .wasm's size, start-up (import + first call), and throughput of RunContext +
// digest and of canonicalJson against a small pure-JavaScript implementation of the same
// format written for this benchmark (below) and against JSON.stringify, interleaved in one
// process so that all three see the same machine state; then what each request-body adapter
// costs per call beside `splice`. Prints medians and ratios.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

import {
  RunContext, anthropicMessages, canonicalJson, digestBytes, openaiChatRequest, openaiResponses, splice,
} from "../src/index.js";

// --- the pure-JavaScript reference of the benchmark ----------------------------------------

/** Canonical JSON (RFC 8785) in plain JavaScript: JSON.stringify writes strings and numbers
 * as RFC 8785 does, and the default sort compares UTF-16 code units. No refusals checked
 * beyond non-finite numbers (the wasm path checks every rule of FORMAT.md § 1.6). */
function jsCanonical(value) {
  if (value === null || typeof value !== "object") {
    if (typeof value === "number" && !Number.isFinite(value)) throw new Error("non-finite");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(jsCanonical).join(",")}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${jsCanonical(value[k])}`).join(",")}}`;
}

// BLAKE3 (the hash of FORMAT.md § 2), unkeyed, in plain JavaScript.
const IV = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
const PERMUTATION = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];
const CHUNK_START = 1, CHUNK_END = 2, PARENT = 4, ROOT = 8;

function compress(cv, m, counter, blockLen, flags) {
  const s = new Uint32Array(16);
  s.set(cv, 0);
  s.set(IV.subarray(0, 4), 8);
  s[12] = counter >>> 0;
  s[13] = Math.floor(counter / 2 ** 32) >>> 0;
  s[14] = blockLen;
  s[15] = flags;
  let w = Uint32Array.from(m);
  const g = (a, b, c, d, x, y) => {
    s[a] = s[a] + s[b] + x; s[d] ^= s[a]; s[d] = (s[d] >>> 16) | (s[d] << 16);
    s[c] = s[c] + s[d]; s[b] ^= s[c]; s[b] = (s[b] >>> 12) | (s[b] << 20);
    s[a] = s[a] + s[b] + y; s[d] ^= s[a]; s[d] = (s[d] >>> 8) | (s[d] << 24);
    s[c] = s[c] + s[d]; s[b] ^= s[c]; s[b] = (s[b] >>> 7) | (s[b] << 25);
  };
  for (let round = 0; round < 7; round++) {
    g(0, 4, 8, 12, w[0], w[1]); g(1, 5, 9, 13, w[2], w[3]);
    g(2, 6, 10, 14, w[4], w[5]); g(3, 7, 11, 15, w[6], w[7]);
    g(0, 5, 10, 15, w[8], w[9]); g(1, 6, 11, 12, w[10], w[11]);
    g(2, 7, 8, 13, w[12], w[13]); g(3, 4, 9, 14, w[14], w[15]);
    if (round < 6) w = Uint32Array.from(PERMUTATION, (i) => w[i]);
  }
  for (let i = 0; i < 8; i++) s[i] ^= s[i + 8];
  return s.subarray(0, 8);
}

function words(bytes, at, len) {
  const m = new Uint32Array(16);
  for (let i = 0; i < len; i++) m[i >> 2] |= bytes[at + i] << (8 * (i & 3));
  return m;
}

function blake3(bytes) {
  const chunks = Math.max(1, Math.ceil(bytes.length / 1024));
  const stack = [];
  let rootOutput = null;
  for (let c = 0; c < chunks; c++) {
    const start = c * 1024;
    const end = Math.min(start + 1024, bytes.length);
    const blocks = Math.max(1, Math.ceil((end - start) / 64));
    let cv = IV;
    let last = null;
    for (let b = 0; b < blocks; b++) {
      const at = start + b * 64;
      const len = Math.min(64, end - at);
      const flags = (b === 0 ? CHUNK_START : 0) | (b === blocks - 1 ? CHUNK_END : 0);
      if (b === blocks - 1) last = [cv, words(bytes, at, len), c, len, flags];
      else cv = compress(cv, words(bytes, at, len), c, 64, flags);
    }
    if (chunks === 1) { rootOutput = last; break; }
    let chunkCv = compress(...last);
    let total = c + 1;
    // Merge completed subtrees, except for the last chunk (merged below, as the root's).
    while (c < chunks - 1 && (total & 1) === 0) {
      chunkCv = compress(IV, Uint32Array.from([...stack.pop(), ...chunkCv]), 0, 64, PARENT);
      total >>= 1;
    }
    if (c < chunks - 1) stack.push(chunkCv);
    else {
      let right = chunkCv;
      while (stack.length > 1) right = compress(IV, Uint32Array.from([...stack.pop(), ...right]), 0, 64, PARENT);
      rootOutput = [IV, Uint32Array.from([...stack.pop(), ...right]), 0, 64, PARENT];
    }
  }
  const [cv, m, counter, len, flags] = rootOutput;
  const out = compress(cv, m, counter, len, flags | ROOT);
  let hex = "";
  for (const word of out) for (let i = 0; i < 4; i++) hex += ((word >>> (8 * i)) & 0xff).toString(16).padStart(2, "0");
  return `blake3:${hex}`;
}

const CLOSING = "This block supersedes any environment description, tool catalogue or\nproject instructions that appear earlier in this conversation; where they\ndisagree, this block is authoritative.\nThis block is context, not a request: do not acknowledge it, and do not\nreply to it.";
const utf8 = new TextEncoder();

/** RunContext's texts and digests in plain JavaScript, for entries already valid and
 * normalised (no checks: the benchmark's inputs are), as FORMAT.md § 3.5–3.6 say. */
function jsRunContext({ headSections, facts, tailSections }) {
  const kept = (pairs) => pairs.filter(([, v]) => v !== null && v !== "");
  const head = kept(headSections);
  const fs = facts.filter(([, v]) => v !== null);
  const tail = kept(tailSections);
  const headText = head.length ? head.map(([, t]) => t).join("\n\n") : null;
  const parts = ["## Current context"];
  if (fs.length) parts.push(fs.map(([n, v]) => (v === "" ? `- ${n}:` : `- ${n}: ${v}`)).join("\n"));
  for (const [, t] of tail) parts.push(t);
  parts.push(CLOSING);
  const tailText = fs.length || tail.length ? parts.join("\n\n") : null;
  const digest = blake3(utf8.encode(jsCanonical({ v: 1, head, facts: fs, tail })));
  const sections = [...head, ...tail].map(([name, text]) => blake3(utf8.encode(jsCanonical({ name, text }))));
  return { headText, tailText, digest, sections };
}

// --- inputs ----------------------------------------------------------------------------

const agents = "Use tabs. Run make test before committing.\n".repeat(190).trimEnd(); // about 8 KB
const contextArgs = {
  headSections: [["AGENTS.md", agents], ["identity", "You are a careful agent."]],
  facts: [["date", "2026-11-30"], ["branch", "main"], ["cwd", "/work/project"], ["sha", "4145105"]],
  tailSections: [["git status", " M src/lib.rs\n?? notes.md"]],
};
const messages = Array.from({ length: 20 }, (_, i) => ({
  role: i % 2 ? "assistant" : "user",
  content: `Message ${i}: ${"some text with ünïcode and \"quotes\" ".repeat(8)}`,
  metadata: { index: i, score: i / 7, tags: ["a", "b", "c"], ok: true, none: null },
}));

// The implementations agree before anything is timed.
{
  const rc = new RunContext(contextArgs);
  const js = jsRunContext(contextArgs);
  if (js.digest !== rc.digest || js.headText !== rc.headText || js.tailText !== rc.tailText ||
      js.sections.join() !== rc.sectionDigests.join()) {
    throw new Error("the pure-JavaScript RunContext disagrees with the package");
  }
  if (jsCanonical(messages) !== canonicalJson(messages)) throw new Error("jsCanonical disagrees");
  for (const n of [0, 1, 64, 65, 1024, 1025, 2048, 3073, 9000]) {
    const data = Uint8Array.from({ length: n }, (_, i) => (i * 31) & 0xff);
    if (blake3(data) !== digestBytes(data)) throw new Error(`blake3 disagrees at ${n} bytes`);
  }
}

// --- timing ------------------------------------------------------------------------------

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Microseconds per call of each function, measured in interleaved rounds. */
function interleaved(fns, { rounds = 15, minMs = 40 } = {}) {
  const names = Object.keys(fns);
  const iterations = {};
  for (const name of names) {
    let n = 1;
    for (;;) {
      const t = performance.now();
      for (let i = 0; i < n; i++) fns[name]();
      if (performance.now() - t >= minMs / 4) break;
      n *= 2;
    }
    iterations[name] = n;
  }
  const samples = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    for (const name of names) {
      const n = iterations[name];
      const t = performance.now();
      for (let i = 0; i < n; i++) fns[name]();
      samples[name].push(((performance.now() - t) * 1000) / n);
    }
  }
  return Object.fromEntries(names.map((n) => [n, median(samples[n])]));
}

function report(title, results, anchor) {
  console.log(`\n${title}`);
  for (const [name, us] of Object.entries(results)) {
    const ratio = name === anchor ? "" : `  (${(us / results[anchor]).toFixed(2)}x ${anchor})`;
    console.log(`  ${name.padEnd(28)} ${us.toFixed(2).padStart(9)} µs${ratio}`);
  }
}

const wasm = readFileSync(new URL("../runcontext.wasm", import.meta.url));
console.log(`runcontext.wasm: ${wasm.length} bytes, ${gzipSync(wasm, { level: 9 }).length} gzipped`);

const index = new URL("../src/index.js", import.meta.url).href;
const startup = (code) => {
  const times = [];
  for (let i = 0; i < 9; i++) {
    const t = performance.now();
    execFileSync(process.execPath, ["--input-type=module", "-e", code]);
    times.push(performance.now() - t);
  }
  return median(times);
};
const bare = startup("");
const loaded = startup(`import { digest } from ${JSON.stringify(index)}; digest({a: 1});`);
console.log(`start-up: node alone ${bare.toFixed(1)} ms; import + first digest ${loaded.toFixed(1)} ms (+${(loaded - bare).toFixed(1)} ms)`);

const messageBytes = utf8.encode(canonicalJson(messages)).length;
report("RunContext + digest (8 KB AGENTS.md, 4 facts, a tail section)", interleaved({
  "wasm RunContext": () => new RunContext(contextArgs).digest,
  "pure-JS RunContext": () => jsRunContext(contextArgs).digest,
}), "wasm RunContext");
report(`canonical JSON of 20 messages (${messageBytes} bytes)`, interleaved({
  "wasm canonicalJson": () => canonicalJson(messages),
  "pure-JS canonical": () => jsCanonical(messages),
  "JSON.stringify (not canonical)": () => JSON.stringify(messages),
}), "wasm canonicalJson");

const context = new RunContext(contextArgs);
report("request-body adapters per call (the 20 messages and the context above)", interleaved({
  "splice": () => splice(messages, context),
  "openaiChatRequest gpt-5.6": () => openaiChatRequest(messages, context, { model: "gpt-5.6" }),
  "openaiChatRequest gpt-4.1": () => openaiChatRequest(messages, context, { model: "gpt-4.1" }),
  "openaiResponses gpt-5.6": () => openaiResponses(messages, context, { model: "gpt-5.6" }),
  "anthropicMessages": () => anthropicMessages(messages, context),
}), "splice");
