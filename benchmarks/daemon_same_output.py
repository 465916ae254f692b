"""`codeask search` through the daemon prints what it prints in-process, on the eval's
questions (issue 43: the daemon answers data, the client renders it).

    python -m benchmarks.daemon_same_output --eval-dir ../shared/eval-search [--repos chi,plug]

Copies each repository's indexed folder (repos.tsv's `benchmark_root`, from the unpacked
sources: see benchmarks/search_eval.py) into a temporary folder, indexes it there with a real
`codeask index` under a private cache and runtime dir, then asks every eval question of that
repository as a real `codeask search` process, text and `--json`: through the daemon (the
console script's light path) and with `--no-daemon`. Exit code 0 when every pair printed the
same stdout and stderr and exited alike, the timing (`"seconds"`, `N results in X ms`) aside.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.search_eval import DEFAULT_WORK, load_repos, sources_dir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval-dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK)
    parser.add_argument("--repos", default="chi,plug", help="comma-separated repos.tsv names")
    args = parser.parse_args()
    repos = load_repos(args.eval_dir / "repos.tsv")
    chosen = [repos[name] for name in args.repos.split(",")]
    sources = sources_dir(args.eval_dir, args.work, chosen)
    queries = [json.loads(line) for line in (args.eval_dir / "queries.jsonl").open()]
    failed = 0
    with tempfile.TemporaryDirectory(prefix="codeask-same-output-") as tmp:
        for repo in chosen:
            questions = [q["query"] for q in queries if q["repo"] == repo.name]
            same, differ = compare(sources / repo.name / repo.root, questions, Path(tmp))
            failed += len(differ)
            print(f"{repo.name}: {same} of {same + len(differ)} outputs identical")
            for argv in differ:
                print(f"  differs: {argv}")
    with open("/proc/loadavg") as load:
        print(f"load average: {load.read().split()[:3]}")
    return 1 if failed else 0


def compare(folder: Path, questions: list[str], tmp: Path) -> tuple[int, list[list[str]]]:
    """(how many lines printed the same both ways, the lines that did not)."""
    work = tmp / folder.name
    shutil.copytree(folder, work, ignore=shutil.ignore_patterns(".codeask", ".git"))
    run_dir = tmp / f"run-{folder.name}"
    run_dir.mkdir(mode=0o700)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"), XDG_RUNTIME_DIR=str(run_dir))
    env["CODEASK_DAEMON__ENABLED"] = "true"
    subprocess.run(codeask("index", str(work)), env=env, check=True, timeout=3600)
    same, differ = 0, []
    try:
        for question in questions:
            for argv in (["search", question], ["search", question, "--json"]):
                through = output(argv, work, env)
                if "daemon unavailable" in through[2]:
                    raise SystemExit(f"the daemon did not answer {argv}: {through[2]}")
                if through == output([*argv, "--no-daemon"], work, env):
                    same += 1
                else:
                    differ.append(argv)
    finally:
        subprocess.run(codeask("daemon", "--stop"), env=env, capture_output=True, timeout=60)
    return same, differ


def output(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `codeask ARGV`, its timing masked."""
    done = subprocess.run(
        codeask(*argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    stdout = re.sub(r'"seconds": [0-9.e-]+', '"seconds": 0', done.stdout)
    return done.returncode, stdout, re.sub(r" results in \d+ ms", " results in _ ms", done.stderr)


def codeask(*args: str) -> list[str]:
    """`python -m codeask ARGS`: the console script's entry (the light path first)."""
    return [sys.executable, "-m", "codeask", *args]


if __name__ == "__main__":
    raise SystemExit(main())
