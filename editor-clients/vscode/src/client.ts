/**
 * The language client: finds the server, starts `codeask serve` over stdio, answers
 * workspace/configuration from the `codeask.*` settings, and exposes the custom requests
 * (docs/protocol.md) as the `Server` port the commands use.
 */

import { homedir } from "node:os";
import {
  type ConfigurationParams,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
} from "vscode-languageclient/node";
import { findBasePython, installPrivateEnv, privateEnvState, readBundledWheel, envPaths } from "./bootstrap";
import { installPrompt, resolve as resolveServer } from "./core/bootstrap";
import { type Candidate, type DiscoveryInput, discover, expandHome } from "./core/discovery";
import { type McpServerSpec, mcpServerSpec } from "./core/mcp";
import { folderPaths, pythonModuleArgs, resolveSettingPath, serverExecutable, untrustedWorkspaceProgram } from "./core/launch";
import {
  ANSWER_DELTA,
  ASK_CODE,
  type AnswerDelta,
  type AskCodeParams,
  type AskCodeResult,
  HEALTH,
  type HealthResult,
  INDEX_STATUS,
  type IndexState,
  SEMANTIC_SEARCH,
  type SemanticSearchParams,
  type SemanticSearchResult,
} from "./core/protocol";
import { type SettingsTree, initializationOptions, interpreterChangeRestarts, toServerSettings } from "./core/settings";
import type { VsCodeHost } from "./host";
import type { CancelToken, Disposable, Server } from "./ports";
import { launchDir, nodeProbe } from "./probe";
import type { IndexStatusBar } from "./views";

/** Where the extension is installed (its `server/` wheel) and its global storage (the private env). */
export interface ExtensionPaths {
  extensionDir: string;
  storageDir: string;
  /** The extension's version (the MCP definition's version includes it). */
  version: string;
}

export class CodeaskClient implements Server {
  private client: LanguageClient | undefined;
  private readonly deltaListeners = new Set<(token: string | number, delta: string) => void>();
  private startPromise: Promise<void> | undefined;
  /** The message of an install that failed in this session: not retried on its own. */
  private installFailure: string | undefined;
  /** The server last launched (the MCP server runs the same one with `mcp`). */
  private launched: Candidate | undefined;
  /** Set by extension.ts: the MCP definitions may have changed. */
  onServerChanged: (() => void) | undefined;
  /** The Python extension's interpreter at the last start, to restart only on a real change. */
  private lastInterpreter: string | undefined;

  constructor(
    private readonly host: VsCodeHost,
    private readonly status: IndexStatusBar,
    private readonly paths: ExtensionPaths,
  ) {}

  get ready(): boolean {
    return this.client?.state === State.Running;
  }

  get starting(): boolean {
    return this.startPromise !== undefined || this.client?.state === State.Starting;
  }

  async whenReady(): Promise<boolean> {
    await this.startPromise?.catch(() => undefined);
    return this.ready;
  }

  /** Start (once at a time); failures end in the status bar and a notification with the fix. */
  start(requested = false): Promise<void> {
    this.startPromise ??= this.doStart(requested).finally(() => (this.startPromise = undefined));
    return this.startPromise;
  }

  /** The Install Server command, and the notification's Install / Retry: (re)install, then start. */
  async installServer(): Promise<void> {
    await this.startPromise;
    await this.stop();
    await this.start(true);
  }

  /** Restart when the Python extension now selects another interpreter than at the last start
   * and codeask runs on it (no codeask.serverPath / codeask.pythonPath). */
  async interpreterChanged(): Promise<void> {
    const input = await this.discoveryInput();
    const now = input.pythonExtensionInterpreter;
    if (!interpreterChangeRestarts({ ...input, previous: this.lastInterpreter, current: now })) return;
    this.host.log.appendLine(`Python interpreter changed (${this.lastInterpreter ?? "none"} → ${now ?? "none"}): restarting`);
    await this.restart();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.status.setPhase("stopped");
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.host.log.appendLine(`stopping the server: ${String(error)}`);
      }
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Push changed settings; the server then pulls workspace/configuration per folder. */
  async settingsChanged(): Promise<void> {
    if (!this.ready || !this.client) return;
    await this.client.sendNotification("workspace/didChangeConfiguration", { settings: this.settingsFor(undefined) });
    this.status.refreshHealth(); // the endpoint or model may have changed: ask the server again
  }

  search(params: SemanticSearchParams, token: CancelToken): Promise<SemanticSearchResult> {
    return this.request<SemanticSearchResult>(SEMANTIC_SEARCH, params, token);
  }

