/**
 * What commands and views need from VS Code and from the language client, as plain
 * interfaces. `host.ts` implements `Host` with the vscode API (the only module that calls it);
 * `client.ts` implements `Server`; unit tests implement both with fakes.
 */

import type {
  AskCodeParams,
  AskCodeResult,
  HealthResult,
  IndexState,
  Range,
  SemanticSearchParams,
  SemanticSearchResult,
} from "./core/protocol";

export interface Disposable {
  dispose(): void;
}

/** An opaque cancellation token (a vscode.CancellationToken at run time). */
export type CancelToken = unknown;

export interface CancelSource extends Disposable {
  readonly token: CancelToken;
  cancel(): void;
}

export interface EditorContext {
  uri: string;
  /** The selection, when it is not empty. */
  selection?: Range;
}

export interface PickItem<T> {
  label: string;
  description?: string;
  detail?: string;
  data?: T;
}

export interface QuickPickPort<T> extends Disposable {
  value: string;
  title: string | undefined;
  placeholder: string;
  busy: boolean;
  /** Stay open when the focus moves elsewhere (Escape still closes it). */
  ignoreFocusOut: boolean;
  items: PickItem<T>[];
  /** The highlighted item when the user pressed Enter. */
  readonly active: PickItem<T> | undefined;
  onDidChangeValue(fn: (value: string) => void): void;
  onDidAccept(fn: () => void): void;
  onDidHide(fn: () => void): void;
  show(): void;
  hide(): void;
}

export type PanelMessage = { type: "ready" } | { type: "cancel" } | { type: "open"; href: string };

export interface PanelPort extends Disposable {
  readonly cspSource: string;
  readonly disposed: boolean;
  setHtml(html: string): void;
  post(message: unknown): void;
  reveal(): void;
  onMessage(fn: (message: PanelMessage) => void): void;
  onDidDispose(fn: () => void): void;
}

export interface StatusBarPort extends Disposable {
  update(text: string, tooltip: string, severity: "normal" | "warning" | "error"): void;
}

export interface LogPort {
  appendLine(line: string): void;
  show(): void;
}

export interface Host {
  readonly log: LogPort;
  /** Workspace folder URIs (as strings). */
  folders(): string[];
  activeEditor(): EditorContext | undefined;
  /** The value the user set for `codeask.<key>` (undefined when unset). */
  explicitSetting(key: string, scopeUri?: string): unknown;
  /** The effective value of `codeask.<key>` (declared default when unset). */
  setting<T>(key: string, scopeUri?: string): T | undefined;
  /** VS Code's workspace trust (restricted mode: false). */
  workspaceTrusted(): boolean;
  /** The user granted trust to the workspace (it is never revoked without a reload). */
  onTrustGranted(fn: () => void): Disposable;
  askInput(prompt: string, placeholder: string): Promise<string | undefined>;
  showError(message: string, ...actions: string[]): Promise<string | undefined>;
  showWarning(message: string): void;
  openLocation(uri: string, range?: Range): Promise<void>;
  openExternal(uri: string): Promise<void>;
  openSettings(query: string): Promise<void>;
  createQuickPick<T>(): QuickPickPort<T>;
  createPanel(title: string): PanelPort;
  createStatusBar(command: string): StatusBarPort;
  createCancelSource(): CancelSource;
  isCancellation(error: unknown): boolean;
  setContext(key: string, value: unknown): void;
  nonce(): string;
  now(): number;
}

/** The running language server, as the commands see it. */
export interface Server {
  readonly ready: boolean;
  /** Being found, installed or started: `whenReady` will settle. */
  readonly starting: boolean;
  /** Settles when the current start ends: true when the server then runs. */
  whenReady(): Promise<boolean>;
  search(params: SemanticSearchParams, token: CancelToken): Promise<SemanticSearchResult>;
  ask(params: AskCodeParams, token: CancelToken): Promise<AskCodeResult>;
  indexStatus(): Promise<IndexState>;
  /** codeask/health: versions, the LLM endpoint as the server probed it, tiers, index. */
  health(): Promise<HealthResult>;
  onAnswerDelta(fn: (streamToken: string | number, delta: string) => void): Disposable;
}
