/**
 * The user-facing commands: Ask Code (streamed into the answer panel, cancellable) and
 * Semantic Search (a QuickPick that queries as you type). Thin: the server does the ranking
 * and the prompting; this module only moves params and results.
 */

import { Debouncer, type Timers, realTimers } from "./core/debounce";
import { locationLabel, searchRow } from "./core/format";
import type { AskCodeParams, IndexState, SearchItem, SemanticSearchResult } from "./core/protocol";
import type { CancelSource, EditorContext, Host, PickItem, Server } from "./ports";
import type { AnswerView, IndexStatusBar } from "./views";

export const SEARCH_DEBOUNCE_MS = 250;
export const SEARCH_K = 20;
/** While the index is still being built, the open pick asks again this often. */
export const SEARCH_REFRESH_MS = 2000;

const SEARCH_TITLE = "codeask: Semantic Search";
const WAITING_TITLE = "codeask: Semantic Search (waiting for the server to start…)";
const NOT_RUNNING_TITLE = "codeask: the language server is not running (codeask: Show Logs)";

/** askCode params: the question plus the current file and, when non-empty, the selection. */
export function askParams(question: string, editor: EditorContext | undefined, streamToken: string): AskCodeParams {
  const params: AskCodeParams = { question, streamToken };
  if (editor) {
    params.uri = editor.uri;
    if (editor.selection) params.range = editor.selection;
  }
  return params;
}

/** A human label for what the question is about, e.g. `app.py:3-9`. */
export function contextLabel(editor: EditorContext | undefined, folders: string[]): string | undefined {
  if (!editor) return undefined;
  return locationLabel(editor.uri, editor.selection, folders);
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error && typeof error === "object" && "message" in error) return String((error as { message: unknown }).message);
  return String(error);
}

export class Commands {
  private asks = 0;
  private currentAsk: CancelSource | undefined;

  constructor(
    private readonly host: Host,
    private readonly server: () => Server | undefined,
    private readonly answers: AnswerView,
    private readonly status: IndexStatusBar,
    private readonly timers: Timers = realTimers,
  ) {}

  /** "codeask: Ask Code": ask, stream the answer into the panel, show the sources. */
  async askCode(): Promise<void> {
    const server = await this.requireServer();
    if (!server) return;
    const editor = this.host.activeEditor();
    const context = contextLabel(editor, this.host.folders());
    const prompt = context ? `Ask about your code (with ${context})` : "Ask about your code";
    const question = (await this.host.askInput(prompt, "e.g. Where is the retry policy configured?"))?.trim();
    if (!question) return;

    this.currentAsk?.cancel();
    const cancel = this.host.createCancelSource();
    this.currentAsk = cancel;
    const streamToken = `ask-${++this.asks}-${this.host.now()}`;
    let userCancelled = false;
    const answer = this.answers.start(question, context, () => {
      userCancelled = true;
      cancel.cancel();
    });
    const stream = server.onAnswerDelta((token, delta) => {
      if (token === streamToken) answer.delta(delta);
    });
    this.host.setContext("codeask.answering", true);
    try {
      const result = await server.ask(askParams(question, editor, streamToken), cancel.token);
      answer.finish(result);
      this.status.update(result.indexState);
    } catch (error) {
      if (userCancelled || this.host.isCancellation(error)) answer.cancelled();
      else answer.failed(errorMessage(error));
    } finally {
      stream.dispose();
      cancel.dispose();
      if (this.currentAsk === cancel) {
        this.currentAsk = undefined;
        this.host.setContext("codeask.answering", false);
      }
    }
  }

  /** "codeask: Cancel Answer": stop the generation in progress. */
  cancelAsk(): void {
    this.currentAsk?.cancel();
  }

