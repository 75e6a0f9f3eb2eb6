// The framework hook points of docs/JAVASCRIPT.md, used with nothing but this package: the
// Vercel AI SDK's `wrapLanguageModel` middleware (`transformParams`) and the OpenAI Agents
// SDK's `callModelInputFilter`. Neither package can be installed here, so each is played by
// the few lines of its documented contract it takes to call the hook; what is under test is
// the hook's body, which is what a program copies.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { RunContext, Session, canonicalJson, openaiResponses, splice } from "../src/index.js";

const head = [["AGENTS.md", "Use tabs. Run the tests before committing."]];
const contextAt = (turn) => new RunContext({ headSections: head, facts: [["turn", String(turn)]] });

// --- Vercel AI SDK: wrapLanguageModel({ model, middleware }) --------------------------------

/** The contract: `doGenerate(params)` of the wrapped model runs `transformParams({ type,
 * params, model })` and calls the inner model with the params it returns. */
function wrapLanguageModel({ model, middleware }) {
  return {
    async doGenerate(params) {
      const transformed = await middleware.transformParams({ type: "generate", params, model });
      return model.doGenerate(transformed);
    },
  };
}

test("AI SDK: transformParams splices head and tail into params.prompt, and records the run", async () => {
  const sent = [];
  const model = { async doGenerate(params) { sent.push(params); return { text: `reply ${sent.length}` }; } };
  const seed = { role: "system", content: "You are a careful agent." };
  const session = Session.fromBytes(createdBytes([seed]));
  let turn = 0;
  const middleware = {
    // The hook: the prompt the caller built, with this turn's context around it.
    async transformParams({ params }) {
      const context = contextAt(turn);
      session.recordRun(params.prompt, context);
      return { ...params, prompt: splice(params.prompt, context) };
    },
  };
  const wrapped = wrapLanguageModel({ model, middleware });
  const prompt = [seed, { role: "user", content: [{ type: "text", text: "Fix the test." }] }];
  await wrapped.doGenerate({ prompt, temperature: 0 });
  turn = 1;
  const next = [...prompt, { role: "assistant", content: [{ type: "text", text: "reply 1" }] },
    { role: "user", content: [{ type: "text", text: "And the docs." }] }];
  await wrapped.doGenerate({ prompt: next, temperature: 0 });

  const [first, second] = sent;
  assert.equal(first.temperature, 0);
  assert.deepEqual(first.prompt[0], { role: "system", content: contextAt(0).headText });
  assert.equal(first.prompt[1], seed); // the caller's messages, by identity
  assert.deepEqual(first.prompt.at(-1), { role: "system", content: contextAt(0).tailText });
  assert.notEqual(contextAt(0).tailText, contextAt(1).tailText);
  // The cache prefix: everything before turn 1's tail starts turn 2's request unchanged.
  const before = first.prompt.slice(0, -1).map((m) => canonicalJson(m));
  assert.deepEqual(second.prompt.slice(0, before.length).map((m) => canonicalJson(m)), before);
  assert.equal(prompt.length, 2); // the caller's prompt was not touched
  assert.deepEqual(session.runs().map((r) => [r.number, r.messages, r.digest]),
    [[1, 2, contextAt(0).digest], [2, 4, contextAt(1).digest]]);
  session.close();
});

/** A new transcript's bytes (Session.create writes a file; the test keeps them in memory). */
function createdBytes(messages) {
  const dir = mkdtempSync(join(tmpdir(), "runcontext-hooks-"));
  try {
    const path = join(dir, "t.jsonl");
    Session.create(path, messages).close();
    return readFileSync(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// --- OpenAI Agents SDK: RunConfig.callModelInputFilter --------------------------------------

/** The contract: before each model call the runner calls `callModelInputFilter({ modelData:
 * { input, instructions }, agent, context })` and sends the `{ input, instructions }` it
 * returns (here, to the model as a Responses body). */
async function runTurn({ agent, input, callModelInputFilter, model }) {
  const modelData = { input: structuredClone(input), instructions: agent.instructions };
  const filtered = await callModelInputFilter({ modelData, agent, context: {} });
  return model.create({ model: agent.model, instructions: filtered.instructions, input: filtered.input });
}

test("Agents SDK: callModelInputFilter puts the head before the agent's instructions, the tail last", async () => {
  const sent = [];
  const model = { async create(body) { sent.push(body); return { output_text: "ok" }; } };
  const agent = { name: "coder", instructions: "Answer briefly.", model: "gpt-5.6" };
  let turn = 0;
  // The hook: openaiResponses places head and tail; the agent's instructions follow the head.
  const callModelInputFilter = ({ modelData }) => {
    const body = openaiResponses(modelData.input, contextAt(turn), { model: agent.model });
    const instructions = [body.instructions, modelData.instructions].filter(Boolean).join("\n\n");
    return { input: body.input, instructions };
  };
  const input = [{ role: "user", content: "Fix the test." }];
  await runTurn({ agent, input, callModelInputFilter, model });
  turn = 1;
  const next = [...input, { role: "assistant", content: "ok" }, { role: "user", content: "And the docs." }];
  await runTurn({ agent, input: next, callModelInputFilter, model });

  const [first, second] = sent;
  assert.equal(first.instructions, `${contextAt(0).headText}\n\nAnswer briefly.`);
  assert.equal(second.instructions, first.instructions); // the stable head: cached
  assert.deepEqual(first.input.at(-1), { role: "developer", content: contextAt(0).tailText });
  assert.deepEqual(second.input.at(-1), { role: "developer", content: contextAt(1).tailText });
  // GPT-5.6: the breakpoint on the last user input, never on the tail.
  assert.deepEqual(second.input[2].content,
    [{ type: "input_text", text: "And the docs.", prompt_cache_breakpoint: { mode: "explicit" } }]);
  assert.equal(second.input.at(-1).prompt_cache_breakpoint, undefined);
  assert.deepEqual(input, [{ role: "user", content: "Fix the test." }]);
});
