/* Generated from server/codeask/lsp/messages.py by `python -m codeask.lsp.protocol_gen --write`: do not edit. */

export const SEMANTIC_SEARCH = "workspace/semanticSearch";
export const ASK_CODE = "workspace/askCode";
export const INDEX_STATUS = "codeask/indexStatus";
export const HEALTH = "codeask/health";
export const ANSWER_DELTA = "codeask/answerDelta";

/** `workspace/semanticSearch` and the `codeask.search` command. */
export interface SemanticSearchParams {
  query: string;
  k?: number;
  filters?: SearchFilters;
}

/** Narrow a search; every field optional (see codeask.core.search.retrieve.Filters). */
export interface SearchFilters {
  language?: string;
  pathGlob?: string;
  kind?: "class" | "commit" | "function" | "hunk" | "method" | "module" | "section" | "window";
  scope?: "all" | "code" | "history";
  author?: string;
  since?: string;
  until?: string;
}

/** `workspace/semanticSearch` result. */
export interface SemanticSearchResult {
  results: SearchItem[];
  indexState: IndexState;
}

/** One search result. */
export interface SearchItem {
  uri: string;
  range: Range;
  symbol: string;
  kind: string;
  score: number;
  preview: string;
  retrievers: string[];
  /** History hits only: sha, author, email, date, subject. */
  meta?: Record<string, string>;
}

/** LSP range (end exclusive). */
export interface Range {
  start: Position;
  end: Position;
}

/** LSP position (0-based). */
export interface Position {
  line: number;
  character: number;
}

/** What every result carries: is the index usable yet, and how far along. */
export interface IndexState {
  /** `indexing` while any folder loads or indexes. */
  state: "empty" | "error" | "indexing" | "ready";
  /** A configured vector tier does not cover every chunk yet, a folder is being indexed, or the MiniLM query model is loading: `tiersAnswered` says what answers. */
  warming: boolean;
  /** While `indexing`: the running job's progress (not a tier's share); else the share of chunks the slowest configured tier covers. */
  percent: number;
  files: number;
  chunks: number;
  /** Chunks done by the slowest configured tier. */
  embedded: number;
  folders: FolderState[];
  /** The retrievers a search answers with now (in a search result: those that answered it): `lexical`, then `static` and `minilm` when their vectors take part. */
  tiersAnswered?: string[];
  /** One line: which tiers answered and each configured vector tier's count, e.g. `answered by lexical + static (static: all 9051 chunks; MiniLM: 1200 of 9051 chunks (13%), filling in)`; empty when every configured tier is complete and answers. */
  tiersNote?: string;
}

/** One workspace folder's index. */
export interface FolderState {
  root: string;
  state: string;
  files: number;
  chunks: number;
  embedded: number;
  model: string;
  indexDir: string;
  /** Why the folder is in state `error` (or what it is doing). */
  message?: string;
  /** Single-file reindex runs (saves, watcher events) since the server started. */
  updates?: number;
  /** Chunks with a static-tier vector (servers before the tiers omit it). */
  staticEmbedded?: number;
  /** The vector tiers this folder builds (`embed.tiers`). */
  tiers?: string[];
  /** The team base (absent while loading, and from older servers). */
  team?: TeamState;
  /** Set when the ignore rules leave (nearly) nothing of the folder: which file and line, and how to override it (`index.gitignore = false`, a `!` line). */
  ignoreNote?: string;
  /** What the model tier covers: `full`, or `on demand: N chunks cached, M of opened or changed files` (a folder past `embed.modelFullPassChunks`); empty without one. */
  modelTier?: string;
}

/** A folder's team side (`index.backend`): the published revision it reads, or why none. */
export interface TeamState {
  /** `index.backend`. */
  backend: "local" | "postgres";
  /** `base` when it reads one; else why not: `unreachable` (the database did not answer: retried), `unpublished` (nothing near HEAD), `unusable`; `off`: local. */
  kind?: "base" | "off" | "unpublished" | "unreachable" | "unusable";
  /** `repository@sha[:12]` of the revision read; empty without. */
  base?: string;
  /** Commits from that revision to HEAD. */
  behind?: number;
  /** Files that differ from the base (edited, new, deleted): the local overlay. */
  overlayFiles?: number;
  /** Why there is no base, one line, no password. */
  reason?: string;
  /** Seconds until the unreachable database is tried again. */
  retryIn?: number;
  /** Why the last query to the base failed; empty once one succeeded. */
  queryError?: string;
  /** The team embedding cache: `connected`, `not tried yet` or `unavailable: ...` (empty before the model loads). */
  cache?: string;
}

