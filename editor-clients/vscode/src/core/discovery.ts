/**
 * Finding the codeask server: which command to run, in which order to try, and the message
 * that tells the user how to fix it when nothing works. Pure: the file system and process
 * probes are passed in.
 */

import { pythonModuleArgs } from "./launch";

export type CandidateSource = "codeask.serverPath" | "codeask.pythonPath" | "Python extension" | "PATH" | "private environment";

export interface Candidate {
  command: string;
  args: string[];
  source: CandidateSource;
}

export interface DiscoveryInput {
  /** `codeask.serverPath` (a `codeask` executable), "" when unset. */
  serverPath: string;
  /** `codeask.pythonPath` (an interpreter with codeask installed), "" when unset. */
  pythonPath: string;
  /** The Python extension's selected interpreter, when that extension is installed. */
  pythonExtensionInterpreter?: string;
  /** The PATH environment variable. */
  envPath: string;
  platform: string;
}

export interface Probe {
  /** Undefined when the candidate can start the server, else why it cannot. */
  check(candidate: Candidate): Promise<string | undefined>;
}

export type Discovery =
  | { ok: true; candidate: Candidate; skipped: string[] }
  | { ok: false; message: string; skipped: string[] };

/** Expand a leading `~` and `${userHome}` the way users write paths in settings. */
export function expandHome(path: string, home: string): string {
  const trimmed = path.trim();
  if (trimmed === "~") return home;
  if (trimmed.startsWith("~/")) return home + trimmed.slice(1);
  return trimmed.replace("${userHome}", home);
}

/** Every `codeask` executable on PATH, in PATH order. */
export function pathCandidates(envPath: string, platform: string): string[] {
  const sep = platform === "win32" ? ";" : ":";
  const names = platform === "win32" ? ["codeask.exe", "codeask.cmd", "codeask"] : ["codeask"];
  const slash = platform === "win32" ? "\\" : "/";
  const dirs = envPath.split(sep).filter((d) => d.length > 0);
  return dirs.flatMap((dir) => names.map((n) => (dir.endsWith(slash) ? dir + n : dir + slash + n)));
}

/**
 * The commands to try, in order. Explicit settings come first and, when set, are the only
 * candidates: a wrong setting must be reported, not silently replaced by something else.
 */
export function candidates(input: DiscoveryInput): Candidate[] {
  if (input.serverPath) {
    return [{ command: input.serverPath, args: ["serve"], source: "codeask.serverPath" }];
  }
  if (input.pythonPath) {
    return [{ command: input.pythonPath, args: pythonModuleArgs("codeask", ["serve"]), source: "codeask.pythonPath" }];
  }
  const found: Candidate[] = [];
  if (input.pythonExtensionInterpreter) {
    found.push({
      command: input.pythonExtensionInterpreter,
      args: pythonModuleArgs("codeask", ["serve"]),
      source: "Python extension",
    });
  }
  for (const exe of pathCandidates(input.envPath, input.platform)) {
    found.push({ command: exe, args: ["serve"], source: "PATH" });
  }
  return found;
}

/** The first candidate that passes the probe, or the message that says how to fix it. */
export async function discover(input: DiscoveryInput, probe: Probe): Promise<Discovery> {
  const skipped: string[] = [];
  const list = candidates(input);
  for (const candidate of list) {
    const problem = await probe.check(candidate);
    if (problem === undefined) return { ok: true, candidate, skipped };
    skipped.push(`${candidate.source}: ${candidate.command}: ${problem}`);
  }
  return { ok: false, message: notFoundMessage(input, skipped), skipped };
}

/** One clear sentence: what was tried and which setting fixes it. */
export function notFoundMessage(input: DiscoveryInput, skipped: string[]): string {
  const detail = skipped.length > 0 ? ` (${skipped[0]})` : "";
  if (input.serverPath) {
    return (
      `codeask: the server at codeask.serverPath "${input.serverPath}" cannot be started${detail}. ` +
      `Set codeask.serverPath to the codeask executable (e.g. .venv/bin/codeask) or clear it.`
    );
  }
  if (input.pythonPath) {
    return (
      `codeask: the Python at codeask.pythonPath "${input.pythonPath}" cannot run codeask${detail}. ` +
      `Run "${input.pythonPath} -m pip install <codeask clone or wheel>" (codeask is not on PyPI yet), ` +
      `or point codeask.pythonPath at the Python that has it.`
    );
  }
  const tried = input.pythonExtensionInterpreter
    ? `the Python extension's interpreter (${input.pythonExtensionInterpreter}) has no codeask and `
    : "";
  return (
    `codeask: language server not found: ${tried}there is no codeask executable on PATH. ` +
    `Run "codeask: Install Server" (a private environment), or pip install a codeask clone or wheel, ` +
    `then set codeask.pythonPath to that Python ` +
    `or codeask.serverPath to the codeask executable.`
  );
}
