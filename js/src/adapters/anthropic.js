// Anthropic Messages: the head in `system`, the tail last, `cache_control` placed so the
// cached prefix covers the head and the conversation (docs/PLACEMENT.md). The same bodies as
// python/runcontext/adapters/anthropic.py, pinned by docs/vectors/adapters.json.

import { MAX_DEPTH } from "../encode.js";
import { checkMessages } from "../index.js";
import {
  badRole, checkChoice, contextTexts, isBlank, isMapping, own, present, quoted, readOptions, typeName,
} from "./common.js";

// Roles the Messages API accepts inside `messages` ("system" only on the models that allow it).
const ROLES = new Set(["user", "assistant", "system"]);
// `user` works on every model; `system` only on the models that accept a system turn there.
const TAIL_ROLES = ["user", "system"];
/**
 * The Messages API refuses a request with more than four `cache_control` breakpoints in all:
 * tools, system, messages, blocks nested in blocks, and the top-level `cache_control`.
 */
export const ANTHROPIC_MAX_BREAKPOINTS = 4;
// Blocks the API refuses a marker on (so does a text block with no visible text).
const UNMARKABLE_BLOCKS = new Set(["thinking", "redacted_thinking"]);
// `cache_control.ttl` values, shortest first: longer TTLs must come first in the API's order.
const TTLS = ["5m", "1h"];
// The free-form tool arguments of `tool_use` blocks: a "cache_control" in there is data.
const FREE_FORM_KEY = "input";

const OPTIONS = { cache: true, tailRole: "user", system: null, reservedBreakpoints: 0, ttl: null };

/**
 * `{system: [...], messages: [...]}` for the Messages API (Python's `anthropic_messages`):
 * the head is the first system text block, the tail a `tailRole` message after the
 * conversation (before an assistant prefill), and with `cache` a `cache_control` marker on
 * the last markable conversation block and on the head, within the budget of four.
 */
export function anthropicMessages(messages, context, options) {
  const { cache, tailRole, system, reservedBreakpoints, ttl } = readOptions("anthropicMessages", options, OPTIONS);
  checkChoice("tailRole", tailRole, TAIL_ROLES);
  if (ttl !== null) checkChoice("ttl", ttl, TTLS);
  if (typeof reservedBreakpoints !== "number" || !Number.isInteger(reservedBreakpoints)) {
    throw new TypeError(`reservedBreakpoints: expected an integer, got ${typeName(reservedBreakpoints)}`);
  }
  if (reservedBreakpoints < 0) {
    throw new RangeError(`reservedBreakpoints: expected a count >= 0, got ${reservedBreakpoints}`);
  }
  if (typeof cache !== "boolean") throw new TypeError(`cache: expected a boolean, got ${typeName(cache)}`);
  checkMessages(messages);
  const inMessages = checkAnthropicMessages(messages);
  const systemBlocks = systemBlocksOf(system);
  const inSystem = countBreakpoints(systemBlocks, "system"); // also checks each block's type
  const used = inMessages + inSystem + reservedBreakpoints;
  if (used > ANTHROPIC_MAX_BREAKPOINTS) {
    throw new RangeError(
      `the request already has ${used} cache_control breakpoints (${inSystem} in system, ` +
      `${inMessages} in messages, ${reservedBreakpoints} reserved); the Messages API accepts ` +
      `at most ${ANTHROPIC_MAX_BREAKPOINTS}: remove some`);
  }
  const [head, tail] = contextTexts(context);

  // A final assistant message is a prefill the model continues: the tail goes before it.
  let at = messages.length;
  if (at > 0 && messages[at - 1].role === "assistant") at -= 1;
  if (tail !== null && tailRole === "system" && (at === 0 || messages[at - 1].role !== "user")) {
    const where = at === 0 ? "at the start" : `after messages[${at - 1}], a non-user turn`;
    throw new RangeError(
      `tailRole='system': a system turn must follow a user turn, but the tail would go ${where}; use tailRole: "user"`);
  }
  if (messages.length === 0 && tail === null) {
    throw new RangeError(
      "messages: the conversation is empty and the context has no tail; the Messages API needs at least one message");
  }

  const request = [...messages];
  let budget = ANTHROPIC_MAX_BREAKPOINTS - used;
  const found = cache && budget > 0 ? conversationBreakpoint(messages, at, ttl) : null;
  if (found !== null) {
    request[found[0]] = found[1];
    budget -= 1;
  }
  const headMarked = cache && budget > 0 && head !== null;
  if ((headMarked || found !== null) && inMessages + inSystem > 0) {
    checkTtlOrder(systemBlocks, messages, headMarked, found, ttl);
  }
  if (tail !== null) request.splice(at, 0, { role: tailRole, content: [{ type: "text", text: tail }] });

  const body = {};
  if (head !== null) {
    const headBlock = { type: "text", text: head };
    if (headMarked) headBlock.cache_control = marker(ttl);
    body.system = [headBlock, ...systemBlocks];
  } else if (system !== null) {
    body.system = system;
  }
  body.messages = request;
  return body;
}

