/**
 * The private server environment: when no codeask server is found, the extension can create a
 * Python venv under its global storage and install the codeask wheel it carries (`server/` in
 * the .vsix). This module holds the decisions (which Python, whether the env is current, which
 * commands to run, what to tell the user); `bootstrap.ts` runs them. Pure: no I/O here.
 */

import { pythonCodeArgs, pythonModuleArgs } from "./launch";

/** The oldest Python the server supports (pyproject's requires-python). */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

/** The folder under the extension's global storage that holds the venv. */
export const ENV_DIR = "server-env";
/** Written into the env after a successful install: which wheel it holds. */
export const STAMP_FILE = "codeask-bundled.json";
/** The install log, next to the env. */
export const LOG_FILE = "server-install.log";

export interface BundledWheel {
  /** File name, e.g. codeask-0.1.0-py3-none-any.whl. */
  file: string;
  version: string;
}

/** What the stamp file records, and what the bundled wheel is compared with. */
export interface WheelStamp {
  file: string;
  version: string;
  sha256: string;
}

/** The codeask wheel among the files of the extension's `server/` folder (highest version). */
export function bundledWheel(names: string[]): BundledWheel | undefined {
  const wheels = names
    .map((file) => ({ file, m: /^codeask-([^-]+)-[^-]+-[^-]+-[^-]+\.whl$/.exec(file) }))
    .filter((w): w is { file: string; m: RegExpExecArray } => w.m !== null)
    .map((w) => ({ file: w.file, version: w.m[1] }));
  wheels.sort((a, b) => compareVersions(b.version, a.version));
  return wheels[0];
}

/** Numeric comparison of dotted versions (non-numeric parts compare as text). */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.+-]/);
  const pb = b.split(/[.+-]/);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const x = pa[i] ?? "0";
    const y = pb[i] ?? "0";
    const nx = Number(x);
    const ny = Number(y);
    const d = Number.isNaN(nx) || Number.isNaN(ny) ? x.localeCompare(y) : nx - ny;
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

export type EnvState = "ready" | "missing" | "outdated";

/**
 * Whether the private env can be used as is. "outdated" (another wheel than the bundled one,
 * e.g. after an extension update) means reinstall without asking again: the user agreed once.
 */
export function envState(stamp: WheelStamp | undefined, bundled: WheelStamp, envPythonExists: boolean): EnvState {
  if (!envPythonExists || !stamp) return envPythonExists ? "outdated" : "missing";
  return stamp.file === bundled.file && stamp.sha256 === bundled.sha256 ? "ready" : "outdated";
}

/** Parses the stamp file's text; undefined when absent or malformed. */
export function parseStamp(text: string | undefined): WheelStamp | undefined {
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as Partial<WheelStamp>;
    if (typeof v.file === "string" && typeof v.version === "string" && typeof v.sha256 === "string") {
      return { file: v.file, version: v.version, sha256: v.sha256 };
    }
  } catch {
    // fall through: a broken stamp means "reinstall"
  }
  return undefined;
}

/** The venv's interpreter. */
export function envPython(envDir: string, platform: string): string {
  return platform === "win32" ? `${envDir}\\Scripts\\python.exe` : `${envDir}/bin/python`;
}

export interface PythonSearch {
  /** `codeask.pythonPath` or the Python extension's interpreter, when there is one. */
  interpreter?: string;
  envPath: string;
  platform: string;
}

/** Interpreters that could create the venv, in order: the selected one, python3, python on PATH. */
export function basePythonCandidates(input: PythonSearch): string[] {
  const win = input.platform === "win32";
  const names = win ? ["python.exe", "python3.exe"] : ["python3", "python"];
  const slash = win ? "\\" : "/";
  const dirs = input.envPath.split(win ? ";" : ":").filter((d) => d.length > 0);
  const found: string[] = input.interpreter ? [input.interpreter] : [];
  for (const name of names) {
    for (const dir of dirs) found.push(dir.endsWith(slash) ? dir + name : dir + slash + name);
  }
  return [...new Set(found)];
}

/** What the probe script prints: the version, then whether venv + ensurepip import. */
export const PYTHON_PROBE_SCRIPT = [
  "import sys",
  "print('%d.%d.%d' % sys.version_info[:3])",
  "try:",
  "    import venv, ensurepip",
  "    print('venv')",
  "except ImportError:",
  "    print('no-venv')",
].join("\n");

