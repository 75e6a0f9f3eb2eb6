// The request-body adapters: every case of docs/vectors/adapters.json (written by the Python
// adapters), byte for byte, and what is JavaScript's own (options objects, identity).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import {
  ANTHROPIC_MAX_BREAKPOINTS, OPENAI_CACHE_MODES, RunContext, anthropicMessages, openaiChat,
  openaiChatRequest, openaiPromptCaching, openaiResponses,
} from "../src/index.js";
import { expected, runCase } from "./adapter-cases.js";

const doc = JSON.parse(readFileSync(new URL("../../docs/vectors/adapters.json", import.meta.url), "utf8"));
const rc = new RunContext({ headSections: [["AGENTS.md", "Use tabs."]], facts: [["date", "2026-12-06"]] });
const user = { role: "user", content: "hi" };
const assistant = { role: "assistant", content: "hello" };

test("adapters.json: the same body as Python's, member order included, or the same refusal", () => {
  assert.equal(doc.format, "adapters-v1");
  assert.ok(doc.cases.length >= 90);
  for (const c of doc.cases) {
    const got = runCase(c);
    // JSON text compares member order too: the bytes an SDK would send.
    assert.equal(JSON.stringify(got), JSON.stringify(expected(c)), c.name);
  }
});

test("every adapter leaves the caller's messages as they were and returns them by identity", () => {
  const messages = [user, assistant, { role: "user", content: [{ type: "text", text: "more" }] }];
  const before = structuredClone(messages);
  const chat = openaiChat(messages, rc, { model: "gpt-5.6" });
  assert.equal(chat[1], messages[0]);
  assert.equal(chat[2], messages[1]);
  assert.notEqual(chat[3], messages[2]); // the marked copy
  assert.equal(chat[3].content[0].prompt_cache_breakpoint.mode, "explicit");
  const responses = openaiResponses(messages, rc, { model: "gpt-5.6" });
  assert.equal(responses.input[1], messages[1]);
  assert.equal(responses.input[2], messages[2]); // a "text" part is not a Responses input part
  const anthropic = anthropicMessages(messages, rc);
  assert.equal(anthropic.messages[0], messages[0]);
  assert.equal(anthropic.messages[1], messages[1]);
  assert.deepEqual(messages, before);
  // Each marker is a new object: editing one changes no other.
  anthropic.system[0].cache_control.ttl = "1h";
  assert.deepEqual(anthropic.messages[2].content[0].cache_control, { type: "ephemeral" });
});

test("options: a misspelt or unknown option is refused, undefined means the default", () => {
  assert.throws(() => openaiChat([user], rc, { tailrole: "user" }),
    { name: "TypeError", message: 'openaiChat: unknown option "tailrole"; expected "role", "tailRole", "model", "cache", "cacheHead", "ttl"' });
  assert.throws(() => anthropicMessages([user], rc, { tail_role: "user" }), /anthropicMessages: unknown option "tail_role"/);
  assert.throws(() => openaiResponses([user], rc, "gpt-5.6"), /openaiResponses: expected an options object, got string/);
  assert.deepEqual(openaiChat([user], rc, { model: undefined, cache: undefined }), openaiChat([user], rc));
  assert.throws(() => openaiChatRequest([user], rc), /model: openaiChatRequest needs the model name/);
  assert.throws(() => anthropicMessages([user], rc, { cache: "false" }), { name: "TypeError", message: "cache: expected a boolean, got string" });
  assert.throws(() => openaiChat([user], { head: "x" }), { name: "TypeError", message: "context: expected a RunContext or null, got Object" });
});

test("a content block that contains itself is refused, not walked forever", () => {
  const block = { type: "text", text: "x" };
  block.self = block;
  assert.throws(() => anthropicMessages([{ role: "user", content: [block] }], rc),
    { name: "RangeError", message: "a content block nests deeper than 512 levels (or contains itself)" });
  let deep = [];
  const top = { type: "text", text: "x", nested: deep };
  for (let i = 0; i < 511; i++) { const next = []; deep.push(next); deep = next; }
  assert.throws(() => anthropicMessages([{ role: "user", content: [top] }], null), /nests deeper than 512/);
});

test("the exported constants", () => {
  assert.equal(ANTHROPIC_MAX_BREAKPOINTS, 4);
  assert.deepEqual(OPENAI_CACHE_MODES, ["explicit", "implicit", "off"]);
  assert.ok(Object.isFrozen(OPENAI_CACHE_MODES));
  assert.equal(openaiPromptCaching("azure/gpt-5.6-mini"), true);
});
