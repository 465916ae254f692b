/**
 * codeask's MCP server for VS Code's agent mode (core/mcp.ts): the launch spec, and that spec
 * started for real (the repo venv's codeask, when there is one) on a hostile workspace: it
 * answers MCP's initialize and tools/list over stdio, and no module of the workspace runs.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, describe, it } from "node:test";
import { candidates } from "../src/core/discovery";
import { chooseLaunchDir, isInside, pythonModuleArgs } from "../src/core/launch";
import { MCP_PROVIDER_ID, mcpServerSpec } from "../src/core/mcp";

const root = resolve(__dirname, "../..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { contributes: Record<string, unknown> };

describe("MCP server definition", () => {
  it("is the resolved server with mcp instead of serve, on the workspace folders, -P and outside them", () => {
    const python = candidates({ serverPath: "", pythonPath: "/venv/bin/python", envPath: "", platform: "linux" })[0];
    const cwd = chooseLaunchDir(["/home/u/.config/Code/User/globalStorage/codeask.codeask"], ["/home/u/repo"]);
    const spec = mcpServerSpec(python, ["/home/u/repo", "/home/u/lib"], cwd, false, "0.1.0");
    assert.ok(spec);
    assert.equal(spec.command, "/venv/bin/python");
    assert.deepEqual(spec.args, ["-P", "-m", "codeask", "mcp", "/home/u/repo", "/home/u/lib"]);
    assert.ok(!isInside(spec.cwd, "/home/u/repo"));
    assert.deepEqual(spec.env, { PYTHONUNBUFFERED: "1" }, "an untrusted workspace is not trusted by the MCP server");
    const exe = candidates({ serverPath: "/venv/bin/codeask", pythonPath: "", envPath: "", platform: "linux" })[0];
    assert.deepEqual(mcpServerSpec(exe, ["/home/u/repo"], cwd, true, "0.1.0")?.args, ["mcp", "/home/u/repo"]);
    assert.equal(mcpServerSpec(exe, ["/home/u/repo"], cwd, true, "0.1.0")?.env.CODEASK_TRUST_WORKSPACE, "1");
  });

  it("changes its version when the launch changes (VS Code then restarts it), and needs a folder", () => {
    const a = candidates({ serverPath: "", pythonPath: "/a/python", envPath: "", platform: "linux" })[0];
    const b = candidates({ serverPath: "", pythonPath: "/b/python", envPath: "", platform: "linux" })[0];
    const va = mcpServerSpec(a, ["/r"], "/s", false, "0.1.0")?.version;
    assert.notEqual(va, mcpServerSpec(b, ["/r"], "/s", false, "0.1.0")?.version);
    assert.notEqual(va, mcpServerSpec(a, ["/r"], "/s", true, "0.1.0")?.version);
    assert.equal(mcpServerSpec(a, [], "/s", false, "0.1.0"), undefined, "no folder: no server (it would serve its cwd)");
  });

  it("is declared in package.json under the id the extension registers", () => {
    const declared = (pkg.contributes as { mcpServerDefinitionProviders?: { id: string; label: string }[] }).mcpServerDefinitionProviders;
    assert.deepEqual(declared?.map((p) => p.id), [MCP_PROVIDER_ID]);
  });
});

const REPO_PYTHON = process.env.CODEASK_PYTHON || resolve(root, "../../.venv/bin/python");
const work = mkdtempSync(join(tmpdir(), "codeask-mcp-test-"));
after(() => rmSync(work, { recursive: true, force: true }));

/** Sends newline-delimited JSON-RPC to a child and resolves each response by id. */
function rpc(child: ReturnType<typeof spawn>) {
  const waiting = new Map<number, (msg: { result?: unknown; error?: unknown }) => void>();
  let rest = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    const lines = (rest + chunk.toString("utf8")).split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines.filter((l) => l.trim())) {
      const msg = JSON.parse(line) as { id?: number; result?: unknown; error?: unknown };
      if (msg.id !== undefined) waiting.get(msg.id)?.(msg);
    }
  });
  let next = 1;
  return {
    request(method: string, params: unknown): Promise<{ result?: unknown; error?: unknown }> {
      const id = next++;
      child.stdin?.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
      return new Promise((done) => waiting.set(id, done));
    },
    notify(method: string): void {
      child.stdin?.write(`${JSON.stringify({ jsonrpc: "2.0", method })}\n`);
    },
  };
}

describe("the MCP server, started from its definition (real codeask mcp)", () => {
  it("answers initialize and lists search_code; the hostile workspace it serves runs nothing", { skip: !existsSync(REPO_PYTHON) && "no repo venv", timeout: 120_000 }, async () => {
    const workspace = join(work, "hostile-repo");
    const markers = join(work, "markers");
    mkdirSync(markers, { recursive: true });
    for (const name of ["codeask", "mcp", "pygls", "httpx"]) {
      mkdirSync(join(workspace, name), { recursive: true });
      writeFileSync(join(workspace, name, "__init__.py"), `import pathlib\npathlib.Path(${JSON.stringify(join(markers, name))}).write_text("ran")\nraise SystemExit(1)\n`);
    }
    writeFileSync(join(workspace, "app.py"), "def parse_config(path):\n    return open(path).read()\n");
    const storage = join(work, "storage");
    mkdirSync(storage);
    const spec = mcpServerSpec({ command: REPO_PYTHON, args: pythonModuleArgs("codeask", ["serve"]) }, [workspace], chooseLaunchDir([storage], [workspace]), false, "0.1.0");
    assert.ok(spec);
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: { ...process.env, ...spec.env, XDG_CACHE_HOME: join(work, "cache"), HF_HUB_OFFLINE: "1" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    try {
      const client = rpc(child);
      const init = await client.request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "codeask-vscode-test", version: "0" } });
      assert.ok(init.result, `initialize: ${JSON.stringify(init)}\n${stderr}`);
      client.notify("notifications/initialized");
      const tools = (await client.request("tools/list", {})).result as { tools: { name: string }[] };
      assert.ok(tools.tools.some((t) => t.name === "search_code"), JSON.stringify(tools));
      assert.deepEqual(readdirSync(markers), []);
    } finally {
      // wait for the server (and anything it started) to exit before `after` removes its folder:
      // a process still writing there makes the removal fail with ENOTEMPTY
      const exited = new Promise((done) => child.once("exit", done));
      child.stdin.end();
      child.kill();
      if (child.exitCode === null && child.signalCode === null) await exited;
    }
  });
});
