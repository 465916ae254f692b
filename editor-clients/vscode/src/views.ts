/**
 * What the user sees: the answer panel (a webview) and the index status bar item. Both talk
 * to VS Code only through `Host`, so they run under unit tests with fakes.
 */

import type MarkdownIt from "markdown-it";
import {
  type AnswerModel,
  answerShell,
  applyCancel,
  applyDelta,
  applyFailure,
  applyResult,
  createMarkdown,
  newAnswer,
  renderAnswerBody,
} from "./core/answer";
import { type Timers, realTimers } from "./core/debounce";
import { type ClientPhase, HEALTH_INTERVAL_MS, parseLocationHref, pollInterval, statusView } from "./core/format";
import type { AskCodeResult, HealthResult, IndexState, LlmHealth, TeamHealth } from "./core/protocol";
import type { Disposable, Host, PanelMessage, PanelPort, StatusBarPort } from "./ports";

/** Updates for one question's answer. */
export interface AnswerHandle {
  delta(text: string): void;
  finish(result: AskCodeResult): void;
  cancelled(): void;
  failed(message: string): void;
}

/** The "codeask: Answer" panel: one at a time, reused for the next question. */
export class AnswerView implements Disposable {
  private panel: PanelPort | undefined;
  private model: AnswerModel | undefined;
  private readonly md: MarkdownIt = createMarkdown();
  private renderHandle: unknown;
  private onCancel: (() => void) | undefined;

  constructor(
    private readonly host: Host,
    private readonly timers: Timers = realTimers,
    private readonly throttleMs = 50,
  ) {}

  /**
   * Open (or reuse) the panel for a new question; `onCancel` runs when the user cancels. The
   * returned handle updates this question only: once a newer question took the panel, late
   * events of the older one (its cancellation, a straggling delta) are ignored.
   */
  start(question: string, context: string | undefined, onCancel: () => void): AnswerHandle {
    const model = newAnswer(question, context);
    this.model = model;
    this.onCancel = onCancel;
    if (!this.panel || this.panel.disposed) this.panel = this.createPanel();
    else this.panel.reveal();
    this.renderNow();
    const live = (): boolean => this.model === model;
    const settle = (apply: () => void): void => {
      if (!live()) return;
      apply();
      this.onCancel = undefined;
      this.renderNow();
    };
    return {
      delta: (text) => {
        if (!live()) return;
        applyDelta(model, text);
        this.scheduleRender();
      },
      finish: (result) => settle(() => applyResult(model, result, this.host.folders())),
      cancelled: () => settle(() => applyCancel(model)),
      failed: (message) => settle(() => applyFailure(model, message)),
    };
  }

  /** The current model (for tests and for the cancel command's enablement). */
  get current(): AnswerModel | undefined {
    return this.model;
  }

  dispose(): void {
    this.cancelRender();
    this.panel?.dispose();
  }

  private createPanel(): PanelPort {
    const panel = this.host.createPanel("codeask: Answer");
    panel.setHtml(answerShell(this.host.nonce(), panel.cspSource));
    panel.onMessage((msg) => void this.handle(msg));
    panel.onDidDispose(() => {
      this.cancelRender();
      // Closing the panel while an answer streams stops the generation too.
      this.onCancel?.();
      this.panel = undefined;
    });
    return panel;
  }

  private async handle(msg: PanelMessage): Promise<void> {
    if (msg.type === "ready") this.renderNow();
    else if (msg.type === "cancel") this.onCancel?.();
    else if (msg.type === "open") await this.open(msg.href);
  }

  private async open(href: string): Promise<void> {
    const location = parseLocationHref(href);
    if (location) await this.host.openLocation(location.uri, location.range);
    else if (/^https?:/i.test(href)) await this.host.openExternal(href);
  }

  private scheduleRender(): void {
    if (this.renderHandle !== undefined) return;
    this.renderHandle = this.timers.set(() => {
      this.renderHandle = undefined;
      this.renderNow();
    }, this.throttleMs);
  }