/** `workspace/askCode`. */
export interface AskCodeParams {
  question: string;
  uri?: string;
  range?: Range;
  k?: number;
  filters?: SearchFilters;
  streamToken?: string | number;
}

/** `workspace/askCode` result; `error` only when the LLM call failed or was stopped. */
export interface AskCodeResult {
  answer: string;
  sources: AskSource[];
  model: string;
  promptTokens: number;
  truncated: boolean;
  indexState: IndexState;
  /** Set when the LLM call failed or was stopped; sources are still there. */
  error?: string;
  /** `answer` is what arrived before `error` stopped it (a cap, a deadline, or the server's own ending: its token cap or a content filter). */
  incomplete?: boolean;
}

/** A source an answer cites. */
export interface AskSource {
  uri: string;
  range: Range;
  symbol: string;
  score: number;
}

/** `codeask/indexStatus` takes no params ({}, null, or [] — what Lua encodes `{}` as). */
export type IndexStatusParams = Record<string, never>;

/** `codeask/health` takes no params ({}, null, or []). */
export type HealthParams = Record<string, never>;

/** `codeask/health` result: what `:checkhealth` and the status bar show. */
export interface HealthResult {
  /** codeask's version. */
  version: string;
  /** The server's Python, e.g. `3.11.9 (CPython)`. */
  python: string;
  llm: LlmHealth;
  embedding: EmbeddingHealth;
  /** What `codeask/indexStatus` answers. */
  indexState: IndexState;
  /** The team database; absent unless `index.backend = "postgres"`. */
  team?: TeamHealth;
}

/** The LLM endpoint as the server's probe found it (the settings askCode uses). */
export interface LlmHealth {
  /** `llm.provider`. */
  provider: string;
  /** `llm.baseUrl` without credentials (`user:pass@` → `***@`). */
  endpoint: string;
  /** The address probed: the provider's model list. */
  modelsUrl: string;
  /** `llm.model`. */
  model: string;
  /** The model list came back within the probe's 2 s. */
  reachable: boolean;
  /** `model` is in that list (false when unreachable). */
  modelPresent: boolean;
  /** How many models the endpoint offers. */
  models: number;
  /** The endpoint is this machine (localhost, 127/8, ::1). */
  loopback: boolean;
  /** Why it is unreachable, one line; empty when it answered. */
  error?: string;
}

/** `embed.model` and the tiers built with it. */
export interface EmbeddingHealth {
  model: string;
  tiers: EmbeddingTier[];
}

/** One vector tier of `embed.tiers`. */
export interface EmbeddingTier {
  /** `static` or `minilm`. */
  name: string;
  model: string;
  /** The model can be loaded without a download. */
  available: boolean;
  detail: string;
}

/** The team database (`index.backend = "postgres"`), as a read-only probe found it. */
export interface TeamHealth {
  /** The environment variable holding the DSN (never the DSN). */
  dsnEnv: string;
  /** `user@host:port/db`, no password; empty without a DSN. */
  where: string;
  reachable: boolean;
  /** The database's codeask schema (0: never migrated). */
  schemaVersion: number;
  /** The newest schema this server knows. */
  schemaKnown: number;
  /** The team's dimension for `embed.model` (0: none yet). */
  modelDim: number;
  /** This role may add vectors (publishers need it). */
  writable: boolean;
  /** How long the probe took. */
  millis: number;
  /** Why it is unusable, one line, redacted; empty when fine. */
  error?: string;
}

/** `codeask/answerDelta` notification: more answer text of a streamed askCode. */
export interface AnswerDelta {
  /** The `streamToken` the askCode request carried. */
  streamToken: string | number;
  delta: string;
}
