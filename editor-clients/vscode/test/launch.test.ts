/**
 * Opening a repository never runs its code: every Python the extension starts carries `-P` and
 * every process starts outside the workspace (core/launch.ts). The pure launch specs are checked
 * one by one; then, for real, the probes, the installer's venv / pip and the server launch run
 * while the test process itself sits in a hostile workspace whose `codeask/`, `pip/`, `venv/`,
 * `ensurepip/` and `sitecustomize.py` write a marker file when imported.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { findBasePython, installPrivateEnv, readBundledWheel, runStreaming } from "../src/bootstrap";
import { installSteps } from "../src/core/bootstrap";
import { type Candidate, candidates } from "../src/core/discovery";
import {
  SAFE_PATH_FLAG,
  chooseLaunchDir,
  folderPaths,
  isInside,
  isPythonLaunch,
  pythonProblem,
  resolveSettingPath,
  serverExecutable,
  untrustedWorkspaceProgram,
} from "../src/core/launch";
import { launchDir, nodeProbe } from "../src/probe";

/** Every Python launch spec the extension can make, from every source. */
function everyPythonSpec(): { command: string; args: string[] }[] {
  const input = { serverPath: "", pythonPath: "", envPath: "/usr/bin", platform: "linux" };
  const found: Candidate[] = [
    ...candidates({ ...input, pythonPath: "/venv/bin/python" }),
    ...candidates({ ...input, pythonExtensionInterpreter: "/env/bin/python" }),
  ];
  const steps = installSteps("/usr/bin/python3", "/s/server-env", "/ext/server/w.whl", "linux", true);
  return [...found.filter((c) => c.source !== "PATH"), ...steps];
}

describe("launch specs", () => {
  it("start every Python with -P, whatever the source (setting, Python extension, installer steps)", () => {
    const specs = everyPythonSpec();
    assert.equal(specs.length, 6, "pythonPath, the Python extension, venv, pip ×2, the import check");
    for (const spec of specs) {
      assert.equal(spec.args[0], SAFE_PATH_FLAG, `${spec.command} ${spec.args.join(" ")}`);
      assert.ok(isPythonLaunch(spec.args));
    }
    // A `codeask` executable is no Python launch: no flag, and the probe checks the file.
    const exe = candidates({ serverPath: "/venv/bin/codeask", pythonPath: "", envPath: "", platform: "linux" })[0];
    assert.deepEqual(exe.args, ["serve"]);
    assert.equal(isPythonLaunch(exe.args), false);
  });

  it("give the server a working directory outside the workspace, with its arguments unchanged", () => {
    const ws = "/home/u/repo";
    for (const candidate of [...candidates({ serverPath: "", pythonPath: "/venv/bin/python", envPath: "/usr/bin", platform: "linux" })]) {
      const dir = chooseLaunchDir(["/home/u/.config/Code/User/globalStorage/codeask.codeask", "/tmp"], [ws]);
      const exe = serverExecutable(candidate, dir, { PATH: "/usr/bin" });
      assert.equal(exe.options.cwd, "/home/u/.config/Code/User/globalStorage/codeask.codeask");
      assert.ok(!isInside(exe.options.cwd, ws));
      assert.deepEqual(exe.args, candidate.args);
      assert.equal(exe.options.env.PYTHONUNBUFFERED, "1");
      assert.equal(exe.options.env.PATH, "/usr/bin");
    }
  });

  it("never picks a launch dir inside a workspace folder (a workspace opened on $HOME holds the storage)", () => {
    const storage = "/home/u/.config/Code/User/globalStorage/codeask.codeask";
    assert.equal(chooseLaunchDir([storage, "/tmp"], ["/home/u/repo"]), storage);
    assert.equal(chooseLaunchDir([storage, "/tmp"], ["/home/u"]), "/tmp");
    assert.equal(chooseLaunchDir([storage, "/tmp"], ["/home/u", "/tmp"]), "/");
    assert.equal(chooseLaunchDir([storage], ["/home/u/repo", "/home/u/.config/Code"]), "/");
    assert.equal(isInside("/home/u/repo-other", "/home/u/repo"), false, "a sibling with the same prefix is outside");
    assert.equal(isInside("/home/u/repo", "/home/u/repo"), true);
  });

  it("reads local workspace folders from file URIs only", () => {
    assert.deepEqual(folderPaths(["file:///home/u/my%20repo", "vscode-vfs://github/x/y", "untitled:1"]), ["/home/u/my repo"]);
  });

  it("resolves a relative server setting against the first folder only in a trusted workspace", () => {
    assert.equal(resolveSettingPath(".venv/bin/codeask", "/home/u/repo"), "/home/u/repo/.venv/bin/codeask");
    assert.equal(resolveSettingPath(".venv/bin/codeask", undefined), ".venv/bin/codeask");
    assert.equal(resolveSettingPath("python3", "/home/u/repo"), "python3", "a bare name stays for PATH");
    assert.equal(resolveSettingPath("/opt/py/bin/python", "/home/u/repo"), "/opt/py/bin/python");
  });

  it("does not run the Python extension's interpreter from inside an untrusted workspace", () => {
    assert.equal(untrustedWorkspaceProgram("/home/u/repo/.venv/bin/python", ["/home/u/repo"], false), true);
    assert.equal(untrustedWorkspaceProgram("/home/u/repo/.venv/bin/python", ["/home/u/repo"], true), false);
    assert.equal(untrustedWorkspaceProgram("/usr/bin/python3", ["/home/u/repo"], false), false);
  });

  it("names Python < 3.11 (no -P) instead of quoting its usage text", () => {
    const stderr = "Unknown option: -P\nusage: python3.10 [option] ... [-c cmd | -m mod | file | -] [arg] ...\nTry `python -h' for more information.\n";
    assert.match(pythonProblem(stderr, "exit 2"), /older than 3\.11/);
    assert.equal(pythonProblem("ModuleNotFoundError: No module named 'codeask'\n", "exit 1"), "ModuleNotFoundError: No module named 'codeask'");
  });
});