/** Checks roles and content shapes; returns the caller's `cache_control` breakpoints. */
function checkAnthropicMessages(messages) {
  let count = 0;
  messages.forEach((message, index) => {
    const role = own(message, "role");
    if (typeof role !== "string" || !ROLES.has(role)) badRole(role, ROLES, `messages[${index}]`, "Anthropic Messages");
    if (!Object.hasOwn(message, "content")) throw new TypeError(`messages[${index}]: the message has no 'content' key`);
    const content = message.content;
    if (typeof content !== "string") count += countBreakpoints(content, `messages[${index}].content`);
  });
  if (messages.length > 0 && messages[0].role !== "user") {
    const first = messages[0].role;
    const hint = first === "system" ? "; put the system prompt in the system option or in head sections" : "";
    throw new RangeError(
      `messages[0].role: a Messages API conversation starts with a 'user' turn, got ${quoted(first)}${hint}`);
  }
  return count;
}

function countBreakpoints(blocks, where) {
  if (!Array.isArray(blocks)) {
    throw new TypeError(`${where}: expected a string or an array of content blocks, got ${typeName(blocks)}`);
  }
  let count = 0;
  blocks.forEach((block, index) => {
    if (!isMapping(block)) throw new TypeError(`${where}[${index}]: expected a content block object, got ${typeName(block)}`);
    // The placement reads a block's type; a type that is present is the API's string.
    if (Object.hasOwn(block, "type") && typeof block.type !== "string") {
      throw new TypeError(`${where}[${index}].type: expected a string, got ${typeName(block.type)}`);
    }
    count += breakpointsIn(block);
  });
  return count;
}

/**
 * The markers on `block` and on every block nested in it, at any depth (the API counts them
 * all), walking every nested object and array but a tool call's free-form `input`.
 */
function breakpointsIn(block) {
  let count = 0;
  // Depth-bounded like canonical JSON: a block that contains itself is refused.
  const pending = [[block, 1]];
  while (pending.length > 0) {
    const [value, depth] = pending.pop();
    if (depth > MAX_DEPTH) {
      throw new RangeError(`a content block nests deeper than ${MAX_DEPTH} levels (or contains itself)`);
    }
    let children;
    if (isMapping(value)) {
      if (present(value, "cache_control")) count += 1;
      children = Object.keys(value).filter((key) => key !== FREE_FORM_KEY).map((key) => value[key]);
    } else {
      children = value;
    }
    for (const item of children) {
      if (isMapping(item) || Array.isArray(item)) pending.push([item, depth + 1]);
    }
  }
  return count;
}

function systemBlocksOf(system) {
  if (system === null) return [];
  if (typeof system === "string") return isBlank(system) ? [] : [{ type: "text", text: system }];
  if (!Array.isArray(system)) {
    throw new TypeError(`system: expected a string or an array of text blocks, got ${typeName(system)}`);
  }
  return [...system];
}

/**
 * The index of the message the conversation breakpoint goes on and its marked copy: the last
 * block before `at` that can carry one; `null` when a caller's marker comes first or no
 * block qualifies. A system turn inside `messages` is passed over (it refuses a marker).
 */