  /**
   * "codeask: Semantic Search": a QuickPick that queries as you type and opens the pick. It
   * opens while the server is still starting (and searches once it runs), stays open when the
   * focus moves (VS Code hands the focus back to the answer webview after the palette closes,
   * sometimes only once the pick is up), and asks again while the index is being built, so
   * results appear in the open pick instead of a stale "No results".
   */
  async semanticSearch(): Promise<void> {
    const current = this.server();
    const server = current && !current.ready && current.starting ? current : await this.requireServer();
    if (!server) return;
    const pick = this.host.createQuickPick<SearchItem>();
    pick.title = SEARCH_TITLE;
    pick.placeholder = "Describe the code you are looking for (e.g. parse the config file)";
    pick.ignoreFocusOut = true;
    const debouncer = new Debouncer(SEARCH_DEBOUNCE_MS, this.timers);
    let generation = 0;
    let inflight: CancelSource | undefined;
    let refresh: unknown;
    let closed = false;
    const stopRefresh = (): void => {
      if (refresh !== undefined) this.timers.clear(refresh);
      refresh = undefined;
    };

    /** Waits for a starting server, saying so in the title; false when it did not come up. */
    const serverUp = async (): Promise<boolean> => {
      if (server.ready) return true;
      pick.title = WAITING_TITLE;
      pick.busy = true;
      const up = await server.whenReady();
      if (closed) return false;
      pick.busy = false;
      pick.title = up ? SEARCH_TITLE : NOT_RUNNING_TITLE;
      return up;
    };

    const run = async (query: string): Promise<void> => {
      const mine = ++generation;
      inflight?.cancel();
      inflight = undefined;
      stopRefresh();
      if (!query.trim()) {
        pick.items = [];
        pick.busy = false;
        return;
      }
      // No await when the server runs: the request leaves in the same tick as the debounce.
      if (!server.ready && (!(await serverUp()) || mine !== generation)) return;
      const cancel = this.host.createCancelSource();
      inflight = cancel;
      pick.busy = true;
      try {
        const result = await server.search({ query, k: SEARCH_K }, cancel.token);
        if (mine !== generation) return;
        this.status.update(result.indexState);
        pick.items = this.rows(result.results);
        pick.title = searchTitle(result.indexState);
        if (searchAgainLater(result)) refresh = this.timers.set(() => void run(query), SEARCH_REFRESH_MS);
      } catch (error) {
        if (mine !== generation || this.host.isCancellation(error)) return;
        pick.items = [];
        pick.title = `codeask: search failed: ${errorMessage(error)}`;
      } finally {
        if (mine === generation) pick.busy = false;
        cancel.dispose();
      }
    };

    pick.onDidChangeValue((value) => debouncer.schedule(() => void run(value)));
    pick.onDidAccept(() => {
      const item = pick.active?.data;
      if (!item) return;
      pick.hide();
      void this.host.openLocation(item.uri, item.range);
    });
    pick.onDidHide(() => {
      closed = true;
      debouncer.cancel();
      inflight?.cancel();
      stopRefresh();
      generation++;
      pick.dispose();
    });
    pick.show();
    if (!server.ready) void serverUp();
  }

  private rows(results: SearchItem[]): PickItem<SearchItem>[] {
    if (results.length === 0) return [{ label: "No results", detail: "Try other words, or wait for the index to finish." }];
    const folders = this.host.folders();
    return results.map((r) => {
      const row = searchRow(r, folders);
      return { label: row.label, description: row.description, detail: row.detail, data: r };
    });
  }

  private async requireServer(): Promise<Server | undefined> {
    const server = this.server();
    if (server?.ready) return server;
    const choice = await this.host.showError(
      "codeask: the language server is not running.",
      "Show Logs",
      "Restart Server",
    );
    if (choice === "Show Logs") this.host.log.show();
    if (choice === "Restart Server") await this.onRestartRequested?.();
    return undefined;
  }

  /** Set by extension.ts: what "Restart Server" in an error message does. */
  onRestartRequested: (() => Promise<void>) | undefined;
}

/**
 * Whether the open pick should ask again: the index is still loading or in its first pass (the
 * answer may change), or nothing matched while vectors are still being filled in. Not for a
 * merely warming index with results: the MiniLM tier can take many minutes to fill.
 */
export function searchAgainLater(result: SemanticSearchResult): boolean {
  const state = result.indexState;
  if (state.state === "indexing" || state.state === "empty") return true;
  return state.state === "ready" && state.warming && result.results.length === 0;
}

/** The QuickPick title tells when results come from a partial index. */
export function searchTitle(state: IndexState): string {
  if (state.state === "ready" && !state.warming) return SEARCH_TITLE;
  return `codeask: Semantic Search (index warming up ${Math.round(state.percent)}%: results may be incomplete)`;
}
