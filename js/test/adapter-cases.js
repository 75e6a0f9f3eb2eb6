// How a case of docs/vectors/adapters.json (Python names) runs against this package, for
// adapters.test.js and the differential driver (tests/js_driver.mjs).
import {
  RunContext, anthropicMessages, openaiChat, openaiChatRequest, openaiPromptCaching, openaiResponses,
} from "../src/index.js";

export const ADAPTERS = {
  openai_chat: openaiChat,
  openai_chat_request: openaiChatRequest,
  openai_responses: openaiResponses,
  anthropic_messages: anthropicMessages,
};

/** A Python keyword's JavaScript option name: `tail_role` → `tailRole`. */
export const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

/** The place a JavaScript refusal names, for the place a Python refusal names. */
export const jsWhere = (where) => where.replace(/\b(tail_role|cache_head|reserved_breakpoints)\b/g, camel);

/** `{expect}` or `{error: {type, where}}`, as the vectors write an outcome. */
export function runCase({ adapter, input, context, options }) {
  try {
    if (adapter === "openai_prompt_caching") return { expect: openaiPromptCaching(input) };
    const rc = context === null ? null : new RunContext({
      headSections: context.head_sections, facts: context.facts, tailSections: context.tail_sections,
    });
    const jsOptions = Object.fromEntries(Object.entries(options).map(([k, v]) => [camel(k), v]));
    return { expect: ADAPTERS[adapter](input, rc, jsOptions) };
  } catch (error) {
    if (!(error instanceof TypeError || error instanceof RangeError)) throw error;
    const type = error instanceof TypeError ? "TypeError" : "ValueError";
    return { error: { type, where: error.message.split(": ", 1)[0] } };
  }
}

/** The outcome a case expects, in JavaScript's terms. */
export function expected(c) {
  if (c.error === undefined) return { expect: c.expect };
  return { error: { type: c.error.type, where: jsWhere(c.error.where) } };
}
