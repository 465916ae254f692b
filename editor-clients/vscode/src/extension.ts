/**
 * Entry point: wires the host (vscode API), the language client, the views and the
 * commands. No logic of its own.
 */

import type { ExtensionContext } from "vscode";
import { CodeaskClient } from "./client";
import { Commands } from "./commands";
import { MCP_PROVIDER_ID } from "./core/mcp";
import { needsRestart } from "./core/settings";
import { VsCodeHost } from "./host";
import { AnswerView, IndexStatusBar } from "./views";

let client: CodeaskClient | undefined;

export async function activate(context: ExtensionContext): Promise<void> {
  const host = new VsCodeHost();
  const status = new IndexStatusBar(
    host,
    () => (client?.ready ? client.indexStatus() : undefined),
    undefined,
    () => (client?.ready ? client.health() : undefined),
  );
  const answers = new AnswerView(host);
  const codeask = new CodeaskClient(host, status, {
    extensionDir: context.extensionPath,
    storageDir: context.globalStorageUri.fsPath,
    version: String((context.extension.packageJSON as { version?: unknown }).version ?? ""),
  });
  client = codeask;
  const commands = new Commands(host, () => client, answers, status);
  commands.onRestartRequested = () => codeask.restart();

  host.registerCommand("codeask.askCode", () => commands.askCode());
  host.registerCommand("codeask.semanticSearch", () => commands.semanticSearch());
  host.registerCommand("codeask.cancelAsk", () => commands.cancelAsk());
  host.registerCommand("codeask.restartServer", () => codeask.restart());
  host.registerCommand("codeask.showLogs", () => host.log.show());
  host.registerCommand("codeask.installServer", () => codeask.installServer());
  const config = host.onConfigChange((affects) => {
    if (needsRestart(affects)) void codeask.restart();
    else if (affects("")) void codeask.settingsChanged();
  });
  const interpreter = host.onPythonInterpreterChange(() => void codeask.interpreterChanged());
  // Agent mode gets the same server as an MCP server, where this VS Code has the API.
  const mcp = host.registerMcpProvider(MCP_PROVIDER_ID, () => codeask.mcpServers());
  if (mcp) codeask.onServerChanged = () => mcp.changed();
  host.log.appendLine(mcp ? `MCP server definition provider ${MCP_PROVIDER_ID} registered` : "MCP: this VS Code has no MCP server API (1.101+): not offered to agent mode");
  // Trust granted: the server pulls the settings again and may now apply the project file.
  const trust = host.onTrustGranted(() => {
    void codeask.settingsChanged();
    mcp?.changed(); // the MCP server now trusts the workspace too
  });
  context.subscriptions.push(host, status, answers, config, interpreter, trust, { dispose: () => void codeask.stop() });
  await codeask.start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
