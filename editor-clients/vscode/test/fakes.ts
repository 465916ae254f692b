/** Fakes for the ports: a manual clock, a recording host, a scripted server. */

import type { Timers } from "../src/core/debounce";
import type {
  AskCodeParams,
  AskCodeResult,
  HealthResult,
  IndexState,
  LlmHealth,
  Range,
  SemanticSearchParams,
  SemanticSearchResult,
} from "../src/core/protocol";
import type {
  CancelSource,
  CancelToken,
  Disposable,
  EditorContext,
  Host,
  PanelMessage,
  PanelPort,
  PickItem,
  QuickPickPort,
  Server,
  StatusBarPort,
} from "../src/ports";

export class ManualClock implements Timers {
  now = 0;
  private next = 1;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  set(fn: () => void, ms: number): unknown {
    const id = this.next++;
    this.pending.set(id, { at: this.now + ms, fn });
    return id;
  }

  clear(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  /** Move time forward, running due timers in order. */
  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const due = [...this.pending.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.pending.delete(due[0]);
      this.now = due[1].at;
      due[1].fn();
    }
    this.now = until;
  }

  get size(): number {
    return this.pending.size;
  }
}

export class FakeToken {
  cancelled = false;
}

export class FakePanel implements PanelPort {
  readonly cspSource = "vscode-webview://fake";
  disposed = false;
  html = "";
  posts: unknown[] = [];
  reveals = 0;
  private messageFns: ((m: PanelMessage) => void)[] = [];
  private disposeFns: (() => void)[] = [];

  setHtml(html: string): void {
    this.html = html;
  }
  post(message: unknown): void {
    this.posts.push(message);
  }
  reveal(): void {
    this.reveals++;
  }
  onMessage(fn: (message: PanelMessage) => void): void {
    this.messageFns.push(fn);
  }
  onDidDispose(fn: () => void): void {
    this.disposeFns.push(fn);
  }
  dispose(): void {
    this.disposed = true;
    for (const fn of this.disposeFns) fn();
  }
  /** Simulate the webview sending a message. */
  send(message: PanelMessage): void {
    for (const fn of this.messageFns) fn(message);
  }
  lastHtml(): string {
    const last = this.posts[this.posts.length - 1] as { html: string } | undefined;
    return last?.html ?? "";
  }
}

export class FakeQuickPick<T> implements QuickPickPort<T> {
  value = "";
  title: string | undefined;
  placeholder = "";
  busy = false;
  ignoreFocusOut = false;
  items: PickItem<T>[] = [];
  activeIndex = 0;
  shown = false;
  disposed = false;
  private changeFns: ((v: string) => void)[] = [];
  private acceptFns: (() => void)[] = [];
  private hideFns: (() => void)[] = [];

  get active(): PickItem<T> | undefined {
    return this.items[this.activeIndex];
  }
  onDidChangeValue(fn: (value: string) => void): void {
    this.changeFns.push(fn);
  }
  onDidAccept(fn: () => void): void {
    this.acceptFns.push(fn);
  }
  onDidHide(fn: () => void): void {
    this.hideFns.push(fn);
  }
  show(): void {
    this.shown = true;
  }
  hide(): void {
    this.shown = false;
    for (const fn of this.hideFns) fn();
  }
  dispose(): void {
    this.disposed = true;
  }
  type(value: string): void {
    this.value = value;
    for (const fn of this.changeFns) fn(value);
  }
  accept(): void {
    for (const fn of this.acceptFns) fn();
  }
}

export class FakeHost implements Host {
  logs: string[] = [];
  logShown = 0;
  readonly log = { appendLine: (l: string) => void this.logs.push(l), show: () => void this.logShown++ };
  folderUris = ["file:///ws"];
  editor: EditorContext | undefined;
  explicit: Record<string, unknown> = {};
  inputAnswer: string | undefined = "How are discounts computed?";
  inputPrompts: string[] = [];
  errors: string[] = [];
  errorChoice: string | undefined;
  opened: { uri: string; range?: Range }[] = [];
  external: string[] = [];
  panels: FakePanel[] = [];
  picks: FakeQuickPick<unknown>[] = [];
  status: { text: string; tooltip: string; severity: string }[] = [];
  cancelSources: (CancelSource & { token: FakeToken })[] = [];
  context: Record<string, unknown> = {};