function conversationBreakpoint(messages, at, ttl) {
  for (let index = at - 1; index >= 0; index--) {
    const message = messages[index];
    if (message.role === "system") continue;
    const content = message.content;
    if (typeof content === "string") {
      if (isBlank(content)) continue;
      return [index, { ...message, content: [{ type: "text", text: content, cache_control: marker(ttl) }] }];
    }
    for (let position = content.length - 1; position >= 0; position--) {
      const block = content[position];
      if (present(block, "cache_control")) return null;
      if (markable(block)) {
        const marked = [...content];
        marked[position] = { ...block, cache_control: marker(ttl) };
        return [index, { ...message, content: marked }];
      }
    }
  }
  return null;
}

function marker(ttl) {
  // A new object each time: the caller may edit one.
  return ttl === null ? { type: "ephemeral" } : { type: "ephemeral", ttl };
}

/**
 * Refuses markers whose TTLs would not be longest-first in the API's order. `marked` is the
 * conversation marker's message index and its marked copy: the caller's markers in that
 * message are read in their place beside the adapter's.
 */
function checkTtlOrder(systemBlocks, messages, headMarked, marked, ttl) {
  const ours = ttl ?? "5m";
  const order = []; // [ttl, where], in the API's order
  if (headMarked) order.push([ours, "the head's marker (system[0])"]);
  systemBlocks.forEach((block, index) => {
    for (const [t] of ttlsIn(block)) order.push([t, `your marker in system[${index}]`]);
  });
  messages.forEach((message, index) => {
    const content = message.content;
    if (marked !== null && index === marked[0]) {
      // The marked copy holds the caller's markers (the same objects) and the adapter's.
      const callers = new Set();
      if (typeof content !== "string") for (const block of content) for (const [, m] of ttlsIn(block)) callers.add(m);
      for (const block of marked[1].content) {
        for (const [t, m] of ttlsIn(block)) {
          order.push([t, callers.has(m) ? `your marker in messages[${index}]` : `the conversation marker (messages[${index}])`]);
        }
      }
    } else if (typeof content !== "string") {
      for (const block of content) for (const [t] of ttlsIn(block)) order.push([t, `your marker in messages[${index}]`]);
    }
  });
  let shortest = order[0];
  for (const entry of order.slice(1)) {
    if (TTLS.indexOf(entry[0]) > TTLS.indexOf(shortest[0])) {
      const fix = entry[1].startsWith("the ") ? `ttl: ${quoted(shortest[0])}` : `ttl: ${quoted(entry[0])}`;
      throw new RangeError(
        `cache_control TTLs: ${entry[1]} has ttl ${quoted(entry[0])} after ${shortest[1]} with ttl ` +
        `${quoted(shortest[0])}; the Messages API needs longer TTLs first: pass ${fix} to the adapter, ` +
        "or change your markers' ttl");
    }
    if (TTLS.indexOf(entry[0]) < TTLS.indexOf(shortest[0])) shortest = entry;
  }
}

/** Every marker on `block` and the blocks nested in it, as [ttl, marker], in document order. */
function ttlsIn(block) {
  const found = [];
  const pending = [block];
  while (pending.length > 0) { // depth already bounded by breakpointsIn, which saw every block
    const value = pending.pop();
    let children;
    if (isMapping(value)) {
      const mark = own(value, "cache_control");
      if (isMapping(mark)) found.push([own(mark, "ttl") === "1h" ? "1h" : "5m", mark]);
      children = Object.keys(value).filter((key) => key !== FREE_FORM_KEY).map((key) => value[key]);
    } else {
      children = value;
    }
    for (let i = children.length - 1; i >= 0; i--) {
      if (isMapping(children[i]) || Array.isArray(children[i])) pending.push(children[i]);
    }
  }
  return found;
}

function markable(block) {
  const kind = own(block, "type"); // a string: countBreakpoints refused any other type
  if (UNMARKABLE_BLOCKS.has(kind)) return false;
  const text = own(block, "text");
  return kind !== "text" || typeof text !== "string" || !isBlank(text);
}