// ---- for real: a hostile workspace as the process's working directory --------------------------
const work = mkdtempSync(join(tmpdir(), "codeask-launch-test-"));
const hostile = join(work, "hostile-repo");
const markers = join(work, "markers");
const storage = join(work, "storage");
const originalCwd = process.cwd();
after(() => {
  process.chdir(originalCwd);
  rmSync(work, { recursive: true, force: true });
});

/** The repository's trap: each module writes `markers/<name>` when imported, then fails loudly. */
function makeHostileWorkspace(): void {
  mkdirSync(markers, { recursive: true });
  const trap = (name: string) =>
    `import pathlib\npathlib.Path(${JSON.stringify(join(markers, name))}).write_text("imported from the workspace")\nraise SystemExit("hostile ${name} ran")\n`;
  for (const name of ["codeask", "pip", "venv", "ensurepip"]) {
    mkdirSync(join(hostile, name), { recursive: true });
    writeFileSync(join(hostile, name, "__init__.py"), trap(name));
    writeFileSync(join(hostile, name, "__main__.py"), trap(`${name}.__main__`));
  }
  writeFileSync(join(hostile, "sitecustomize.py"), trap("sitecustomize"));
  writeFileSync(join(hostile, "usercustomize.py"), trap("usercustomize"));
}

function markersWritten(): string[] {
  return existsSync(markers) ? readdirSync(markers) : [];
}

