/**
 * Editor settings → the server's settings tree (docs/protocol.md "Settings").
 *
 * Only values the user actually set are sent: the server merges defaults < project file
 * (.codeask.toml) < editor settings < environment, so sending VS Code's declared defaults would
 * silently override a project's own file.
 */

/** Settings the client itself uses; never sent to the server. */
export const CLIENT_ONLY_KEYS = ["serverPath", "pythonPath", "autoInstallServer"] as const;

/** `codeask.<section>.<field>` settings mirrored from the server's Settings (camelCase). */
export const SERVER_KEYS = [
  "llm.provider",
  "llm.baseUrl",
  "llm.model",
  "llm.apiKeyEnv",
  "llm.maxTokens",
  "llm.contextTokens",
  "llm.temperature",
  "index.location",
  "index.exclude",
  "embed.model",
  "embed.tiers",
  "history.enabled",
  "server.hover",
  "server.logLevel",
] as const;

export type ServerKey = (typeof SERVER_KEYS)[number];
/** Sections of settings, plus the top-level `trustWorkspace` flag. */
export type SettingsTree = Record<string, Record<string, unknown> | boolean>;

/** Sent with every settings tree: VS Code's workspace trust (never read from a setting, which a
 * repository's .vscode/settings.json could set). The server lets a trusted workspace's
 * .codeask.toml set its protected settings (docs/security.md). */
export const TRUST_KEY = "trustWorkspace";

/**
 * Settings that decide where code and credentials go or which program runs: the server's
 * protected settings (`codeask.config.PROTECTED`, camelCased), the limits a repository may only
 * lower (`codeask.config.BOUNDED_FIELDS`) and the server executable. In an
 * untrusted workspace VS Code ignores their workspace values (package.json
 * `capabilities.untrustedWorkspaces.restrictedConfigurations`), and so does `explicitValue`.
 */
export const RESTRICTED_KEYS = [
  "serverPath",
  "pythonPath",
  "llm.provider",
  "llm.baseUrl",
  "llm.apiKeyEnv",
  "llm.maxTokens",
  "llm.contextTokens",
  "index.location",
  "embed.model",
] as const;

/** The value set for one key (workspace folder > workspace > user), undefined when unset. */
export type ExplicitValue = (key: string) => unknown;

/** The nested tree the server expects, holding only explicitly set values (and the workspace
 * trust, when known). */
export function toServerSettings(explicit: ExplicitValue, trusted?: boolean): SettingsTree {
  const tree: Record<string, Record<string, unknown>> = {};
  for (const key of SERVER_KEYS) {
    const value = explicit(key);
    if (value === undefined || value === null) continue;
    const [section, field] = key.split(".");
    (tree[section] ??= {})[field] = value;
  }
  return trusted === undefined ? tree : { ...tree, [TRUST_KEY]: trusted };
}

export interface FolderSettings {
  scopeUri: string;
  settings: SettingsTree;
}

/**
 * initializationOptions: one dict for zero or one folder, the per-folder list form when the
 * workspace has several folders (their settings may differ: every key is `scope: resource`).
 */
export function initializationOptions(
  folders: string[],
  settingsFor: (scopeUri: string | undefined) => SettingsTree,
): SettingsTree | FolderSettings[] {
  if (folders.length <= 1) return settingsFor(folders[0]);
  return folders.map((scopeUri) => ({ scopeUri, settings: settingsFor(scopeUri) }));
}

/** Whether a changed setting needs a new server process rather than a settings push
 * (`codeask.serverPath`, `codeask.pythonPath`: another program; `autoInstallServer`). */
export function needsRestart(changed: (key: string) => boolean): boolean {
  return CLIENT_ONLY_KEYS.some((key) => changed(key));
}

/** What an interpreter change is judged on: the settings at the time of the event, and the
 * Python extension's interpreter at the last start and now. */
export interface InterpreterChange {
  serverPath: string;
  pythonPath: string;
  previous: string | undefined;
  current: string | undefined;
}

/** Whether the Python extension's active interpreter changing needs a new server: only when
 * codeask may run on that interpreter (neither `codeask.serverPath` nor `codeask.pythonPath`
 * set: those win over it, core/discovery.ts) and it really is another interpreter. */
export function interpreterChangeRestarts(change: InterpreterChange): boolean {
  if (change.serverPath || change.pythonPath) return false;
  return change.current !== change.previous;
}

type Inspected = { globalValue?: unknown; workspaceValue?: unknown; workspaceFolderValue?: unknown } | undefined;

/** The value set for `key`: the most specific one, but only the user's own for a restricted key
 * in an untrusted workspace (VS Code filters these too; this holds even if it did not). */
export function explicitValue(key: string, inspected: Inspected, trusted: boolean): unknown {
  const restricted = (RESTRICTED_KEYS as readonly string[]).includes(key);
  return !trusted && restricted ? inspected?.globalValue : mostSpecific(inspected);
}

/** Merge the layers VS Code's `inspect()` reports: most specific set value wins. */
export function mostSpecific(inspected: {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
} | undefined): unknown {
  if (!inspected) return undefined;
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}
