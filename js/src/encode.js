// The compact encoding a JavaScript value crosses into wasm in; rust/wasm/src/encoding.rs
// reads it and documents the tags. Classifying a value is the only work done here: what is
// refused, and in which order, is the core's (FORMAT.md § 1.6).

import { core } from "./wasm.js";

/** Containers deeper than this are refused by the core before it reads them. */
export const MAX_DEPTH = 512;

const NULL = 0, FALSE = 1, TRUE = 2, NUMBER = 3, STRING = 4, LONE = 5, ARRAY = 6, OBJECT = 7,
  BIGINT = 8, UNDEFINED = 9, OTHER = 10, MAP = 11, SET = 12;

const utf8 = new TextEncoder();
const wellFormed = typeof String.prototype.isWellFormed === "function"
  ? (s) => s.isWellFormed()
  : (s) => !/\p{Cs}/u.test(s); // in a /u pattern a pair is one code point, never Cs

let buf = new Uint8Array(4096);
let view = new DataView(buf.buffer);
let at = 0;

function reserve(n) {
  if (at + n <= buf.length) return;
  let size = buf.length * 2;
  while (size < at + n) size *= 2;
  const grown = new Uint8Array(size);
  grown.set(buf.subarray(0, at));
  buf = grown;
  view = new DataView(buf.buffer);
}

function writeText(s) {
  // UTF-8 takes at most three bytes per UTF-16 code unit.
  reserve(4 + s.length * 3);
  const start = at + 4;
  let n = 0;
  const len = s.length;
  if (len < 32) {
    for (; n < len; n++) {
      const c = s.charCodeAt(n);
      if (c >= 0x80) break;
      buf[start + n] = c;
    }
  }
  let written = n;
  if (n < len) {
    written = n + utf8.encodeInto(n === 0 ? s : s.slice(n), buf.subarray(start + n)).written;
  }
  view.setUint32(at, written, true);
  at = start + written;
}

function writeTag(tag) {
  reserve(1);
  buf[at++] = tag;
}

function writeNamed(tag, name) {
  writeTag(tag);
  writeText(name);
}

function typeName(value) {
  const ctor = value.constructor;
  return typeof ctor === "function" && ctor.name ? ctor.name : "object";
}

function writeValue(value, depth) {
  switch (typeof value) {
    case "string":
      if (wellFormed(value)) {
        writeTag(STRING);
        writeText(value);
      } else {
        writeTag(LONE);
      }
      return;
    case "number":
      reserve(9);
      buf[at] = NUMBER;
      view.setFloat64(at + 1, value, true);
      at += 9;
      return;
    case "boolean":
      writeTag(value ? TRUE : FALSE);
      return;
    case "undefined":
      writeTag(UNDEFINED);
      return;
    case "bigint":
      writeNamed(BIGINT, value.toString());
      return;
    case "object":
      break;
    default: // symbol, function
      writeNamed(OTHER, typeof value);
      return;
  }
  if (value === null) {
    writeTag(NULL);
    return;
  }
  if (depth >= MAX_DEPTH) {
    // The core refuses a container this deep before it looks inside (too-deep): an empty
    // array stands for it, so a cycle is refused rather than followed.
    reserve(5);
    buf[at] = ARRAY;
    view.setUint32(at + 1, 0, true);
    at += 5;
    return;
  }
  if (Array.isArray(value)) {
    const len = value.length;
    reserve(5);
    buf[at] = ARRAY;
    view.setUint32(at + 1, len, true);
    at += 5;
    for (let i = 0; i < len; i++) writeValue(value[i], depth + 1);
    return;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) {
    const keys = Object.keys(value);
    reserve(5);
    buf[at] = OBJECT;
    view.setUint32(at + 1, keys.length, true);
    at += 5;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (wellFormed(key)) {
        writeTag(0);
        writeText(key);
      } else {
        writeTag(1);
      }
      writeValue(value[key], depth + 1);
    }
    return;
  }
  if (value instanceof Map) writeNamed(MAP, typeName(value));
  else if (value instanceof Set) writeNamed(SET, typeName(value));
  else writeNamed(OTHER, typeName(value));
}

/** Encodes `value` straight into the module's input buffer. */
export function setInputValue(value) {
  at = 0;
  writeValue(value, 0);
  const ptr = core.rc_input(at);
  new Uint8Array(core.memory.buffer, ptr, at).set(buf.subarray(0, at));
  if (buf.length > 1 << 24) {
    // Do not keep a buffer grown for one huge value.
    buf = new Uint8Array(4096);
    view = new DataView(buf.buffer);
  }
}

/** The encoding of `value`, as bytes of its own (for a call with several fields). */
export function encodeValue(value) {
  at = 0;
  writeValue(value, 0);
  return buf.slice(0, at);
}
