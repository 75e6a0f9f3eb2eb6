// Compiled by `tsc --strict --noEmit` (make test-js): every export of index.d.ts, used as a
// program would. Never run.
import {
  CanonicalJSONError, ConversationMismatchError, DEFAULT_MAX_LINE_BYTES, DuplicateKeyError, EMPTY,
  FINGERPRINT_VERSION, FORMAT_VERSION, InvalidNumberError, InvalidStringError, JSONSyntaxError,
  MAX_DEPTH, NestingTooDeepError, Run, RunContext, RunContextError, RunContextTypeError,
  RunContextValueError, SeedMismatchError, Session, TornTranscriptError, TranscriptDigestError,
  TranscriptError, TranscriptFormatError, TranscriptReplacedError, TranscriptVersionError,
  UnsupportedTypeError, canonicalJson, canonicalJsonBytes, canonicalizeText, checkContext,
  checkMessages, digest, digestBytes, keyedDigest, keyedDigestBytes, requestFingerprint, splice,
  verifyTranscript, ANTHROPIC_MAX_BREAKPOINTS, OPENAI_CACHE_MODES, anthropicMessages, openaiChat,
  openaiChatRequest, openaiPromptCaching, openaiResponses,
} from "runcontext";
import type {
  AnthropicBody, AnthropicOptions, Body, Entry, JsonValue, Message, OpenAICacheMode, OpenAIChatOptions,
  OpenAIChatRequest, OpenAIResponsesBody, OpenAIResponsesOptions, Section, TornTail, Verified,
} from "runcontext";

const facts: Entry[] = [["date", "2026-11-30"], ["branch", null], ["sha", undefined]];
const rc = new RunContext({ headSections: [["identity", "You are careful."]], facts, tailSections: null });
const head: string | null = rc.headText;
const tail: string | null = rc.tailText;
const headMessage: { role: "system"; content: string } | null = rc.headMessage;
const tailMessage = rc.tailMessage;
const sections: readonly Section[] = rc.sections;
const position: "head" | "tail" = sections[0].position;
const d: string = rc.digest + rc.sectionDigests.join() + rc.facts.length + rc.headSections.length + rc.tailSections.length;
const empty: boolean = rc.isEmpty || EMPTY.isEmpty || rc.equals(EMPTY);
const keyed: { digest: string; sectionDigests: string[] } = rc.keyedDigests(new Uint8Array(32));

const value: JsonValue = { a: [1, "x", null, true, 2n] };
const text: string = canonicalJson(value) + canonicalizeText('{"a":1}') + canonicalizeText(new Uint8Array(2));
const bytes: Uint8Array = canonicalJsonBytes(value);
const digests: string[] = [digest(value), digestBytes(bytes), keyedDigest(new Uint8Array(32), value), keyedDigestBytes(new Uint8Array(32), bytes)];

const messages = [{ role: "user", content: "hi" }];
const request: ({ role: string; content: string } | { role: "system"; content: string })[] = splice(messages, rc);
checkMessages(messages, { items: true });
const checked: RunContext | null = checkContext(rc, { optional: false });
const fingerprint: string = requestFingerprint({ model: "m", context: rc, revision: "r", tools: [{ name: "t" }], basis: null, sampling: { temperature: 0 } });
const versions: number = FORMAT_VERSION + FINGERPRINT_VERSION + MAX_DEPTH + DEFAULT_MAX_LINE_BYTES;

const session: Session = Session.create("t.jsonl", messages as Message[], { maxLineBytes: 1024, clock: () => new Date(), durable: true });
const opened = Session.open("t.jsonl", { repair: false, writable: null, maxLineBytes: 1024, clock: null, durable: false });
const inMemory = Session.fromBytes(session.toBytes(), { name: "mem", repair: true });
const run: Run = session.recordRun(messages, rc, { role: "assistant", content: "hello" }, { tokens: { head: 1 } });
const runFields: [number, string, Date, string, number, RunContext] = [run.number, run.timestamp, run.time, run.digest, run.messages, run.context];
const runTokens = run.tokens;
const runParts = [run.sections, run.facts];
const all: Run[] = opened.runs();
const recorded: Message[] = opened.messages();
const torn: TornTail | null = opened.torn ?? opened.repaired;
const state = [session.path, session.seed, session.chain, session.version, session.created, session.writable, session.messageCount];
session.checkSeed(messages);
session.checkConversation(messages);
session.appendMessages(messages);
session.refresh();
session.close();
inMemory.close();
const verified: Verified = verifyTranscript(new Uint8Array(0), { maxLineBytes: 10, name: "x" });
const chain: string | null = verified.chain;

function describe(error: unknown): string {
  if (error instanceof RunContextTypeError || error instanceof RunContextValueError) return error.kind;
  if (error instanceof RunContextError) return `${error.argument}[${error.index}]`;
  if (error instanceof UnsupportedTypeError || error instanceof InvalidNumberError || error instanceof InvalidStringError
      || error instanceof NestingTooDeepError || error instanceof DuplicateKeyError || error instanceof JSONSyntaxError) {
    return error.path;
  }
  if (error instanceof CanonicalJSONError) return `${error.kind} ${error.line} ${error.column} ${error.offset}`;
  if (error instanceof SeedMismatchError) return error.recorded ?? "";
  if (error instanceof ConversationMismatchError) return `${error.index} ${error.given}`;
  if (error instanceof TornTranscriptError || error instanceof TranscriptReplacedError || error instanceof TranscriptDigestError
      || error instanceof TranscriptVersionError || error instanceof TranscriptFormatError) {
    return error.file;
  }
  if (error instanceof TranscriptError) return `${error.line} ${error.kind}`;
  return String(error);
}

const chatOptions: OpenAIChatOptions = { role: "developer", tailRole: "user", model: "gpt-5.6", cache: null, cacheHead: true, ttl: "12h" };
const chatList: Body[] = openaiChat(messages, rc, chatOptions);
const chatBody: OpenAIChatRequest = openaiChatRequest(messages, null, { model: "gpt-5.6", cache: "explicit" });
const mode: OpenAICacheMode = OPENAI_CACHE_MODES[0];
const responsesOptions: OpenAIResponsesOptions = { tailRole: "developer", model: null, cacheHead: false, ttl: "30m" };
const responses: OpenAIResponsesBody = openaiResponses("Fix it.", rc, responsesOptions);
const instructions: string | undefined = responses.instructions;
const anthropicOptions: AnthropicOptions = { cache: true, tailRole: "user", system: [{ type: "text", text: "Be brief." }], reservedBreakpoints: 1, ttl: "1h" };
const anthropic: AnthropicBody = anthropicMessages(messages, rc, anthropicOptions);
const budget: 4 = ANTHROPIC_MAX_BREAKPOINTS;
const caches: boolean = openaiPromptCaching("gpt-5.6");
const adapters = [chatList, chatBody.prompt_cache_options?.mode, mode, responses.input, instructions, anthropic.messages, budget, caches];

export const used = [adapters, head, tail, headMessage, tailMessage, position, d, empty, keyed, text, digests, request, checked,
  fingerprint, versions, runFields, runTokens, runParts, all, recorded, torn, state, chain, describe];