  private cancelRender(): void {
    if (this.renderHandle !== undefined) this.timers.clear(this.renderHandle);
    this.renderHandle = undefined;
  }

  private renderNow(): void {
    this.cancelRender();
    if (!this.panel || this.panel.disposed || !this.model) return;
    this.panel.post({ type: "render", html: renderAnswerBody(this.model, this.md) });
  }
}

/** The status bar item: client phase + index state, polled from codeask/indexStatus, and the
 * LLM endpoint from codeask/health (asked at start, after a settings change, then every minute). */
export class IndexStatusBar implements Disposable {
  private readonly item: StatusBarPort;
  private phase: ClientPhase = "starting";
  private state: IndexState | undefined;
  private llm: LlmHealth | undefined;
  private team: TeamHealth | undefined;
  private detail = "";
  private pollHandle: unknown;
  private healthHandle: unknown;
  private disposed = false;

  constructor(
    host: Host,
    private readonly fetch: () => Promise<IndexState> | undefined,
    private readonly timers: Timers = realTimers,
    private readonly fetchHealth: () => Promise<HealthResult> | undefined = () => undefined,
  ) {
    this.item = host.createStatusBar("codeask.showLogs");
    this.render();
  }

  setPhase(phase: ClientPhase, detail = ""): void {
    this.phase = phase;
    this.detail = detail;
    if (phase !== "running") {
      this.state = undefined;
      this.llm = undefined;
      this.team = undefined;
    }
    this.render();
    if (phase === "running") {
      this.poll(0);
      this.refreshHealth(0);
    } else {
      this.stopPolling();
      this.stopHealth();
    }
  }

  /** Ask codeask/health after `delay` ms (settings changed: the server applies them first). */
  refreshHealth(delay = 1000): void {
    this.stopHealth();
    if (this.disposed || this.phase !== "running") return;
    this.healthHandle = this.timers.set(() => void this.healthTick(), delay);
  }

  get llmHealth(): LlmHealth | undefined {
    return this.llm;
  }

  /** Any result carrying an indexState (search, ask) refreshes the item at once. */
  update(state: IndexState): void {
    this.state = state;
    this.render();
  }

  get indexState(): IndexState | undefined {
    return this.state;
  }

  dispose(): void {
    this.disposed = true;
    this.stopPolling();
    this.stopHealth();
    this.item.dispose();
  }

  private poll(delay: number): void {
    this.stopPolling();
    if (this.disposed) return;
    this.pollHandle = this.timers.set(() => void this.tick(), delay);
  }

  private async tick(): Promise<void> {
    this.pollHandle = undefined;
    try {
      const pending = this.fetch();
      if (pending) this.update(await pending);
    } catch {
      // The server may be restarting; the next tick tries again.
    }
    if (this.phase === "running") this.poll(pollInterval(this.state));
  }

  private async healthTick(): Promise<void> {
    this.healthHandle = undefined;
    try {
      const pending = this.fetchHealth();
      if (pending) {
        const health = await pending;
        if (this.phase === "running") {
          this.llm = health.llm;
          this.team = health.team;
          this.update(health.indexState);
        }
      }
    } catch {
      // An older server without codeask/health, or a restart: keep the last answer.
    }
    if (this.phase === "running" && this.healthHandle === undefined) this.refreshHealth(HEALTH_INTERVAL_MS);
  }

  private stopPolling(): void {
    if (this.pollHandle !== undefined) this.timers.clear(this.pollHandle);
    this.pollHandle = undefined;
  }

  private stopHealth(): void {
    if (this.healthHandle !== undefined) this.timers.clear(this.healthHandle);
    this.healthHandle = undefined;
  }

  private render(): void {
    const view = statusView(this.phase, this.state, this.detail, this.llm, this.team);
    this.item.update(view.text, view.tooltip, view.severity);
  }
}
