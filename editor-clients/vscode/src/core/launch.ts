/**
 * How the extension starts Python and the server, so that opening a repository never runs its
 * code. `python -m X` and `python -c ...` put the working directory first on `sys.path`: a
 * repository holding `codeask/__init__.py` (or `pip/`, `venv/`, `ensurepip/`, or any package the
 * server imports, such as `pygls/`) would be imported instead of the real one when Python starts
 * in the workspace, which is where the language client starts its server by default. Two rules,
 * each enough on its own, both kept: every Python launch carries `-P`, and every process starts
 * in a directory outside the workspace folders. Pure: no I/O here.
 */

import { isAbsolute, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * `-P` (Python 3.11+, the oldest the server supports): do not prepend the script's directory or
 * the working directory to `sys.path`. Not `-I`: that also drops PYTHONPATH, the user site
 * (a `pip install --user codeask`) and every PYTHON* variable (PYTHONUNBUFFERED, which the
 * server's stdio relies on, PYTHONUTF8...), all of which come from the user's environment, not
 * from the repository, and which a working setup may need.
 */
export const SAFE_PATH_FLAG = "-P";

/** Arguments for `python -P -m <module> <args...>`. */
export function pythonModuleArgs(module: string, args: string[] = []): string[] {
  return [SAFE_PATH_FLAG, "-m", module, ...args];
}

/** Arguments for `python -P -c <code>`. */
export function pythonCodeArgs(code: string): string[] {
  return [SAFE_PATH_FLAG, "-c", code];
}

/** Whether these arguments start Python (as opposed to a `codeask` executable). */
export function isPythonLaunch(args: string[]): boolean {
  return args[0] === SAFE_PATH_FLAG && (args[1] === "-m" || args[1] === "-c");
}

/** What a Python older than 3.11 prints for `-P`, turned into a sentence that names the fix. */
export function pythonProblem(stderr: string, fallback: string): string {
  if (/unknown option:? -P\b/i.test(stderr)) {
    return "Python older than 3.11 (no -P option; codeask needs Python 3.11 or newer)";
  }
  return stderr.trim().split("\n").pop() || fallback;
}

/** Local paths of the workspace folders (non-file URIs have none). */
export function folderPaths(uris: string[]): string[] {
  const paths: string[] = [];
  for (const uri of uris) {
    if (!uri.startsWith("file:")) continue;
    try {
      paths.push(fileURLToPath(uri));
    } catch {
      // not a local path
    }
  }
  return paths;
}

/** Whether `path` is `folder` or lies under it. */
export function isInside(path: string, folder: string): boolean {
  const rel = relative(resolve(folder), resolve(path));
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * The working directory for every process the extension starts: the first candidate (the
 * extension's global storage, then the temp dir) that is not inside a workspace folder, else
 * the file system root.
 */
export function chooseLaunchDir(candidates: string[], workspaceFolders: string[], root = "/"): string {
  for (const dir of candidates) {
    if (dir && !workspaceFolders.some((folder) => isInside(dir, folder))) return dir;
  }
  return root;
}

/**
 * A program inside a workspace folder that is not trusted (e.g. the Python extension picking
 * the repository's own `.venv/bin/python`): it is the repository's code, so it is not run.
 */
export function untrustedWorkspaceProgram(program: string, workspaceFolders: string[], trusted: boolean): boolean {
  return !trusted && isAbsolute(program) && workspaceFolders.some((folder) => isInside(program, folder));
}

/** A path with a directory part that is not absolute (`.venv/bin/codeask`; not `python3`). */
export function isRelativePath(path: string): boolean {
  return Boolean(path) && !isAbsolute(path) && /[\\/]/.test(path);
}

/**
 * A relative codeask.serverPath / codeask.pythonPath (e.g. `.venv/bin/codeask`) meant the first
 * workspace folder while the server started there; it is resolved against that folder
 * explicitly now that nothing starts in the workspace, and only in a trusted workspace (pass
 * no folder otherwise: the probe then reports the relative path). Bare names stay for PATH.
 */
export function resolveSettingPath(path: string, trustedFirstFolder: string | undefined): string {
  if (!isRelativePath(path) || !trustedFirstFolder) return path;
  return resolve(trustedFirstFolder, path);
}

/** The language client's ServerOptions for a candidate: no shell, its own cwd and env. */
export interface ServerExecutable {
  command: string;
  args: string[];
  options: { cwd: string; env: Record<string, string | undefined> };
}

/**
 * The server process. No `transport`: TransportKind.stdio would append `--stdio` to the
 * arguments, and a plain Executable already talks over stdin/stdout. `cwd` is always set: the
 * language client would otherwise start the server in the first workspace folder.
 */
export function serverExecutable(
  candidate: { command: string; args: string[] },
  cwd: string,
  baseEnv: Record<string, string | undefined>,
): ServerExecutable {
  const env = { ...baseEnv, PYTHONUNBUFFERED: "1" };
  return { command: candidate.command, args: [...candidate.args], options: { cwd, env } };
}
