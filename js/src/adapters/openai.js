// OpenAI Chat Completions and Responses: head first, tail last, and an explicit
// `prompt_cache_breakpoint` at the end of the stable prefix (docs/PLACEMENT.md). The same
// bodies as python/runcontext/adapters/openai.py, pinned by docs/vectors/adapters.json.

import { splice } from "../index.js";
import {
  badRole, checkChoice, checkRoles, contextTexts, isBlank, isMapping, own, present, quoted,
  readOptions, typeName,
} from "./common.js";

// Roles Chat Completions accepts in `messages` ("function" is deprecated but still accepted).
const CHAT_ROLES = new Set(["system", "developer", "user", "assistant", "tool", "function"]);
// The head and the tail are instructions: `system`, or `developer` for the models that want it.
const CONTEXT_ROLES = ["system", "developer"];
// The tail may also travel as `user`, for gateways that move mid-conversation instructions.
const TAIL_ROLES = ["system", "developer", "user"];
// Roles of message items in a Responses `input`; other items carry a `type` and pass through.
const RESPONSES_ROLES = new Set(["user", "assistant", "system", "developer"]);
const RESPONSES_TAIL_ROLES = ["developer", "system", "user"];

/** `prompt_cache_options.mode`, plus "off": no breakpoint and no options (older models). */
export const OPENAI_CACHE_MODES = Object.freeze(["explicit", "implicit", "off"]);
// `prompt_cache_breakpoint.ttl`; none: the breakpoint inherits the request's TTL (30 minutes).
const BREAKPOINT_TTLS = ["30m", "12h"];
// Breakpoints go on system/developer, user and tool content, never on assistant content.
const CHAT_MARKABLE_ROLES = new Set(["system", "developer", "user", "tool"]);
const RESPONSES_MARKABLE_ROLES = new Set(["system", "developer", "user"]);
// Content parts that carry `prompt_cache_breakpoint` in the SDK's types.
const CHAT_MARKABLE_PARTS = new Set(["text", "image_url", "input_audio", "file"]);
const RESPONSES_MARKABLE_PARTS = new Set(["input_text", "input_image", "input_file"]);
// Responses items whose `output` is a string or a list of input parts.
const RESPONSES_OUTPUT_ITEMS = new Set(["function_call_output"]);
// GPT-5.6 and later accept `prompt_cache_options` and `prompt_cache_breakpoint`. ASCII
// digits only: a version is never written in another script's digits.
const GPT_NAME = /^gpt-([0-9]+)(?:\.([0-9]+))?(?![0-9])/;

/**
 * Whether `model` takes `prompt_cache_options` and `prompt_cache_breakpoint`: `gpt-<major>[.<minor>]`
 * from GPT-5.6 on, with any suffix, behind a gateway's `provider/` prefix or in an `ft:` name.
 */
export function openaiPromptCaching(model) {
  if (typeof model !== "string") throw new TypeError(`model: expected a string, got ${typeName(model)}`);
  let name = model.slice(model.lastIndexOf("/") + 1).toLowerCase();
  if (name.startsWith("ft:")) name = name.slice(3);
  const found = GPT_NAME.exec(name);
  if (found === null) return false;
  const major = BigInt(found[1]);
  const minor = found[2] === undefined ? 0n : BigInt(found[2]);
  return major > 5n || (major === 5n && minor >= 6n);
}

const CHAT_OPTIONS = { role: "system", tailRole: null, model: null, cache: null, cacheHead: false, ttl: null };

/**
 * The `messages` list for Chat Completions: `[head, ...messages, tail]`, with a
 * `prompt_cache_breakpoint` on the last conversation part that can carry one when caching is
 * on (`cache`, or by default `openaiPromptCaching(model)`). Python's `openai_chat`.
 */
export function openaiChat(messages, context, options) {
  const o = readOptions("openaiChat", options, CHAT_OPTIONS);
  return chat(messages, context, o)[0];
}

