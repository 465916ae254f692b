/**
 * Turning protocol values into what the user sees: `path:line` labels, status bar text,
 * QuickPick rows, and the locations behind links. Pure functions.
 */

import type { FolderState, IndexState, LlmHealth, Range, SearchItem, TeamHealth, TeamState } from "./protocol";

/** Convert a file URI to a relative path when it is under one of the workspace folders. */
export function relativePath(uri: string, folders: string[]): string {
  const sorted = [...folders].sort((a, b) => b.length - a.length);
  for (const folder of sorted) {
    const base = folder.endsWith("/") ? folder : folder + "/";
    if (uri.startsWith(base)) return decodeURIComponent(uri.slice(base.length));
  }
  return uri.startsWith("file://") ? decodeURIComponent(uri.slice("file://".length)) : uri;
}

/** `path:line` (1-based), or `path:line-end` when the range spans several lines. */
export function locationLabel(uri: string, range: Range | undefined, folders: string[]): string {
  const path = relativePath(uri, folders);
  if (!range) return path;
  const start = range.start.line + 1;
  // LSP ranges are end-exclusive: a range ending at character 0 does not include that line.
  const endLine = range.end.character === 0 && range.end.line > range.start.line ? range.end.line : range.end.line + 1;
  return endLine > start ? `${path}:${start}-${endLine}` : `${path}:${start}`;
}

export interface StatusView {
  text: string;
  tooltip: string;
  /** "error" and "warning" map to the status bar's themed background colours. */
  severity: "normal" | "warning" | "error";
}

export type ClientPhase = "starting" | "installing" | "missing" | "running" | "stopped" | "failed";

/** The status bar item for the client's phase, the server's index state and, once the server
 * answered codeask/health, its LLM endpoint (a line of the tooltip). */
export function statusView(phase: ClientPhase, state: IndexState | undefined, detail = "", llm?: LlmHealth, team?: TeamHealth): StatusView {
  const logs = (llm ? `${llmLine(llm)}\n` : "") + (team ? `${teamLine(team)}\n` : "") + "Click to show the codeask logs.";
  if (phase === "failed") {
    return { text: "$(error) codeask: error", tooltip: `${detail || "The server could not start."}\n${logs}`, severity: "error" };
  }
  if (phase === "installing") {
    return { text: "$(sync~spin) codeask: installing server", tooltip: `${detail || "Installing the codeask server."}\n${logs}`, severity: "normal" };
  }
  if (phase === "missing") {
    return { text: "$(circle-slash) codeask: no server", tooltip: `${detail || "No codeask server found."}\n${logs}`, severity: "warning" };
  }
  if (phase === "stopped") return { text: "$(circle-slash) codeask: stopped", tooltip: logs, severity: "warning" };
  if (phase === "starting" || !state) return { text: "$(loading~spin) codeask: starting", tooltip: logs, severity: "normal" };
  const counts = folderSummary(state);
  if (state.state === "error") {
    const why = state.folders.map((f) => f.message).filter(Boolean).join("\n");
    return { text: "$(error) codeask: index error", tooltip: `${why || "Indexing failed."}\n${counts}\n${logs}`, severity: "error" };
  }
  if (state.state === "indexing" || state.state === "empty" || state.warming) {
    const pct = Math.max(0, Math.min(100, Math.round(state.percent)));
    const note = state.state === "empty" ? "Waiting for the first index." : warmingNote(state);
    return { text: `$(sync~spin) codeask: warming up ${pct}%`, tooltip: `${note}\n${counts}\n${logs}`, severity: "normal" };
  }
  return { text: "$(check) codeask: ready", tooltip: `${counts}\n${logs}`, severity: "normal" };
}

/** The LLM endpoint as the server found it (codeask/health); the client never probes it itself. */
export function llmLine(llm: LlmHealth): string {
  const where = `${llm.provider} at ${llm.endpoint}, model ${llm.model}`;
  if (!llm.reachable) return `LLM not reachable (${where}): ${llm.error}. Search works; Ask Code needs it.`;
  if (!llm.modelPresent) return `LLM ${where}: not among the endpoint's ${llm.models} models. Ask Code needs it.`;
  return `LLM ${where} ✓`;
}

/** The team database (index.backend = "postgres") as the server's read-only probe found it. */
export function teamLine(team: TeamHealth): string {
  const where = team.where || "(no DSN)";
  if (!team.reachable || team.error) return `Team database ${where} (DSN from $${team.dsnEnv}): ${team.error || "not reachable"}. Local search works.`;
  const vectors = team.modelDim ? `${team.modelDim}-dim vectors` : "no vectors of this model yet";
  return `Team database ${where}: schema ${team.schemaVersion}, ${vectors}, ${team.writable ? "read-write" : "read-only"} ✓`;
}

/** What works while the index warms up: the server's line saying which tiers answer and each
 * tier's count when it sends one; else dense search from the static tier once it is complete. */
function warmingNote(state: IndexState): string {
  if (state.tiersNote) return `Search ${state.tiersNote}.`;
  if (!staticComplete(state.folders)) return "Search works already; results improve as embeddings fill in.";
  const behind = state.folders.some((f) => f.tiers?.includes("minilm")) ? " MiniLM vectors fill in behind." : "";
  return `Dense search works already from the static tier.${behind}`;
}

/** Every folder builds the static tier and has a static vector for each of its chunks. */
function staticComplete(folders: FolderState[]): boolean {
  if (!folders.some((f) => f.chunks > 0)) return false;
  return folders.every((f) => (f.tiers?.includes("static") ?? false) && (f.staticEmbedded ?? 0) >= f.chunks);
}

