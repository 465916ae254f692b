/**
 * The one module that calls the vscode API (DESIGN §3.6): everything else sees `Host`.
 * Keep it a thin translation layer with no decisions in it.
 */

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import type { McpServerSpec } from "./core/mcp";
import { explicitValue } from "./core/settings";
import type { Range } from "./core/protocol";
import type {
  CancelSource,
  Disposable,
  EditorContext,
  Host,
  LogPort,
  PanelMessage,
  PanelPort,
  PickItem,
  QuickPickPort,
  StatusBarPort,
} from "./ports";

const SECTION = "codeask";
/** LSP's RequestCancelled error code. */
const REQUEST_CANCELLED = -32800;

function toRange(r: Range): vscode.Range {
  return new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character);
}

function fromRange(r: vscode.Range): Range {
  return {
    start: { line: r.start.line, character: r.start.character },
    end: { line: r.end.line, character: r.end.character },
  };
}

export class VsCodeHost implements Host, Disposable {
  readonly channel: vscode.OutputChannel;
  readonly log: LogPort;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor() {
    this.channel = vscode.window.createOutputChannel("codeask");
    this.log = { appendLine: (l) => this.channel.appendLine(l), show: () => this.channel.show(true) };
  }

  folders(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.toString());
  }

  activeEditor(): EditorContext | undefined {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.uri.scheme !== "file") return undefined;
    const selection = editor.selection.isEmpty ? undefined : fromRange(editor.selection);
    return { uri: editor.document.uri.toString(), selection };
  }

  explicitSetting(key: string, scopeUri?: string): unknown {
    const scope = scopeUri ? vscode.Uri.parse(scopeUri) : undefined;
    const inspected = vscode.workspace.getConfiguration(SECTION, scope).inspect(key);
    return explicitValue(key, inspected, vscode.workspace.isTrusted);
  }

  workspaceTrusted(): boolean {
    return vscode.workspace.isTrusted;
  }

  onTrustGranted(fn: () => void): Disposable {
    return vscode.workspace.onDidGrantWorkspaceTrust(fn);
  }

  setting<T>(key: string, scopeUri?: string): T | undefined {
    const scope = scopeUri ? vscode.Uri.parse(scopeUri) : undefined;
    return vscode.workspace.getConfiguration(SECTION, scope).get<T>(key);
  }

  onConfigChange(fn: (affects: (key: string) => boolean) => void): Disposable {
    return vscode.workspace.onDidChangeConfiguration((e) =>
      fn((key) => e.affectsConfiguration(key ? `${SECTION}.${key}` : SECTION)),
    );
  }

  askInput(prompt: string, placeholder: string): Promise<string | undefined> {
    return Promise.resolve(vscode.window.showInputBox({ prompt, placeHolder: placeholder, ignoreFocusOut: true }));
  }

  showError(message: string, ...actions: string[]): Promise<string | undefined> {
    return Promise.resolve(vscode.window.showErrorMessage(message, ...actions));
  }

  showWarning(message: string): void {
    void vscode.window.showWarningMessage(message);
  }

  showInfo(message: string, ...actions: string[]): Promise<string | undefined> {
    return Promise.resolve(vscode.window.showInformationMessage(message, ...actions));
  }

  /** A cancellable progress notification; `report` replaces its message. */
  withProgress<T>(title: string, task: (report: (message: string) => void, signal: AbortSignal) => Promise<T>): Promise<T> {
    return Promise.resolve(
      vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title, cancellable: true },
        (progress, token) => {
          const abort = new AbortController();
          token.onCancellationRequested(() => abort.abort());
          return task((message) => progress.report({ message }), abort.signal);
        },
      ),
    );
  }

  async openLocation(uri: string, range?: Range): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri));
    const selection = range ? toRange({ start: range.start, end: range.start }) : undefined;
    const editor = await vscode.window.showTextDocument(doc, {
      viewColumn: vscode.ViewColumn.One,
      selection,
      preview: false,
    });
    if (range) editor.revealRange(toRange(range), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  async openExternal(uri: string): Promise<void> {
    await vscode.env.openExternal(vscode.Uri.parse(uri));
  }

  async openSettings(query: string): Promise<void> {
    await vscode.commands.executeCommand("workbench.action.openSettings", query);
  }

  createQuickPick<T>(): QuickPickPort<T> {
    return new QuickPickAdapter<T>(vscode.window.createQuickPick<DataItem<T>>());
  }

  createPanel(title: string): PanelPort {
    const panel = vscode.window.createWebviewPanel(
      "codeask.answer",
      title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [] },
    );
    return new PanelAdapter(panel);
  }

  createStatusBar(command: string): StatusBarPort {
    const item = vscode.window.createStatusBarItem("codeask.status", vscode.StatusBarAlignment.Left, 10);
    item.name = "codeask";
    item.command = command;
    item.show();
    return {
      update(text, tooltip, severity) {
        item.text = text;
        item.tooltip = tooltip;
        item.backgroundColor =
          severity === "normal" ? undefined : new vscode.ThemeColor(`statusBarItem.${severity}Background`);
      },
      dispose: () => item.dispose(),
    };
  }

  createCancelSource(): CancelSource {
    const source = new vscode.CancellationTokenSource();
    return { token: source.token, cancel: () => source.cancel(), dispose: () => source.dispose() };
  }

  isCancellation(error: unknown): boolean {
    if (error instanceof vscode.CancellationError) return true;
    const code = (error as { code?: unknown } | undefined)?.code;
    return code === REQUEST_CANCELLED;
  }

  setContext(key: string, value: unknown): void {
    void vscode.commands.executeCommand("setContext", key, value);
  }

  nonce(): string {
    return randomBytes(16).toString("base64url");
  }

  now(): number {
    return Date.now();
  }

  registerCommand(id: string, fn: (...args: unknown[]) => unknown): Disposable {
    const d = vscode.commands.registerCommand(id, fn);
    this.subscriptions.push(d);
    return d;
  }

  /** Watches every file so saves, creates and deletes outside the editor reach the index. */
  fileWatcher(): vscode.FileSystemWatcher {
    const watcher = vscode.workspace.createFileSystemWatcher("**/*");
    this.subscriptions.push(watcher);
    return watcher;
  }

  /**
   * Offers codeask's MCP server to agent mode (vscode.lm.registerMcpServerDefinitionProvider,
   * VS Code 1.101+). Undefined when this VS Code has no such API; `changed` makes VS Code ask
   * `provide` again (another server was resolved, trust was granted).
   */
  registerMcpProvider(id: string, provide: () => Promise<McpServerSpec[]>): { changed(): void; dispose(): void } | undefined {
    const api = vscode as unknown as McpApi;
    if (typeof api.lm?.registerMcpServerDefinitionProvider !== "function" || !api.McpStdioServerDefinition) return undefined;
    const Definition = api.McpStdioServerDefinition;
    const emitter = new vscode.EventEmitter<void>();
    const registration = api.lm.registerMcpServerDefinitionProvider(id, {
      onDidChangeMcpServerDefinitions: emitter.event,
      provideMcpServerDefinitions: async () =>
        (await provide()).map((spec) => {
          const definition = new Definition(spec.label, spec.command, spec.args, spec.env, spec.version);
          definition.cwd = vscode.Uri.file(spec.cwd);
          return definition;
        }),
    });
    this.subscriptions.push(registration, emitter);
    return { changed: () => emitter.fire(), dispose: () => (registration.dispose(), emitter.dispose()) };
  }

  /** The Python extension's selected interpreter, if that extension is installed. */
  async pythonExtensionInterpreter(scopeUri?: string): Promise<string | undefined> {
    const ext = vscode.extensions.getExtension<PythonApi>("ms-python.python");
    if (!ext) return undefined;
    const resource = scopeUri ? vscode.Uri.parse(scopeUri) : undefined;
    try {
      const api = ext.isActive ? ext.exports : await withTimeout(Promise.resolve(ext.activate()), 15000);
      const envs = api?.environments;
      const active = envs?.getActiveEnvironmentPath?.(resource);
      if (active && envs?.resolveEnvironment) {
        const resolved = await withTimeout(Promise.resolve(envs.resolveEnvironment(active)), 15000);
        const exe = resolved?.executable?.uri?.fsPath;
        if (exe) return exe;
      }
      return api?.settings?.getExecutionDetails?.(resource)?.execCommand?.[0];
    } catch (error) {
      this.log.appendLine(`Python extension: no interpreter (${String(error)})`);
      return undefined;
    }
  }

  /**
   * Calls `fn` when the Python interpreter may have changed: the Python extension's active
   * environment event (once that extension is active) or `python.defaultInterpreterPath`.
   */
  onPythonInterpreterChange(fn: () => void): Disposable {
    const config = vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("python.defaultInterpreterPath")) fn();
    });
    this.subscriptions.push(config);
    const ext = vscode.extensions.getExtension<PythonApi>("ms-python.python");
    let event: vscode.Disposable | undefined;
    const subscribe = () => {
      event ??= ext?.exports?.environments?.onDidChangeActiveEnvironmentPath?.(() => fn());
      if (event) this.subscriptions.push(event);
    };
    if (ext?.isActive) subscribe();
    else if (ext) void Promise.resolve(ext.activate()).then(subscribe, () => undefined);
    return { dispose: () => (config.dispose(), event?.dispose()) };
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
    this.channel.dispose();
  }
}

