// The loader of runcontext.wasm (rust/wasm): the core compiled to WebAssembly, behind a
// C-style ABI of one input and one output buffer (docs/JAVASCRIPT.md, *The ABI*). No tool
// generated this file and nothing is imported: it runs on Node 20 and in browsers alike.

const isNode = typeof process !== "undefined" && process.versions != null && process.versions.node != null;

/** `node:fs` on Node (sessions read and write files with it); `null` in a browser. */
export const fs = isNode ? await import("node:fs") : null;

async function instantiate() {
  const url = new URL("../runcontext.wasm", import.meta.url);
  if (fs !== null) {
    return WebAssembly.instantiate(fs.readFileSync(url), {});
  }
  const response = await fetch(url);
  if (typeof WebAssembly.instantiateStreaming === "function" &&
      response.headers.get("content-type") === "application/wasm") {
    return WebAssembly.instantiateStreaming(response, {});
  }
  return WebAssembly.instantiate(await response.arrayBuffer(), {});
}

const { instance } = await instantiate();
/** The module's exports (`rc_*` functions and its memory). */
export const core = instance.exports;

const encoder = new TextEncoder();
export const decoder = new TextDecoder("utf-8", { fatal: true });

/** Copies `bytes` (a Uint8Array) into the module's input buffer. */
export function setInput(bytes) {
  const ptr = core.rc_input(bytes.length);
  new Uint8Array(core.memory.buffer, ptr, bytes.length).set(bytes);
}

/** Puts a string's UTF-8 into the input buffer (the string is well-formed Unicode). */
export function setInputText(text) {
  const bytes = encoder.encode(text);
  setInput(bytes);
}

/** Fields for a multi-argument call: each a u32 length (little-endian) and its bytes. */
export function setFields(...parts) {
  const encoded = parts.map((p) => (typeof p === "string" ? encoder.encode(p) : p));
  const total = encoded.reduce((n, p) => n + 4 + p.length, 0);
  const ptr = core.rc_input(total);
  const memory = new Uint8Array(core.memory.buffer, ptr, total);
  const view = new DataView(core.memory.buffer, ptr, total);
  let at = 0;
  for (const p of encoded) {
    view.setUint32(at, p.length, true);
    memory.set(p, at + 4);
    at += 4 + p.length;
  }
}

/** The output buffer, as a view into the module's memory (valid until the next call). */
export function outputView() {
  return new Uint8Array(core.memory.buffer, core.rc_out_ptr(), core.rc_out_len());
}

/** The output buffer's bytes, copied. */
export function outputBytes() {
  return outputView().slice();
}

/** The output buffer as text. */
export function outputText() {
  return decoder.decode(outputView());
}

/** The output buffer as a JSON value (errors and structured results). */
export function outputJson() {
  return JSON.parse(outputText());
}
