/**
 * Checks server candidates for real (an executable file, or a Python that can import codeask)
 * and picks the directory every process starts in. Node only, no vscode API, so the unit tests
 * run it with real interpreters in a hostile working directory.
 */

import { execFile } from "node:child_process";
import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import type { Candidate, Probe } from "./core/discovery";
import { chooseLaunchDir, isPythonLaunch, isRelativePath, pythonCodeArgs, pythonProblem } from "./core/launch";

const PROBE_TIMEOUT_MS = 20000;
/** A relative path left unresolved: the workspace is not trusted (Restricted Mode). */
const RELATIVE_UNTRUSTED = "a relative path, not taken from an untrusted workspace (trust it, or set an absolute path)";

/**
 * The working directory for the server, the probes and the installer: the extension's global
 * storage (created if needed), else the temp dir, whichever is outside every workspace folder.
 */
export function launchDir(storageDir: string, workspaceFolders: string[]): string {
  try {
    mkdirSync(storageDir, { recursive: true });
  } catch {
    // unusable: the temp dir below
  }
  const usable = [storageDir, tmpdir()].filter((dir) => {
    try {
      return statSync(dir).isDirectory();
    } catch {
      return false;
    }
  });
  return chooseLaunchDir(usable, workspaceFolders);
}

/** A probe whose Python runs start in `cwd` with `-P`. */
export function nodeProbe(cwd: string): Probe {
  return {
    async check(candidate: Candidate): Promise<string | undefined> {
      if (isRelativePath(candidate.command)) return RELATIVE_UNTRUSTED;
      if (isPythonLaunch(candidate.args)) return pythonHasCodeask(candidate.command, cwd);
      return executableProblem(candidate.command);
    },
  };
}

function executableProblem(path: string): string | undefined {
  try {
    if (!statSync(path).isFile()) return "not a file";
    accessSync(path, constants.X_OK);
    return undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? "not found" : "not executable";
  }
}

function pythonHasCodeask(python: string, cwd: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(python, pythonCodeArgs("import codeask"), { timeout: PROBE_TIMEOUT_MS, cwd }, (error, _stdout, stderr) => {
      if (!error) return resolve(undefined);
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return resolve("not found");
      resolve(pythonProblem(String(stderr), error.message));
    });
  });
}
