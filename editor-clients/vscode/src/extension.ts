/**
 * Entry point: wires the host (vscode API), the language client, the views and the
 * commands. No logic of its own.
 */

import type { ExtensionContext } from "vscode";
import { CodeaskClient } from "./client";
import { Commands } from "./commands";
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
  // Trust granted: the server pulls the settings again and may now apply the project file.
  const trust = host.onTrustGranted(() => void codeask.settingsChanged());
  context.subscriptions.push(host, status, answers, config, interpreter, trust, { dispose: () => void codeask.stop() });
  await codeask.start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