/** VS Code's MCP API (1.101+), typed here: the extension builds against @types/vscode 1.95. */
interface McpStdioDefinition {
  cwd?: vscode.Uri;
}
interface McpApi {
  lm?: {
    registerMcpServerDefinitionProvider?(
      id: string,
      provider: {
        onDidChangeMcpServerDefinitions?: vscode.Event<void>;
        provideMcpServerDefinitions(token: vscode.CancellationToken): Promise<McpStdioDefinition[]>;
      },
    ): vscode.Disposable;
  };
  McpStdioServerDefinition?: new (
    label: string,
    command: string,
    args?: string[],
    env?: Record<string, string>,
    version?: string,
  ) => McpStdioDefinition;
}

/** The parts of the Python extension's API used to find its interpreter. */
interface PythonApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: vscode.Uri): { id: string; path: string } | undefined;
    resolveEnvironment?(env: unknown): Thenable<{ executable?: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
  settings?: { getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] } | undefined };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return Promise.race([promise, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms))]);
}

interface DataItem<T> extends vscode.QuickPickItem {
  data?: T;
}

class QuickPickAdapter<T> implements QuickPickPort<T> {
  private list: PickItem<T>[] = [];

  constructor(private readonly qp: vscode.QuickPick<DataItem<T>>) {
    // Results come ranked by meaning: never hide or re-sort them by the typed text.
    qp.matchOnDescription = false;
    qp.matchOnDetail = false;
    (qp as { sortByLabel?: boolean }).sortByLabel = false;
  }