  folders(): string[] {
    return this.folderUris;
  }
  activeEditor(): EditorContext | undefined {
    return this.editor;
  }
  explicitSetting(key: string): unknown {
    return this.explicit[key];
  }
  setting<T>(key: string): T | undefined {
    return this.explicit[key] as T | undefined;
  }
  trusted = false;
  trustListeners: (() => void)[] = [];
  workspaceTrusted(): boolean {
    return this.trusted;
  }
  onTrustGranted(fn: () => void): Disposable {
    this.trustListeners.push(fn);
    return { dispose: () => (this.trustListeners = this.trustListeners.filter((f) => f !== fn)) };
  }
  async askInput(prompt: string): Promise<string | undefined> {
    this.inputPrompts.push(prompt);
    return this.inputAnswer;
  }
  async showError(message: string): Promise<string | undefined> {
    this.errors.push(message);
    return this.errorChoice;
  }
  showWarning(message: string): void {
    this.errors.push(message);
  }
  async openLocation(uri: string, range?: Range): Promise<void> {
    this.opened.push({ uri, range });
  }
  async openExternal(uri: string): Promise<void> {
    this.external.push(uri);
  }
  async openSettings(): Promise<void> {}
  createQuickPick<T>(): QuickPickPort<T> {
    const pick = new FakeQuickPick<T>();
    this.picks.push(pick as FakeQuickPick<unknown>);
    return pick;
  }
  createPanel(): PanelPort {
    const panel = new FakePanel();
    this.panels.push(panel);
    return panel;
  }
  createStatusBar(): StatusBarPort {
    return {
      update: (text, tooltip, severity) => void this.status.push({ text, tooltip, severity }),
      dispose: () => undefined,
    };
  }
  createCancelSource(): CancelSource & { token: FakeToken } {
    const token = new FakeToken();
    const source = { token, cancel: () => void (token.cancelled = true), dispose: () => undefined };
    this.cancelSources.push(source);
    return source;
  }
  isCancellation(error: unknown): boolean {
    return (error as { code?: number })?.code === -32800;
  }
  setContext(key: string, value: unknown): void {
    this.context[key] = value;
  }
  nonce(): string {
    return "NONCE";
  }
  now(): number {
    return 42;
  }
  lastStatus(): string {
    return this.status[this.status.length - 1]?.text ?? "";
  }
}

export function indexState(over: Partial<IndexState> = {}): IndexState {
  return { state: "ready", warming: false, percent: 100, files: 3, chunks: 9, embedded: 9, folders: [], ...over };
}

interface Pending<T> {
  params: unknown;
  token: FakeToken;
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** A server whose requests stay pending until the test resolves them. */
export class FakeServer implements Server {
  ready = true;
  starting = false;
  private readyWaiters: ((up: boolean) => void)[] = [];
  whenReady(): Promise<boolean> {
    if (!this.starting) return Promise.resolve(this.ready);
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }
  /** The start in progress ends: running (`up`) or failed. */
  finishStart(up: boolean): void {
    this.starting = false;
    this.ready = up;
    for (const fn of this.readyWaiters.splice(0)) fn(up);
  }
  searches: Pending<SemanticSearchResult>[] = [];
  asks: Pending<AskCodeResult>[] = [];
  statusCalls = 0;
  healthCalls = 0;
  state: IndexState = indexState();
  llm: LlmHealth = llmHealth();
  private deltaFns = new Set<(token: string | number, delta: string) => void>();

  search(params: SemanticSearchParams, token: CancelToken): Promise<SemanticSearchResult> {
    return new Promise((resolve, reject) => this.searches.push({ params, token: token as FakeToken, resolve, reject }));
  }
  ask(params: AskCodeParams, token: CancelToken): Promise<AskCodeResult> {
    return new Promise((resolve, reject) => this.asks.push({ params, token: token as FakeToken, resolve, reject }));
  }
  async indexStatus(): Promise<IndexState> {
    this.statusCalls++;
    return this.state;
  }
  async health(): Promise<HealthResult> {
    this.healthCalls++;
    return {
      version: "0.1.0",
      python: "3.11.9 (CPython)",
      llm: this.llm,
      embedding: { model: "codeask/all-MiniLM-L6-v2-int8", tiers: [] },
      indexState: this.state,
    };
  }
  onAnswerDelta(fn: (token: string | number, delta: string) => void): Disposable {
    this.deltaFns.add(fn);
    return { dispose: () => this.deltaFns.delete(fn) };
  }
  emitDelta(token: string | number, delta: string): void {
    for (const fn of this.deltaFns) fn(token, delta);
  }
  get listeners(): number {
    return this.deltaFns.size;
  }
}

/** An LLM endpoint as codeask/health reports it: reachable, with the model, unless overridden. */
export function llmHealth(over: Partial<LlmHealth> = {}): LlmHealth {
  return {
    provider: "ollama",
    endpoint: "http://127.0.0.1:11434",
    modelsUrl: "http://127.0.0.1:11434/api/tags",
    model: "qwen2.5-coder:7b",
    reachable: true,
    modelPresent: true,
    models: 3,
    loopback: true,
    error: "",
    ...over,
  };
}

/** Let pending promise callbacks run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}