/** A tiny real codeask wheel (codeask.cli importable), written with Python's zipfile. */
function makeWheel(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const script = `
import base64, hashlib, sys, zipfile
out = sys.argv[1]
info = "codeask-0.0.9.dist-info"
files = {
  "codeask/__init__.py": "__version__ = '0.0.9'\\n",
  "codeask/cli.py": "def main():\\n    return 0\\n",
  f"{info}/METADATA": "Metadata-Version: 2.1\\nName: codeask\\nVersion: 0.0.9\\n",
  f"{info}/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
def digest(data):
  return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
record = "".join(f"{n},{digest(t.encode())},{len(t.encode())}\\n" for n, t in files.items()) + f"{info}/RECORD,,\\n"
with zipfile.ZipFile(f"{out}/codeask-0.0.9-py3-none-any.whl", "w") as z:
  for n, t in files.items():
    z.writestr(n, t)
  z.writestr(f"{info}/RECORD", record)
`;
  execFileSync("python3", ["-P", "-c", script, dir], { cwd: work });
}

describe("a hostile workspace as working directory (real python3, venv, pip)", () => {
  let cwd = "";
  before(() => {
    makeHostileWorkspace();
    makeWheel(join(work, "ext", "server"));
    // The worst case: the extension host itself runs in the repository (`code .`).
    process.chdir(hostile);
    cwd = launchDir(storage, [hostile]);
  });
  after(() => process.chdir(originalCwd));
  beforeEach(() => {
    rmSync(markers, { recursive: true, force: true });
    mkdirSync(markers);
  });

  it("is a real trap: a plain `python3 -m venv` there runs the repository's venv/", () => {
    assert.throws(() => execFileSync("python3", ["-m", "venv", "--help"], { stdio: "pipe" }));
    assert.deepEqual(markersWritten(), ["venv"]);
    assert.ok(!isInside(cwd, hostile), cwd);
  });

  it("discovery's probe (python -c 'import codeask') imports no codeask/ of the workspace", async () => {
    const problem = await nodeProbe(cwd).check({ command: "python3", args: ["-P", "-m", "codeask", "serve"], source: "codeask.pythonPath" });
    assert.deepEqual(markersWritten(), []);
    assert.match(problem ?? "", /No module named 'codeask'/, "python3 has no codeask: the probe says so");
  });

  it("the base-Python probe (it imports venv and ensurepip) imports none of the workspace's", async () => {
    const base = await findBasePython({ envPath: process.env.PATH ?? "", platform: process.platform }, cwd);
    assert.deepEqual(markersWritten(), []);
    assert.ok("python" in base, JSON.stringify(base));
  });

  it("the installer's venv, pip install ×2 and import check run none of the workspace's modules", { timeout: 600_000 /* a hung-pip guard; ~20 s idle, ~110 s under load 13 */ }, async () => {
    const bundled = readBundledWheel(join(work, "ext"));
    assert.ok(bundled);
    const lines: string[] = [];
    const installed = await installPrivateEnv({
      storageDir: storage,
      cwd,
      bundled,
      basePython: "python3",
      platform: process.platform,
      log: (l) => lines.push(l),
      progress: () => undefined,
    });
    assert.deepEqual(markersWritten(), []);
    assert.ok(installed.ok, `${JSON.stringify(installed)}\n${lines.slice(-10).join("\n")}`);
    assert.equal(await runStreaming("python3", ["-P", "-m", "pip", "--version"], cwd, () => undefined), 0);
    assert.deepEqual(markersWritten(), []);
  });

  it("the server, spawned as the language client spawns a plain Executable, starts outside the workspace", async () => {
    const python = join(storage, "server-env", "bin", "python");
    assert.ok(existsSync(python), "made by the installer test above");
    const exe = serverExecutable({ command: python, args: ["-P", "-m", "codeask", "serve"] }, cwd, process.env);
    const started = await new Promise<{ rc: number; stderr: string }>((resolve) => {
      const child = spawn(exe.command, exe.args, { ...exe.options, stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.on("close", (code) => resolve({ rc: code ?? -1, stderr }));
    });
    assert.deepEqual(markersWritten(), []);
    // The tiny wheel has no codeask.__main__: Python's own "cannot be directly executed".
    assert.match(started.stderr, /codeask' is a package and cannot be directly executed/);
  });
});
