/**
 * The codeask wire protocol as the client sees it (docs/protocol.md). Types and method names
 * only: no logic, no vscode.
 */

export const SEMANTIC_SEARCH = "workspace/semanticSearch";
export const ASK_CODE = "workspace/askCode";
export const INDEX_STATUS = "codeask/indexStatus";
export const ANSWER_DELTA = "codeask/answerDelta";

/** LSP position: 0-based line and character. */
export interface Position {
  line: number;
  character: number;
}

/** LSP range, end exclusive. */
export interface Range {
  start: Position;
  end: Position;
}

export interface SearchFilters {
  language?: string;
  pathGlob?: string;
  kind?: string;
  scope?: "code" | "history" | "all";
  author?: string;
  since?: string;
  until?: string;
}

export interface FolderState {
  root: string;
  state: string;
  files: number;
  chunks: number;
  embedded: number;
  model: string;
  indexDir: string;
  message?: string;
  /** Chunks with a static-tier vector (servers before the tiers omit it). */
  staticEmbedded?: number;
  /** The vector tiers this folder builds (`embed.tiers`), e.g. ["static", "minilm"]. */
  tiers?: string[];
}

export interface IndexState {
  state: "empty" | "indexing" | "ready" | "error" | string;
  warming: boolean;
  percent: number;
  files: number;
  chunks: number;
  embedded: number;
  folders: FolderState[];
}

export interface SemanticSearchParams {
  query: string;
  k?: number;
  filters?: SearchFilters;
}

export interface SearchItem {
  uri: string;
  range: Range;
  symbol: string;
  kind: string;
  score: number;
  preview: string;
  retrievers: string[];
  meta?: Record<string, string>;
}

export interface SemanticSearchResult {
  results: SearchItem[];
  indexState: IndexState;
}

export interface AskCodeParams {
  question: string;
  uri?: string;
  range?: Range;
  k?: number;
  filters?: SearchFilters;
  streamToken?: string | number;
}

export interface AskSource {
  uri: string;
  range: Range;
  symbol: string;
  score: number;
}

export interface AskCodeResult {
  answer: string;
  sources: AskSource[];
  model: string;
  promptTokens: number;
  truncated: boolean;
  indexState: IndexState;
  /** Set when the LLM call failed or was stopped; sources are still there. */
  error?: string;
  /** The answer was cut short by `error`: `answer` holds the part that arrived. */
  incomplete?: boolean;
}

export interface AnswerDelta {
  streamToken: string | number;
  delta: string;
}
