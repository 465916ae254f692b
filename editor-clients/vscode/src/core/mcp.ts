/**
 * codeask's MCP server (`codeask mcp`, docs/mcp.md) for VS Code's agent mode: the same server
 * the extension resolved for the language server, started with `mcp` instead of `serve`, on the
 * workspace folders, with the launch rules of launch.ts (`-P`, a working directory outside the
 * workspace). Pure: the vscode call is in host.ts.
 */

import type { Candidate } from "./discovery";

/** The id declared in package.json's contributes.mcpServerDefinitionProviders. */
export const MCP_PROVIDER_ID = "codeask.mcp";
/** What agent mode lists the server as. */
export const MCP_SERVER_LABEL = "codeask";

/** A stdio MCP server as VS Code's McpStdioServerDefinition takes it. */
export interface McpServerSpec {
  label: string;
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** Changes when the launch changes, so VS Code restarts a running server. */
  version: string;
}

/**
 * The MCP launch for the resolved server: its arguments with `serve` replaced by `mcp`, then
 * the workspace folders (absolute: the process does not start in the workspace, so the default
 * "this project" would mean the launch directory). A trusted workspace is trusted by the MCP
 * server too (CODEASK_TRUST_WORKSPACE=1), as the language server trusts it through the editor;
 * otherwise the server applies its own rules (a project file cannot loosen anything).
 */
export function mcpServerSpec(
  candidate: Pick<Candidate, "command" | "args">,
  folders: string[],
  cwd: string,
  trusted: boolean,
  extensionVersion: string,
): McpServerSpec | undefined {
  const at = candidate.args.lastIndexOf("serve");
  if (at < 0 || folders.length === 0) return undefined;
  const args = [...candidate.args.slice(0, at), "mcp", ...candidate.args.slice(at + 1), ...folders];
  const env: Record<string, string> = { PYTHONUNBUFFERED: "1" };
  if (trusted) env.CODEASK_TRUST_WORKSPACE = "1";
  const version = `${extensionVersion} ${candidate.command} ${args.join(" ")} ${trusted ? "trusted" : "untrusted"}`;
  return { label: MCP_SERVER_LABEL, command: candidate.command, args, cwd, env, version };
}
