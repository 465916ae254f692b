/**
 * Runs the private server environment's install (the decisions are in core/bootstrap.ts):
 * reads the bundled wheel, probes interpreters, and streams `python -m venv` / `pip install`
 * output line by line to the log. Node only, no vscode API, so the unit tests run it for real.
 * Every process starts with `-P` in a directory outside the workspace (core/launch.ts).
 */

import { spawn, execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  ENV_DIR,
  type EnvState,
  LOG_FILE,
  PYTHON_PROBE_SCRIPT,
  STAMP_FILE,
  type PythonSearch,
  type WheelStamp,
  basePythonCandidates,
  bundledWheel,
  envPython,
  envState,
  installFailedMessage,
  installSteps,
  judgePython,
  noPythonMessage,
  parseStamp,
} from "./core/bootstrap";
import { pythonCodeArgs, pythonProblem } from "./core/launch";

const PROBE_TIMEOUT_MS = 20000;

export interface Bundled {
  stamp: WheelStamp;
  path: string;
}

/** The wheel in `<extension>/server/`, with its sha256; undefined when the build has none. */
export function readBundledWheel(extensionDir: string): Bundled | undefined {
  const dir = join(extensionDir, "server");
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  const wheel = bundledWheel(names);
  if (!wheel) return undefined;
  const path = join(dir, wheel.file);
  const sha256 = createHash("sha256").update(readFileSync(path)).digest("hex");
  return { stamp: { ...wheel, sha256 }, path };
}

/** Where the env, its stamp and the install log live under the extension's global storage. */
export function envPaths(storageDir: string, platform: string): { envDir: string; python: string; stamp: string; log: string } {
  const envDir = join(storageDir, ENV_DIR);
  return { envDir, python: envPython(envDir, platform), stamp: join(envDir, STAMP_FILE), log: join(storageDir, LOG_FILE) };
}

/** Whether the private env holds the bundled wheel. */
export function privateEnvState(storageDir: string, bundled: WheelStamp, platform: string): EnvState {
  const paths = envPaths(storageDir, platform);
  let text: string | undefined;
  try {
    text = readFileSync(paths.stamp, "utf8");
  } catch {
    text = undefined;
  }
  return envState(parseStamp(text), bundled, existsSync(paths.python));
}

/** Runs the probe script with one interpreter in `cwd`: its output, or why it could not run. */
function probePython(python: string, cwd: string): Promise<{ out?: string; problem?: string }> {
  return new Promise((resolve) => {
    execFile(python, pythonCodeArgs(PYTHON_PROBE_SCRIPT), { timeout: PROBE_TIMEOUT_MS, cwd }, (error, stdout, stderr) => {
      if (!error) return resolve({ out: String(stdout) });
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return resolve({ problem: "not found" });
      resolve({ problem: pythonProblem(String(stderr), error.message) });
    });
  });
}

/**
 * The first interpreter that can create the venv, or the message naming every one tried. The
 * probes run in `cwd` (outside the workspace: the probe imports `venv` and `ensurepip`).
 */
export async function findBasePython(search: PythonSearch, cwd: string): Promise<{ python: string } | { message: string }> {
  const tried: string[] = [];
  for (const python of basePythonCandidates(search)) {
    if (python !== search.interpreter && !existsSync(python)) continue;
    const probe = await probePython(python, cwd);
    const problem = probe.problem ?? judgePython(probe.out ?? "");
    if (problem === undefined) return { python };
    tried.push(`${python}: ${problem}`);
  }
  return { message: noPythonMessage(tried) };
}

export interface InstallOptions {
  storageDir: string;
  bundled: Bundled;
  basePython: string;
  platform: string;
  /** Where venv / pip run: outside the workspace (core/launch.ts chooseLaunchDir). */
  cwd: string;
  /** Each output line (also written to the log file). */
  log: (line: string) => void;
  /** The current step, and the latest notable pip line ("Collecting numpy", "Building wheel..."). */
  progress: (message: string) => void;
  signal?: AbortSignal;
}

export type InstallResult = { ok: true; python: string } | { ok: false; message: string; cancelled: boolean };

/** Creates (or refreshes) the env and installs the bundled wheel; writes the stamp on success. */
export async function installPrivateEnv(options: InstallOptions): Promise<InstallResult> {
  const paths = envPaths(options.storageDir, options.platform);
  mkdirSync(options.storageDir, { recursive: true });
  const file = createWriteStream(paths.log, { flags: "w" });
  const log = (line: string) => {
    file.write(`${line}\n`);
    options.log(line);
  };
  try {
    log(`codeask: installing ${options.bundled.stamp.file} into ${paths.envDir} (${new Date().toISOString()})`);
    const fresh = !existsSync(paths.python);
    for (const step of installSteps(options.basePython, paths.envDir, options.bundled.path, options.platform, fresh)) {
      options.progress(step.title);
      log(`$ ${[step.command, ...step.args].join(" ")}`);
      const tail: string[] = [];
      const rc = await runStreaming(step.command, step.args, options.cwd, (line) => {
        log(line);
        tail.push(line);
        if (tail.length > 20) tail.shift();
        if (/^(Collecting|Building wheel|Installing collected|Successfully installed)/.test(line.trim())) {
          options.progress(`${step.title}: ${line.trim().slice(0, 80)}`);
        }
      }, options.signal);
      if (options.signal?.aborted) {
        // A half-made fresh env would count as "outdated" and be reinstalled without asking.
        if (fresh) rmSync(paths.envDir, { recursive: true, force: true });
        return { ok: false, message: `codeask: server install cancelled. Log: ${paths.log}`, cancelled: true };
      }
      if (rc !== 0) {
        log(`exit code ${rc}`);
        return { ok: false, message: installFailedMessage(step.title, tail, paths.log), cancelled: false };
      }
    }
    writeFileSync(paths.stamp, JSON.stringify(options.bundled.stamp, null, 2));
    log("codeask: server environment ready");
    return { ok: true, python: paths.python };
  } finally {
    await new Promise<void>((resolve) => file.end(resolve));
  }
}

/**
 * Runs a command in `cwd` (outside the workspace), handing every stdout/stderr
 * line to `onLine`; resolves with the exit code.
 */
export function runStreaming(
  command: string,
  args: string[],
  cwd: string,
  onLine: (line: string) => void,
  signal?: AbortSignal,
): Promise<number> {
  return new Promise((resolve) => {
    const env = { ...process.env, PYTHONUNBUFFERED: "1", PIP_DISABLE_PIP_VERSION_CHECK: "1", PIP_NO_INPUT: "1" };
    const child = spawn(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], signal });
    const split = () => {
      let rest = "";
      return {
        push: (chunk: Buffer) => {
          const lines = (rest + chunk.toString("utf8")).split(/\r?\n/);
          rest = lines.pop() ?? "";
          for (const line of lines) onLine(line);
        },
        flush: () => rest && onLine(rest),
      };
    };
    const out = split();
    const err = split();
    child.stdout.on("data", out.push);
    child.stderr.on("data", err.push);
    // A command that cannot start (ENOENT) or an abort ends here; "close" may not follow.
    child.on("error", (error) => {
      onLine(`${command}: ${error.message}`);
      resolve(-1);
    });
    child.on("close", (code) => {
      out.flush();
      err.flush();
      resolve(code ?? -1);
    });
  });
}
