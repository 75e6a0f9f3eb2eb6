#!/usr/bin/env node
// Writes docs/vectors/es-numbers.txt: how ECMAScript writes IEEE 754 doubles as JSON.
//
// RFC 8785 § 3.2.2.3 says a canonical JSON number is the ECMAScript Number-to-String
// conversion of the double (ECMA-262 § 7.1.12.1, with "Note 2"). This script asks a real
// ECMAScript engine (Node's V8) for that text, for a large, fixed set of doubles, so that an
// implementation in any language can be checked against it.
//
// Usage (from the repository root; Node 20, no npm packages):
//
//     node docs/vectors/gen_es_numbers.js
//
// Output format: one line per double, no header, no comments:
//
//     <16 lowercase hex digits of the IEEE 754 bit pattern> <JSON.stringify(value)>
//
// separated by a single space and ended by "\n". Example: "3ff0000000000000 1".
//
// Contents, in this order (each double appears once, at its first occurrence):
//   1. hand-picked edge cases (zeros, subnormal/normal/maximum limits, 2**53, 1e21, 1e-7 ...);
//   2. every finite sample of RFC 8785 Appendix B;
//   3. powers of ten 1e-323 .. 1e308 and their neighbours one and two ulps away;
//   4. powers of two 2**-1074 .. 2**1023;
//   5. the 64 doubles on each side of the notation boundaries (1e21, 1e-6, 1e-7) and of 2**53;
//   6. pseudo-random doubles from a seeded splitmix64 generator: integers below 2**53,
//      integers from 2**53 to 2**80, decimals k / 10**n, few-digit decimals across the whole
//      exponent range, random bit patterns within the fixed-notation band, random
//      subnormals, and finally uniformly random 64-bit patterns.
//
// NaN and ±Infinity (every pattern whose exponent bits are all ones) are excluded: JSON has
// no such numbers, JSON.stringify writes them as "null", and RFC 8785 requires an error.
// Negative zero is included: JSON.stringify(-0) is "0" (bit pattern 8000000000000000).
//
// The generator is deterministic: the same Node version gives a byte-identical file on every
// run, and the output depends only on V8's Number-to-String, which ECMA-262 fully specifies
// (shortest round-trip digits, ties resolved as Note 2 says).

'use strict';

const fs = require('fs');
const path = require('path');

const OUT = path.join(__dirname, 'es-numbers.txt');
const MIN_LINES = 100000;

const MASK64 = (1n << 64n) - 1n;
const EXP_MASK = 0x7ff0000000000000n;

const view = new DataView(new ArrayBuffer(8));

function bitsOf(v) {
  view.setFloat64(0, v);
  return view.getBigUint64(0);
}

function fromBits(bits) {
  view.setBigUint64(0, bits & MASK64);
  return view.getFloat64(0);
}

// splitmix64 (Steele, Lea, Flood 2014), in BigInt so that every step is exact.
let state = 0x52554e434f4e5458n; // "RUNCONTX"

function next64() {
  state = (state + 0x9e3779b97f4a7c15n) & MASK64;
  let z = state;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return z ^ (z >> 31n);
}

// A uniform integer in [0, n) for a BigInt n >= 1 (rejection sampling: no modulo bias).
function below(n) {
  if (n <= 1n) return 0n;
  const bits = BigInt((n - 1n).toString(2).length);
  const mask = (1n << bits) - 1n;
  for (;;) {
    const r = next64() & mask;
    if (r < n) return r;
  }
}

// A uniform integer in [lo, hi] for small Numbers.
function between(lo, hi) {
  return lo + Number(below(BigInt(hi - lo + 1)));
}

function coin() {
  return (next64() & 1n) === 1n;
}

const lines = [];
const seen = new Set();

function addBits(bits) {
  bits &= MASK64;
  if ((bits & EXP_MASK) === EXP_MASK) return; // NaN or ±Infinity: no JSON form
  if (seen.has(bits)) return;
  seen.add(bits);
  const v = fromBits(bits);
  lines.push(bits.toString(16).padStart(16, '0') + ' ' + JSON.stringify(v));
}

function add(v) {
  addBits(bitsOf(v));
}

// The doubles `steps` ulps above (steps > 0) or below (steps < 0) v, for finite v > 0.
function ulpsAway(v, steps) {
  return fromBits(bitsOf(v) + BigInt(steps));
}

function addNeighbours(v, radius) {
  for (let i = -radius; i <= radius; i++) {
    const bits = bitsOf(v) + BigInt(i);
    if (bits >= 0n && bits < EXP_MASK) {
      addBits(bits);
      addBits(bits | (1n << 63n)); // and the negative twin
    }
  }
}

