// The request-body adapters (docs/JAVASCRIPT.md, *Adapters*; docs/PLACEMENT.md): the same
// bodies as Python's runcontext.adapters, under JavaScript names.
export { OPENAI_CACHE_MODES, openaiChat, openaiChatRequest, openaiPromptCaching, openaiResponses } from "./openai.js";
export { ANTHROPIC_MAX_BREAKPOINTS, anthropicMessages } from "./anthropic.js";
