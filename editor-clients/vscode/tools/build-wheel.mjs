// Builds the codeask wheel the .vsix carries (server/codeask-<version>-py3-none-any.whl): the
// extension installs it into a private environment when no server is found. Only the wheel
// itself (--no-deps); its dependencies come from PyPI at install time.
// Python: $CODEASK_BUILD_PYTHON, else the repo's .venv, else python3. Usage: node tools/build-wheel.mjs
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const EXT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const REPO = resolve(EXT, "../..");
const OUT = join(EXT, "server");
const venv = join(REPO, ".venv/bin/python");
const python = process.env.CODEASK_BUILD_PYTHON || (existsSync(venv) ? venv : "python3");

mkdirSync(OUT, { recursive: true });
for (const name of readdirSync(OUT)) if (name.endsWith(".whl")) rmSync(join(OUT, name));
const started = Date.now();
const run = spawnSync(
  python,
  ["-m", "pip", "wheel", REPO, "--no-deps", "--no-input", "--disable-pip-version-check", "-q", "-w", OUT],
  { encoding: "utf8" },
);
const wheels = readdirSync(OUT).filter((n) => /^codeask-.*\.whl$/.test(n));
if (run.status !== 0 || wheels.length !== 1) {
  process.stderr.write(run.stdout ?? "");
  process.stderr.write(run.stderr ?? String(run.error ?? ""));
  console.error(`build-wheel: "${python} -m pip wheel ${REPO} --no-deps" failed (exit ${run.status}); found ${wheels.join(", ") || "no wheel"}`);
  process.exit(1);
}
console.error(`build-wheel: server/${wheels[0]} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