// 1. Hand-picked edge cases.
const MIN_NORMAL = 2.2250738585072014e-308;
[
  0, -0,
  5e-324, -5e-324, 1e-323, 1.5e-323,
  MIN_NORMAL, -MIN_NORMAL,
  ulpsAway(MIN_NORMAL, -1), ulpsAway(MIN_NORMAL, 1), ulpsAway(MIN_NORMAL, -2), ulpsAway(MIN_NORMAL, 2),
  fromBits(0x000fffffffffffffn), // largest subnormal
  1.7976931348623157e308, -1.7976931348623157e308,
  ulpsAway(1.7976931348623157e308, -1), ulpsAway(1.7976931348623157e308, -2),
  1e21, -1e21, 1e-7, -1e-7, 1e-6, -1e-6, 1e20, 1e22, 1e23, 1e-5,
  999999999999999900000, 999999999999999700000, 123456789012345680000,
  2 ** 53, 2 ** 53 - 1, 2 ** 53 + 2, 2 ** 53 - 2, -(2 ** 53), -(2 ** 53 - 1), 2 ** 53 + 4,
  2 ** 54, 2 ** 55, 2 ** 63, 2 ** 64, 2 ** 68, 2 ** 69, 2 ** 70,
  0.1 + 0.2, 1 / 3, 2 / 3, -1 / 3, 0.1, 0.2, 0.3, 0.7, 1.1, 4.35, 4.5, 0.002, 1e-27, 1e30,
  333333333.33333329, 1, -1, 2, 10, 100, 0.5, -0.5, 1.5, 1e-323 * 3,
  Math.PI, Math.E, Math.SQRT2, Math.LN2, Number.EPSILON, 1 + Number.EPSILON, 1 - Number.EPSILON / 2,
  Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER,
  5e-7, 1.5e-7, 9.5e-7, 0.00001, 0.0001, 0.001, 0.01,
  1e15, 1e16, 1e17, 1e18, 1e19, 12345678901234567, 123456789012345678,
  4294967295, 4294967296, 2147483647, -2147483648, 65535, 255,
  1.7976931348623157e307, 8.98846567431158e307, 2.2250738585072014e-307,
  1e100, 1e-100, 1e200, 1e-200, 1e300, 1e-300,
].forEach(add);

// 2. RFC 8785 Appendix B samples (finite ones; NaN 7fffffffffffffff and Infinity
//    7ff0000000000000 are the two rows that have no JSON form).
[
  0x0000000000000000n, 0x8000000000000000n, 0x0000000000000001n, 0x8000000000000001n,
  0x7fefffffffffffffn, 0xffefffffffffffffn, 0x4340000000000000n, 0xc340000000000000n,
  0x4430000000000000n, 0x44b52d02c7e14af5n, 0x44b52d02c7e14af6n, 0x44b52d02c7e14af7n,
  0x444b1ae4d6e2ef4en, 0x444b1ae4d6e2ef4fn, 0x444b1ae4d6e2ef50n, 0x3eb0c6f7a0b5ed8cn,
  0x3eb0c6f7a0b5ed8dn, 0x41b3de4355555553n, 0x41b3de4355555554n, 0x41b3de4355555555n,
  0x41b3de4355555556n, 0x41b3de4355555557n, 0xbecbf647612f3696n, 0x43143ff3c1cb0959n,
].forEach(addBits);

// 3. Powers of ten, from the smallest that is not zero to the largest that is finite, with
//    their neighbours (the decimal powers themselves are usually not exact doubles).
for (let k = -323; k <= 308; k++) {
  const p = Number('1e' + k);
  addNeighbours(p, 2);
  add(Number('5e' + k));
  add(Number('9.999999999999999e' + k));
}

// 4. Powers of two, every one of them.
for (let k = -1074; k <= 1023; k++) {
  add(2 ** k);
}

// 5. Where the notation changes: at 1e21 (fixed below, exponent from it on), at 1e-6
//    (fixed from it on) and 1e-7; and where integers stop being exact, 2**53.
for (const v of [1e21, 1e-6, 1e-7, 2 ** 53]) {
  addNeighbours(v, 64);
}

// 6a. Random integers below 2**53, with a uniformly chosen bit length, either sign.
for (let i = 0; i < 15000; i++) {
  const len = between(1, 53);
  const n = (1n << BigInt(len - 1)) | below(1n << BigInt(len - 1));
  add(coin() ? -Number(n) : Number(n));
}

// 6b. Random integers from 2**53 to 2**80 (rounded to doubles): the digits past the 17th
//     become zeros, and 1e21 switches to exponent notation.
for (let i = 0; i < 8000; i++) {
  const len = between(54, 80);
  const n = (1n << BigInt(len - 1)) | below(1n << BigInt(len - 1));
  add(coin() ? -Number(n) : Number(n));
}

// 6c. "Human" decimals k / 10**n: k with 1 to 17 digits, n from 0 to 25. Parsing the decimal
//     string rounds correctly (k / 10**n in doubles would round twice for large n).
for (let i = 0; i < 20000; i++) {
  const digits = between(1, 17);
  const k = below(10n ** BigInt(digits));
  const n = between(0, 25);
  const v = Number(k.toString() + 'e-' + n);
  add(coin() ? -v : v);
}

// 6d. Few significant digits (1 to 17) at any decimal exponent, including values that
//     underflow into the subnormals.
for (let i = 0; i < 15000; i++) {
  const digits = between(1, 17);
  const m = below(10n ** BigInt(digits));
  const e = between(-340, 310);
  const v = Number(m.toString() + 'e' + e);
  if (Number.isFinite(v)) add(coin() ? -v : v);
}

// 6e. Random bit patterns with a binary exponent in the fixed-notation band, about 1e-8 to
//     1e22: full 17-digit values written without an exponent.
for (let i = 0; i < 15000; i++) {
  const exponent = BigInt(between(1023 - 27, 1023 + 73));
  const mantissa = next64() & 0x000fffffffffffffn;
  const sign = coin() ? 1n << 63n : 0n;
  addBits(sign | (exponent << 52n) | mantissa);
}

// 6f. Random subnormals.
for (let i = 0; i < 3000; i++) {
  const mantissa = next64() & 0x000fffffffffffffn;
  addBits((coin() ? 1n << 63n : 0n) | mantissa);
}

// 6g. Uniformly random 64-bit patterns (NaN and Infinity patterns skipped by addBits).
for (let i = 0; i < 40000; i++) {
  addBits(next64());
}

if (lines.length < MIN_LINES) {
  throw new Error(`only ${lines.length} lines; at least ${MIN_LINES} are wanted`);
}

fs.writeFileSync(OUT, lines.join('\n') + '\n');
console.log(`wrote ${lines.length} lines to ${path.relative(process.cwd(), OUT)}`);
