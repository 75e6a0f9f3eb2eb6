// Type declarations of the runcontext package (self-contained: no @types/node needed).

/** A JSON value as canonicalJson takes it; anything else is refused at run time. */
export type JsonValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | readonly JsonValue[]
  | { readonly [key: string]: JsonValue };

/** An entry: a name and its text, or `null`/`undefined` to drop it (the name stays taken). */
export type Entry = readonly [name: string, value: string | null | undefined];

export interface RunContextArgs {
  headSections?: readonly Entry[] | null;
  facts?: readonly Entry[] | null;
  tailSections?: readonly Entry[] | null;
}

export interface Section {
  readonly name: string;
  readonly digest: string;
  readonly text: string;
  readonly position: "head" | "tail";
}

export interface SystemMessage {
  role: "system";
  content: string;
}

/** A chat message or a Responses item: an object with a string `role` or `type`. */
export type Message = { readonly [key: string]: unknown };

export declare const FORMAT_VERSION: 1;
export declare const FINGERPRINT_VERSION: 1;
export declare const MAX_DEPTH: 512;
export declare const DEFAULT_MAX_LINE_BYTES: number;

export declare class RunContext {
  constructor(args?: RunContextArgs);
  readonly headText: string | null;
  readonly tailText: string | null;
  readonly headMessage: SystemMessage | null;
  readonly tailMessage: SystemMessage | null;
  readonly digest: string;
  readonly sections: readonly Section[];
  readonly sectionDigests: readonly string[];
  readonly headSections: readonly (readonly [string, string])[];
  readonly facts: readonly (readonly [string, string])[];
  readonly tailSections: readonly (readonly [string, string])[];
  readonly isEmpty: boolean;
  keyedDigests(key: Uint8Array): { digest: string; sectionDigests: string[] };
  equals(other: unknown): boolean;
  toString(): string;
}

export declare const EMPTY: RunContext;

export declare function canonicalJson(value: unknown): string;
export declare function canonicalJsonBytes(value: unknown): Uint8Array;
export declare function canonicalizeText(text: string | Uint8Array | ArrayBuffer): string;
export declare function digest(value: unknown): string;
export declare function digestBytes(data: Uint8Array | ArrayBuffer | ArrayBufferView): string;
export declare function keyedDigest(key: Uint8Array, value: unknown): string;
export declare function keyedDigestBytes(key: Uint8Array, data: Uint8Array | ArrayBuffer | ArrayBufferView): string;
export declare function splice<M extends Message>(
  messages: readonly M[],
  context: RunContext | null | undefined,
): (M | SystemMessage)[];
export declare function checkMessages<M>(
  messages: readonly M[],
  options?: { argument?: string; items?: boolean; start?: number },
): readonly M[];
export declare function checkContext(context: unknown, options?: { optional?: boolean }): RunContext | null;

export interface FingerprintArgs {
  model: string;
  context: RunContext;
  revision: string;
  tools?: readonly { readonly [key: string]: unknown }[] | null;
  basis?: string | null;
  sampling?: { readonly [key: string]: unknown } | null;
}
export declare function requestFingerprint(args: FingerprintArgs): string;

export interface TornTail {
  readonly line: number;
  readonly offset: number;
  readonly length: number;
}

export declare class Run {
  private constructor();
  readonly number: number;
  /** The record's time, as written (ISO 8601, UTC, `Z`). */
  readonly timestamp: string;
  readonly time: Date;
  readonly digest: string;
  /** The conversation's length when the run was recorded. */
  readonly messages: number;
  readonly tokens: { readonly [key: string]: unknown } | null;
  readonly context: RunContext;
  readonly sections: readonly Section[];
  readonly facts: readonly (readonly [string, string])[];
  /** The conversation exactly as this run was sent it (after the compactions before it). */
  conversation(): Message[];
}

/** A compaction or an elision, as read (docs/TRANSCRIPT.md). */
export type Edit =
  | {
      kind: "compaction";
      after_run: number;
      time: string;
      start: number;
      end: number;
      messages: Message[];
      mode: "summary" | "trim";
      tokens: { before: number; after: number; quality: string } | null;
    }
  | { kind: "elision"; after_run: number; time: string; items: [number, Message][] };

export interface OpenOptions {
  repair?: boolean;
  writable?: boolean | null;
  maxLineBytes?: number;
  clock?: (() => Date) | null;
  /** fsync the file after each append (and its directory after `create`). */
  durable?: boolean;
}

export declare class Session {
  private constructor();
  static create(
    path: string,
    messages: readonly Message[],
    options?: { maxLineBytes?: number; clock?: (() => Date) | null; durable?: boolean },
  ): Session;
  static open(path: string, options?: OpenOptions): Session;
  static fromBytes(
    bytes: Uint8Array | ArrayBuffer | ArrayBufferView,
    options?: { name?: string; maxLineBytes?: number; clock?: (() => Date) | null; repair?: boolean },
  ): Session;
  readonly path: string;
  readonly seed: string;
  readonly chain: string;
  readonly version: number;
  readonly created: string;
  readonly writable: boolean;
  readonly torn: TornTail | null;
  readonly repaired: TornTail | null;
  readonly messageCount: number;
  messages(): Message[];
  runs(): Run[];
  edits(): Edit[];
  refresh(): void;
  toBytes(): Uint8Array;
  checkSeed(messages: readonly Message[]): void;
  checkConversation(messages: readonly Message[]): void;
  recordRun(
    messages: readonly Message[],
    context?: RunContext | null,
    reply?: Message | null,
    options?: { tokens?: { readonly [key: string]: unknown } | null },
  ): Run;
  appendMessages(messages: readonly Message[]): void;
  close(): void;
}