  ask(params: AskCodeParams, token: CancelToken): Promise<AskCodeResult> {
    return this.request<AskCodeResult>(ASK_CODE, params, token);
  }

  indexStatus(): Promise<IndexState> {
    return this.request<IndexState>(INDEX_STATUS, {}, undefined);
  }

  health(): Promise<HealthResult> {
    return this.request<HealthResult>(HEALTH, {}, undefined);
  }

  onAnswerDelta(fn: (token: string | number, delta: string) => void): Disposable {
    this.deltaListeners.add(fn);
    return { dispose: () => this.deltaListeners.delete(fn) };
  }

  private request<R>(method: string, params: unknown, token: CancelToken): Promise<R> {
    if (!this.client || !this.ready) return Promise.reject(new Error("codeask: the language server is not running"));
    // The cancellation token makes vscode-jsonrpc send $/cancelRequest when it fires. Without
    // one, pass none at all: a trailing `undefined` would be sent as a second param (a list).
    if (token === undefined) return this.client.sendRequest<R>(method, params);
    return this.client.sendRequest<R>(method, params, token as never);
  }

  private settingsFor(scopeUri: string | undefined): SettingsTree {
    return toServerSettings((key) => this.host.explicitSetting(key, scopeUri), this.host.workspaceTrusted());
  }

  /** Explicit setting → interpreter → PATH → private env → install it (asked, or not). */
  private async doStart(requested: boolean): Promise<void> {
    this.status.setPhase("starting");
    const input = await this.discoveryInput();
    this.lastInterpreter = input.pythonExtensionInterpreter;
    const cwd = this.launchDir();
    const found = await discover(input, nodeProbe(cwd));
    for (const line of found.skipped) this.host.log.appendLine(`server discovery: skipped ${line}`);
    const bundled = readBundledWheel(this.paths.extensionDir);
    const env = bundled ? privateEnvState(this.paths.storageDir, bundled.stamp, input.platform) : "missing";
    const action = resolveServer({
      found: found.ok,
      explicit: Boolean(input.serverPath || input.pythonPath),
      hasWheel: bundled !== undefined,
      env,
      autoInstall: this.host.setting<boolean>("autoInstallServer") === true,
      requested,
      failedBefore: this.installFailure !== undefined,
    });
    if (action === "start-found" && found.ok) return this.launch(found.candidate);
    const python = envPaths(this.paths.storageDir, input.platform).python;
    if (action === "start-private") return this.launch({ command: python, args: pythonModuleArgs("codeask", ["serve"]), source: "private environment" });
    if (action === "install" && bundled) return this.install(input, bundled);
    const message = found.ok ? "" : found.message;
    if (action === "ask" && bundled) {
      this.host.log.appendLine(message);
      this.status.setPhase("missing", `${message}\nRun "codeask: Install Server" to install it.`);
      void this.askInstall(bundled.stamp.version);
      return;
    }
    // A broken explicit setting is reported as such, even after a failed install.
    const why = input.serverPath || input.pythonPath ? message : this.installFailure ?? message;
    this.status.setPhase("failed", why);
    this.host.log.appendLine(why);
    void this.offerFix(why);
  }

  /** The Install / Not now question; it does not hold up the start (the toast may wait). */
  private async askInstall(version: string): Promise<void> {
    const choice = await this.host.showInfo(installPrompt(version, this.paths.storageDir), "Install", "Not now");
    if (choice === "Install") await this.installServer();
    else this.host.log.appendLine("server install: not now (run \"codeask: Install Server\" later)");
  }

  /** Creates / upgrades the private env with progress and a log, then starts its server. */
  private async install(input: DiscoveryInput, bundled: NonNullable<ReturnType<typeof readBundledWheel>>): Promise<void> {
    const cwd = this.launchDir();
    const base = await findBasePython({ interpreter: input.pythonExtensionInterpreter, envPath: input.envPath, platform: input.platform }, cwd);
    if ("message" in base) return this.installFailed(base.message);
    this.status.setPhase("installing", `Installing codeask ${bundled.stamp.version} with ${base.python}`);
    this.host.log.appendLine(`server install: codeask ${bundled.stamp.version} into ${this.paths.storageDir} with ${base.python}`);
    const result = await this.host.withProgress(`codeask: installing the server ${bundled.stamp.version}`, (report, signal) =>
      installPrivateEnv({
        storageDir: this.paths.storageDir,
        bundled,
        basePython: base.python,
        platform: input.platform,
        cwd,
        log: (line) => this.host.log.appendLine(`[install] ${line}`),
        progress: report,
        signal,
      }),
    );
    if (!result.ok && result.cancelled) {
      this.host.log.appendLine(result.message);
      this.status.setPhase("missing", `${result.message}\nRun "codeask: Install Server" to install it.`);
      return;
    }
    if (!result.ok) return this.installFailed(result.message);
    this.installFailure = undefined;
    await this.launch({ command: result.python, args: pythonModuleArgs("codeask", ["serve"]), source: "private environment" });
  }