function folderSummary(state: IndexState): string {
  const lines = state.folders.map(folderLine);
  return lines.length > 0 ? lines.join("\n") : `${state.files} files, ${state.embedded}/${state.chunks} chunks embedded`;
}

/** `root: ready, 120 files · static 1500/1500 ✓ · MiniLM 300/1500`; the old one-count form for a
 * server that does not report its tiers. */
function folderLine(f: FolderState): string {
  const head = `${f.root}: ${f.state}, ${f.files} files`;
  const tiers = tierSummary(f);
  const line = tiers ? `${head} · ${tiers}` : `${head}, ${f.embedded}/${f.chunks} chunks embedded`;
  const team = f.team ? teamState(f.team) : "";
  return team ? `${line}\n  ${team}` : line;
}

const NO_BASE: Record<string, string> = {
  unreachable: "database unreachable",
  unpublished: "nothing published near HEAD",
  unusable: "team index unusable",
};

/** A folder's team base (index.backend = "postgres"): `team base acme/shop@0123456789ab, 2 behind
 * HEAD, 3 files local`, or why there is none; empty with the local backend. */
export function teamState(t: TeamState): string {
  if (t.backend !== "postgres") return "";
  let line: string;
  if (t.base) {
    line = `team base ${t.base}, ${t.behind ?? 0} behind HEAD, ${t.overlayFiles ?? 0} files local`;
  } else {
    const why = NO_BASE[t.kind ?? ""] ?? t.kind ?? "none";
    const retry = t.retryIn !== undefined && t.retryIn !== null ? `, retrying in ${t.retryIn} s` : "";
    line = `no team base (${why}${retry}): indexed locally`;
  }
  if (t.queryError) line += ` · last team query failed: ${t.queryError}`;
  if (t.cache?.startsWith("unavailable")) line += " · team embedding cache unavailable";
  return line;
}

/** The tiers this client knows, fastest first: label and chunks done. */
const TIERS: { name: string; label: string; done: (f: FolderState) => number }[] = [
  { name: "static", label: "static", done: (f) => f.staticEmbedded ?? 0 },
  { name: "minilm", label: "MiniLM", done: (f) => f.embedded },
];

/** Each configured tier's vectors, fastest first: `static 1500/1500 ✓ · MiniLM 300/1500`
 * (✓: complete). Empty when the server does not report tiers; unknown tiers are left out. */
export function tierSummary(f: FolderState): string {
  const on = TIERS.filter((t) => f.tiers?.includes(t.name));
  return on.map((t) => tierCount(t.label, t.done(f), f.chunks)).join(" · ");
}

function tierCount(label: string, done: number, chunks: number): string {
  return `${label} ${done}/${chunks}${chunks > 0 && done >= chunks ? " ✓" : ""}`;
}

/** How often to ask codeask/health again (it probes the LLM endpoint, bounded by 2 s). */
export const HEALTH_INTERVAL_MS = 60000;

/** How often to poll codeask/indexStatus: fast while warming, slow when settled. */
export function pollInterval(state: IndexState | undefined): number {
  if (!state || state.state === "indexing" || state.state === "empty" || state.warming) return 1000;
  return 10000;
}

const KIND_ICONS: Record<string, string> = {
  function: "symbol-function",
  method: "symbol-method",
  class: "symbol-class",
  module: "symbol-module",
  section: "symbol-string",
  window: "symbol-file",
  commit: "git-commit",
  hunk: "diff",
};

export interface PickRow {
  label: string;
  description: string;
  detail: string;
  item: SearchItem;
}

/** A QuickPick row: kind icon + symbol, `path:line`, the preview's first meaningful line. */
export function searchRow(item: SearchItem, folders: string[]): PickRow {
  const icon = KIND_ICONS[item.kind] ?? "symbol-misc";
  const symbol = item.symbol || relativePath(item.uri, folders);
  return {
    label: `$(${icon}) ${symbol}`,
    description: locationLabel(item.uri, { start: item.range.start, end: item.range.start }, folders),
    detail: previewLine(item.preview),
    item,
  };
}

/** The first non-blank line of a preview, trimmed and shortened for a one-line list. */
export function previewLine(preview: string, max = 120): string {
  const line = preview.split("\n").map((l) => l.trim()).find((l) => l.length > 0) ?? "";
  return line.length > max ? line.slice(0, max - 1) + "…" : line;
}

export interface Location {
  uri: string;
  range?: Range;
}

/**
 * The location behind a link in an answer or hover: `file:///abs/path#L12` or `#L12-L20`
 * (1-based, as the server writes them) → a file URI and a 0-based range.
 */
export function parseLocationHref(href: string): Location | undefined {
  if (!href.startsWith("file://")) return undefined;
  const hash = href.indexOf("#");
  const uri = hash >= 0 ? href.slice(0, hash) : href;
  const fragment = hash >= 0 ? href.slice(hash + 1) : "";
  const m = /^L(\d+)(?:,(\d+))?(?:-L?(\d+))?$/.exec(fragment);
  if (!m) return { uri };
  const start = Math.max(0, Number(m[1]) - 1);
  const character = m[2] ? Math.max(0, Number(m[2]) - 1) : 0;
  const end = m[3] ? Math.max(start, Number(m[3]) - 1) : start;
  return { uri, range: { start: { line: start, character }, end: { line: end, character: 0 } } };
}

/** The href written for a source link (the same form the server's hover uses). */
export function locationHref(uri: string, range: Range | undefined): string {
  if (!range) return uri;
  return `${uri}#L${range.start.line + 1}`;
}
