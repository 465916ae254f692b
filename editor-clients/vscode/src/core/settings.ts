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
  "history.enabled",
  "server.hover",
  "server.logLevel",
] as const;

export type ServerKey = (typeof SERVER_KEYS)[number];
export type SettingsTree = Record<string, Record<string, unknown>>;

/** The value set for one key (workspace folder > workspace > user), undefined when unset. */
export type ExplicitValue = (key: string) => unknown;

/** The nested tree the server expects, holding only explicitly set values. */
export function toServerSettings(explicit: ExplicitValue): SettingsTree {
  const tree: SettingsTree = {};
  for (const key of SERVER_KEYS) {
    const value = explicit(key);
    if (value === undefined || value === null) continue;
    const [section, field] = key.split(".");
    (tree[section] ??= {})[field] = value;
  }
  return tree;
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

/** Whether a changed setting needs a new server process rather than a settings push. */
export function needsRestart(changed: (key: string) => boolean): boolean {
  return CLIENT_ONLY_KEYS.some((key) => changed(key));
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