/**
 * `{model, messages, prompt_cache_options}` for `client.chat.completions.create(body)`;
 * `prompt_cache_options` is `{mode}` when caching is on. Python's `openai_chat_request`.
 */
export function openaiChatRequest(messages, context, options) {
  const o = readOptions("openaiChatRequest", options, { ...CHAT_OPTIONS, model: undefined });
  if (o.model === undefined) {
    throw new TypeError("model: openaiChatRequest needs the model name (the body's `model`)");
  }
  if (typeof o.model !== "string") throw new TypeError(`model: expected a string, got ${typeName(o.model)}`);
  const [request, mode] = chat(messages, context, o);
  const body = { model: o.model, messages: request };
  if (mode !== "off") body.prompt_cache_options = { mode };
  return body;
}

const RESPONSES_OPTIONS = { tailRole: "developer", model: null, cache: null, cacheHead: false, ttl: null };

/**
 * `{instructions: head, input: [...input, tail]}` for the Responses API, with a breakpoint on
 * the last input part of the conversation that can carry one when caching is on, and
 * `model` and `prompt_cache_options` in the body. Python's `openai_responses`.
 */
export function openaiResponses(input, context, options) {
  const o = readOptions("openaiResponses", options, RESPONSES_OPTIONS);
  checkChoice("tailRole", o.tailRole, RESPONSES_TAIL_ROLES);
  const [mode, marker] = cacheChoice(o.model, o.cache, o.cacheHead, o.ttl);
  const items = typeof input === "string" ? [{ role: "user", content: input }] : checkInputItems(input);
  const [head, tail] = contextTexts(context);
  const body = o.model === null ? {} : { model: o.model };
  const request = [...items];
  if (marker !== null) {
    const found = responsesBreakpoint(items, marker);
    if (found !== null) request[found[0]] = found[1];
  }
  if (head !== null) {
    if (marker !== null && o.cacheHead) {
      const part = { type: "input_text", text: head, prompt_cache_breakpoint: { ...marker } };
      request.unshift({ role: "developer", content: [part] });
    } else {
      body.instructions = head;
    }
  }
  if (tail !== null) request.push({ role: o.tailRole, content: tail });
  body.input = request;
  if (mode !== "off") body.prompt_cache_options = { mode };
  return body;
}

function chat(messages, context, { role, tailRole, model, cache, cacheHead, ttl }) {
  checkChoice("role", role, CONTEXT_ROLES);
  if (tailRole === null) tailRole = role;
  checkChoice("tailRole", tailRole, TAIL_ROLES);
  const [mode, marker] = cacheChoice(model, cache, cacheHead, ttl);
  const request = splice(messages, context); // checks the messages' shape and the context
  checkRoles(messages, CHAT_ROLES, "messages", "OpenAI Chat");
  const [head, tail] = contextTexts(context);
  const first = head === null ? 0 : 1;
  if (head !== null) {
    if (marker !== null && cacheHead) {
      request[0] = { role, content: [{ type: "text", text: head, prompt_cache_breakpoint: { ...marker } }] };
    } else if (role !== "system") {
      request[0] = { role, content: head };
    }
  }
  if (tail !== null && tailRole !== "system") request[request.length - 1] = { role: tailRole, content: tail };
  if (marker !== null) {
    const found = chatBreakpoint(messages, marker);
    if (found !== null) request[first + found[0]] = found[1];
  }
  return [request, mode];
}