  /** Remembered for the session (no automatic retry); the notification offers the log and Retry. */
  private installFailed(message: string): void {
    this.installFailure = message;
    this.host.log.appendLine(message);
    this.status.setPhase("failed", message);
    void this.host.showError(message, "Show Logs", "Retry").then((choice) => {
      if (choice === "Show Logs") this.host.log.show();
      if (choice === "Retry") void this.installServer();
    });
  }

  /**
   * codeask's MCP server for agent mode: the server this extension resolved, with `mcp`
   * instead of `serve`, on the workspace folders (none while no server is found).
   */
  async mcpServers(): Promise<McpServerSpec[]> {
    await this.whenReady();
    if (!this.launched) return [];
    const spec = mcpServerSpec(this.launched, folderPaths(this.host.folders()), this.launchDir(), this.host.workspaceTrusted(), this.paths.version);
    return spec ? [spec] : [];
  }

  private async launch(candidate: Candidate): Promise<void> {
    const { command, args, source } = candidate;
    const changed = this.launched?.command !== command || this.launched?.args.join(" ") !== args.join(" ");
    this.launched = candidate;
    if (changed) this.onServerChanged?.();
    const executable = serverExecutable(candidate, this.launchDir(), process.env);
    this.host.log.appendLine(`starting ${command} ${args.join(" ")} in ${executable.options.cwd} (from ${source})`);
    const serverOptions: ServerOptions = executable;
    const client = new LanguageClient("codeask", "codeask", serverOptions, this.clientOptions());
    client.onNotification(ANSWER_DELTA, (params: AnswerDelta) => {
      for (const fn of this.deltaListeners) fn(params.streamToken, params.delta);
    });
    client.onDidChangeState((e) => {
      if (this.client !== client) return;
      if (e.newState === State.Running) this.status.setPhase("running");
      else if (e.newState === State.Stopped) this.status.setPhase("stopped");
    });
    this.client = client;
    try {
      await client.start();
      this.status.setPhase("running");
    } catch (error) {
      const message = `codeask: the server (${command} ${args.join(" ")}) failed to start: ${String(error)}`;
      this.host.log.appendLine(message);
      this.status.setPhase("failed", message);
      void this.offerFix(message);
    }
  }

  /** Where every process starts: never inside a workspace folder (core/launch.ts says why). */
  private launchDir(): string {
    return launchDir(this.paths.storageDir, folderPaths(this.host.folders()));
  }

  private async discoveryInput(): Promise<DiscoveryInput> {
    const folder = this.host.folders()[0];
    const home = homedir();
    const trusted = this.host.workspaceTrusted();
    const folders = folderPaths(this.host.folders());
    // A relative path is taken from the workspace only when the workspace is trusted.
    const firstFolder = trusted ? folders[0] : undefined;
    const path = (key: string) => resolveSettingPath(expandHome(this.host.setting<string>(key, folder) ?? "", home), firstFolder);
    let interpreter = await this.host.pythonExtensionInterpreter(folder);
    if (interpreter && untrustedWorkspaceProgram(interpreter, folders, trusted)) {
      this.host.log.appendLine(`server discovery: skipped the Python extension's ${interpreter}: it lies in the untrusted workspace (Restricted Mode)`);
      interpreter = undefined;
    }
    return {
      serverPath: path("serverPath"),
      pythonPath: path("pythonPath"),
      pythonExtensionInterpreter: interpreter,
      envPath: process.env.PATH ?? "",
      platform: process.platform,
    };
  }

  private clientOptions(): LanguageClientOptions {
    return {
      documentSelector: [{ scheme: "file" }],
      outputChannel: this.host.channel,
      initializationOptions: initializationOptions(this.host.folders(), (uri) => this.settingsFor(uri)),
      synchronize: { fileEvents: this.host.fileWatcher() },
      middleware: {
        workspace: {
          configuration: async (params: ConfigurationParams, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) return answers;
            return params.items.map((item, i) =>
              item.section === "codeask" ? this.settingsFor(item.scopeUri) : answers[i],
            );
          },
        },
      },
    };
  }

  private async offerFix(message: string): Promise<void> {
    const choice = await this.host.showError(message, "Open Settings", "Show Logs");
    if (choice === "Open Settings") await this.host.openSettings("codeask.pythonPath");
    if (choice === "Show Logs") this.host.log.show();
  }
}