/** Undefined when the probe output shows a usable Python, else why not. */
export function judgePython(probeOutput: string): string | undefined {
  const [versionLine, venvLine] = probeOutput.trim().split(/\r?\n/);
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(versionLine ?? "");
  if (!m) return `unexpected output "${probeOutput.trim().slice(0, 80)}"`;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  if (major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
    return `Python ${versionLine} is older than ${MIN_PYTHON.join(".")}`;
  }
  if (venvLine !== "venv") return `Python ${versionLine} cannot create a venv (Debian/Ubuntu: apt-get install python3-venv)`;
  return undefined;
}

/** When no interpreter fits: each one tried and why it was skipped. */
export function noPythonMessage(tried: string[]): string {
  const list = tried.length > 0 ? tried.join("; ") : "no python3 or python on PATH";
  return (
    `codeask: cannot create the server environment: no Python ≥ ${MIN_PYTHON.join(".")} with venv found ` +
    `(tried: ${list}). Install Python ${MIN_PYTHON.join(".")} or newer, or set codeask.pythonPath to one that has codeask.`
  );
}

export interface InstallStep {
  /** Shown in the progress notification. */
  title: string;
  command: string;
  args: string[];
}

/**
 * The commands that (re)build the env: create the venv when it has no interpreter, install the
 * wheel with its dependencies from PyPI, then force the bundled wheel itself over any
 * same-version install (dependencies untouched), then check the import.
 */
export function installSteps(basePython: string, envDir: string, wheelPath: string, platform: string, fresh: boolean): InstallStep[] {
  const py = envPython(envDir, platform);
  const pip = (args: string[]) => pythonModuleArgs("pip", ["--disable-pip-version-check", "--no-input", ...args]);
  const steps: InstallStep[] = [];
  if (fresh) steps.push({ title: "creating a Python environment", command: basePython, args: pythonModuleArgs("venv", ["--clear", envDir]) });
  steps.push(
    {
      title: "installing codeask's dependencies from PyPI (first time: a few minutes)",
      command: py,
      args: pip(["install", wheelPath]),
    },
    {
      title: "installing the bundled codeask",
      command: py,
      args: pip(["install", "--force-reinstall", "--no-deps", wheelPath]),
    },
    { title: "checking the installation", command: py, args: pythonCodeArgs("import codeask.cli") },
  );
  return steps;
}

/** The failure notification: which step, its last output line, and where the whole log is. */
export function installFailedMessage(step: string, lastLines: string[], logPath: string): string {
  const last = lastLines.filter((l) => l.trim()).slice(-1)[0]?.trim();
  const why = last ? `: ${last.slice(0, 300)}` : "";
  return (
    `codeask: installing the server failed while ${step}${why}. ` +
    `Full log: ${logPath}. Without network access to PyPI the dependencies cannot be installed; ` +
    `you can instead install codeask yourself and set codeask.pythonPath.`
  );
}

/** The question asked before installing. */
export function installPrompt(version: string, storageDir: string): string {
  return (
    `codeask: no codeask server found. Install codeask ${version} into a private Python environment ` +
    `(${storageDir})? Its dependencies come from PyPI; the first install takes a few minutes.`
  );
}

export type Resolution =
  /** A server was found (setting, interpreter or PATH): start it. */
  | "start-found"
  /** The private env is current: start it. */
  | "start-private"
  /** Install (or upgrade) the private env now, then start it. */
  | "install"
  /** Ask the user first. */
  | "ask"
  /** Report that nothing was found (explicit setting broken, no wheel, or the user said no). */
  | "report";

export interface ResolutionInput {
  /** Discovery (explicit setting → interpreter → PATH) found a server. */
  found: boolean;
  /** codeask.serverPath or codeask.pythonPath is set (then its failure is reported, never replaced). */
  explicit: boolean;
  /** The .vsix carries a wheel. */
  hasWheel: boolean;
  env: EnvState;
  /** codeask.autoInstallServer. */
  autoInstall: boolean;
  /** The user asked for it now (Install Server command, Install / Retry button). */
  requested: boolean;
  /** An install already failed in this session: do not retry on its own (no crash loop). */
  failedBefore: boolean;
}

/** Explicit setting → interpreter → PATH → private env (current) → install (asked, or not). */
export function resolve(input: ResolutionInput): Resolution {
  if (input.requested && input.hasWheel && !input.explicit) return "install";
  if (input.found) return "start-found";
  if (input.explicit || !input.hasWheel) return "report";
  if (input.env === "ready") return "start-private";
  if (input.failedBefore) return "report";
  if (input.env === "outdated" || input.autoInstall) return "install";
  return "ask";
}