/** The request's cache mode and the breakpoint to place (`null`: place none). */
function cacheChoice(model, cache, cacheHead, ttl) {
  if (model !== null && typeof model !== "string") {
    throw new TypeError(`model: expected a string or null, got ${typeName(model)}`);
  }
  if (cache === null) cache = model !== null && openaiPromptCaching(model) ? "explicit" : "off";
  checkChoice("cache", cache, OPENAI_CACHE_MODES);
  if (typeof cacheHead !== "boolean") throw new TypeError(`cacheHead: expected a boolean, got ${typeName(cacheHead)}`);
  if (ttl !== null) checkChoice("ttl", ttl, BREAKPOINT_TTLS);
  if (cache === "off") {
    if (ttl !== null || cacheHead) {
      const option = ttl !== null ? "ttl" : "cacheHead";
      throw new RangeError(
        `${option}: there is no breakpoint to apply it to, since caching is off (cache "off", or ` +
        `a model that does not take breakpoints: ${quoted(model)}); pass cache: "explicit" for a model from GPT-5.6 on`);
    }
    return [cache, null];
  }
  const marker = { mode: "explicit" }; // the only breakpoint mode there is
  if (ttl !== null) marker.ttl = ttl;
  return [cache, marker];
}

/**
 * The content as a new array with its last markable part marked; `true` when a part the
 * caller marked comes first (it already ends a cached prefix); `null` when no part
 * qualifies. A string becomes one text part (the API's own reading of a string). A part
 * read whose `type` is not a string is a TypeError naming `where[position].type`.
 */
function lastPart(content, kinds, textKind, marker, where) {
  if (typeof content === "string") {
    if (isBlank(content)) return null;
    return [{ type: textKind, text: content, prompt_cache_breakpoint: { ...marker } }];
  }
  if (!Array.isArray(content)) return null;
  for (let position = content.length - 1; position >= 0; position--) {
    const part = content[position];
    if (!isMapping(part)) continue;
    if (present(part, "prompt_cache_breakpoint")) return true;
    if (Object.hasOwn(part, "type") && typeof part.type !== "string") {
      throw new TypeError(`${where}[${position}].type: expected a string, got ${typeName(part.type)}`);
    }
    if (kinds.has(own(part, "type"))) {
      const text = own(part, "text");
      if (typeof text === "string" && isBlank(text)) continue;
      const marked = [...content];
      marked[position] = { ...part, prompt_cache_breakpoint: { ...marker } };
      return marked;
    }
  }
  return null;
}

function chatBreakpoint(messages, marker) {
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (!CHAT_MARKABLE_ROLES.has(own(message, "role"))) continue; // walk back past assistant content
    const content = lastPart(own(message, "content"), CHAT_MARKABLE_PARTS, "text", marker, `messages[${index}].content`);
    if (content === true) return null;
    if (content !== null) return [index, { ...message, content }];
  }
  return null;
}

function responsesBreakpoint(items, marker) {
  for (let index = items.length - 1; index >= 0; index--) {
    const item = items[index];
    let key;
    if (Object.hasOwn(item, "role")) {
      if (!RESPONSES_MARKABLE_ROLES.has(item.role)) continue;
      key = "content";
    } else if (RESPONSES_OUTPUT_ITEMS.has(item.type)) { // a string: checkInputItems
      key = "output";
    } else {
      continue; // function calls, reasoning, ...: the model's output
    }
    const content = lastPart(own(item, key), RESPONSES_MARKABLE_PARTS, "input_text", marker, `input[${index}].${key}`);
    if (content === true) return null;
    if (content !== null) return [index, { ...item, [key]: content }];
  }
  return null;
}

function checkInputItems(items) {
  if (!Array.isArray(items)) {
    throw new TypeError(`input: expected a string or an array of input items, got ${typeName(items)}`);
  }
  items.forEach((item, index) => {
    if (!isMapping(item)) throw new TypeError(`input[${index}]: expected an input item object, got ${typeName(item)}`);
    if (Object.hasOwn(item, "role")) {
      const role = item.role;
      if (typeof role !== "string" || !RESPONSES_ROLES.has(role)) badRole(role, RESPONSES_ROLES, `input[${index}]`, "OpenAI Responses");
    } else if (!Object.hasOwn(item, "type")) {
      throw new TypeError(
        `input[${index}]: an input item needs a 'role' (a message) or a 'type' (such as 'function_call_output')`);
    } else if (typeof item.type !== "string") {
      throw new TypeError(`input[${index}].type: expected a string, got ${typeName(item.type)}`);
    }
  });
  return items;
}