export interface Verified {
  messages: Message[];
  runs: Run[];
  edits: Edit[];
  chain: string | null;
  torn: TornTail | null;
  unchained: boolean;
}
export declare function verifyTranscript(
  bytes: Uint8Array | ArrayBuffer | ArrayBufferView,
  options?: { maxLineBytes?: number; name?: string },
): Verified;

export type CanonicalKind =
  | "non-finite" | "integer-out-of-range" | "lone-surrogate" | "non-string-key"
  | "unsupported-type" | "too-deep" | "duplicate-key" | "invalid-utf8" | "bom" | "syntax"
  | "control-character" | "number-overflow" | "trailing";

export declare class RunContextError extends Error {
  constructor(message: string, info: { kind: string; argument: string; index: number | null });
  readonly kind: string;
  readonly argument: "headSections" | "facts" | "tailSections" | string;
  readonly index: number | null;
}
export declare class RunContextTypeError extends RunContextError {}
export declare class RunContextValueError extends RunContextError {}

export declare class CanonicalJSONError extends Error {
  constructor(
    message: string,
    info: { kind: string; path?: string; line?: number | null; column?: number | null; offset?: number | null },
  );
  readonly kind: CanonicalKind | string;
  readonly path: string;
  readonly line: number | null;
  readonly column: number | null;
  readonly offset: number | null;
}
export declare class UnsupportedTypeError extends CanonicalJSONError {}
export declare class InvalidNumberError extends CanonicalJSONError {}
export declare class InvalidStringError extends CanonicalJSONError {}
export declare class NestingTooDeepError extends CanonicalJSONError {}
export declare class DuplicateKeyError extends CanonicalJSONError {}
export declare class JSONSyntaxError extends CanonicalJSONError {}

export declare class TranscriptError extends Error {
  constructor(message: string, info: { file: string; line?: number | null; kind?: string | null });
  readonly file: string;
  readonly line: number | null;
  readonly kind: string | null;
}
export declare class TranscriptFormatError extends TranscriptError {}
export declare class TranscriptVersionError extends TranscriptFormatError {}
export declare class TranscriptDigestError extends TranscriptError {}
export declare class TornTranscriptError extends TranscriptError {}
export declare class TranscriptReplacedError extends TranscriptError {}
export declare class ConversationMismatchError extends TranscriptError {
  constructor(
    message: string,
    info: { file: string; line?: number | null; index?: number | null; recorded?: string | null; given?: string | null },
  );
  readonly index: number | null;
  readonly recorded: string | null;
  readonly given: string | null;
}
export declare class SeedMismatchError extends ConversationMismatchError {
  constructor(message: string, info: { file: string; recorded: string; given: string | null });
}

// --- request-body adapters (docs/PLACEMENT.md; docs/JAVASCRIPT.md, *Adapters*) ---------------

/** `prompt_cache_options.mode`, or "off": no breakpoint and no options. */
export type OpenAICacheMode = "explicit" | "implicit" | "off";
export declare const OPENAI_CACHE_MODES: readonly OpenAICacheMode[];
export declare const ANTHROPIC_MAX_BREAKPOINTS: 4;

/** A message, item or content block as the adapters pass it through: any JSON object. */
export type Body = { [key: string]: unknown };

export interface OpenAIChatOptions {
  /** The head's role (and the tail's by default). */
  role?: "system" | "developer";
  tailRole?: "system" | "developer" | "user" | null;
  /** The model name: picks the cache policy when `cache` is not given. */
  model?: string | null;
  /** `null`: "explicit" when `openaiPromptCaching(model)`, else "off". */
  cache?: OpenAICacheMode | null;
  cacheHead?: boolean;
  /** `prompt_cache_breakpoint.ttl`. */
  ttl?: "30m" | "12h" | null;
}

export interface OpenAIChatRequest {
  model: string | null;
  messages: Body[];
  prompt_cache_options?: { mode: "explicit" | "implicit" };
}

export interface OpenAIResponsesOptions {
  tailRole?: "developer" | "system" | "user";
  model?: string | null;
  cache?: OpenAICacheMode | null;
  cacheHead?: boolean;
  ttl?: "30m" | "12h" | null;
}

export interface OpenAIResponsesBody {
  model?: string;
  instructions?: string;
  input: Body[];
  prompt_cache_options?: { mode: "explicit" | "implicit" };
}

export interface AnthropicOptions {
  cache?: boolean;
  tailRole?: "user" | "system";
  /** Your own system prompt, after the head: a string or text blocks. */
  system?: string | readonly Body[] | null;
  /** Breakpoints the adapter cannot see (tool definitions, top-level `cache_control`). */
  reservedBreakpoints?: number;
  ttl?: "5m" | "1h" | null;
}

export interface AnthropicBody {
  system?: string | Body[];
  messages: Body[];
}

export declare function openaiPromptCaching(model: string): boolean;
export declare function openaiChat(
  messages: readonly Message[],
  context: RunContext | null | undefined,
  options?: OpenAIChatOptions,
): Body[];
export declare function openaiChatRequest(
  messages: readonly Message[],
  context: RunContext | null | undefined,
  options: OpenAIChatOptions & { model: string },
): OpenAIChatRequest;
export declare function openaiResponses(
  input: string | readonly Message[],
  context: RunContext | null | undefined,
  options?: OpenAIResponsesOptions,
): OpenAIResponsesBody;
export declare function anthropicMessages(
  messages: readonly Message[],
  context: RunContext | null | undefined,
  options?: AnthropicOptions,
): AnthropicBody;