  get value(): string {
    return this.qp.value;
  }
  set value(v: string) {
    this.qp.value = v;
  }
  get title(): string | undefined {
    return this.qp.title;
  }
  set title(v: string | undefined) {
    this.qp.title = v;
  }
  get placeholder(): string {
    return this.qp.placeholder ?? "";
  }
  set placeholder(v: string) {
    this.qp.placeholder = v;
  }
  get busy(): boolean {
    return this.qp.busy;
  }
  set busy(v: boolean) {
    this.qp.busy = v;
  }
  get ignoreFocusOut(): boolean {
    return this.qp.ignoreFocusOut;
  }
  set ignoreFocusOut(v: boolean) {
    this.qp.ignoreFocusOut = v;
  }
  get items(): PickItem<T>[] {
    return this.list;
  }
  set items(items: PickItem<T>[]) {
    this.list = items;
    this.qp.items = items.map((i) => ({ ...i, alwaysShow: true }));
  }
  get active(): PickItem<T> | undefined {
    return this.qp.activeItems[0] ?? this.qp.selectedItems[0];
  }
  onDidChangeValue(fn: (value: string) => void): void {
    this.qp.onDidChangeValue(fn);
  }
  onDidAccept(fn: () => void): void {
    this.qp.onDidAccept(fn);
  }
  onDidHide(fn: () => void): void {
    this.qp.onDidHide(fn);
  }
  show(): void {
    this.qp.show();
  }
  hide(): void {
    this.qp.hide();
  }
  dispose(): void {
    this.qp.dispose();
  }
}

class PanelAdapter implements PanelPort {
  private isDisposed = false;

  constructor(private readonly panel: vscode.WebviewPanel) {
    panel.onDidDispose(() => (this.isDisposed = true));
  }

  get cspSource(): string {
    return this.panel.webview.cspSource;
  }
  get disposed(): boolean {
    return this.isDisposed;
  }
  setHtml(html: string): void {
    this.panel.webview.html = html;
  }
  post(message: unknown): void {
    if (!this.isDisposed) void this.panel.webview.postMessage(message);
  }
  reveal(): void {
    this.panel.reveal(undefined, true);
  }
  onMessage(fn: (message: PanelMessage) => void): void {
    this.panel.webview.onDidReceiveMessage(fn);
  }
  onDidDispose(fn: () => void): void {
    this.panel.onDidDispose(fn);
  }
  dispose(): void {
    this.panel.dispose();
  }
}
