"""`codeask search` through the per-user daemon versus in-process (issue 29).

    python -m benchmarks.daemon_bench [--repo PATH] [--runs 20] [--full] [--json]

Copies the repository (default: flask 2.2.3 from the eval cache, else this checkout's
`server/`) into a temporary folder, indexes it there (`--full`: with the MiniLM tier) under a
private cache and runtime dir, then runs the same queries as real `codeask search`
subprocesses: through the daemon (started by the first of them, then warm) and with
`--no-daemon`. For each: wall time per command (p50, p90), CPU seconds (user + system) and
peak RSS of the client process (wait4's rusage), plus the daemon's own RSS afterwards. The
outputs of both ways are compared: every query must print the same hits. `python -c pass`
under the same conditions is the floor any command pays (the load average is printed too).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TIME = "/usr/bin/time"
FLASK = Path.home() / ".cache" / "codeask-eval" / "src" / "flask-2.2.3"
QUERIES = (
    "url routing rule",
    "session cookie signing",
    "render a template with context",
    "register a blueprint",
    "json response",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = FLASK if FLASK.is_dir() else Path(__file__).resolve().parent.parent / "server"
    parser.add_argument("--repo", type=Path, default=default)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--full", action="store_true", help="index the MiniLM tier too")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codeask-daemon-bench-") as tmp:
        report = bench(args.repo, Path(tmp), runs=args.runs, full=args.full)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0 if report["same_output"] else 1


def bench(repo: Path, tmp: Path, *, runs: int, full: bool) -> dict[str, Any]:
    work = tmp / repo.name
    shutil.copytree(repo, work, ignore=shutil.ignore_patterns(".codeask", ".git"))
    run_dir = tmp / "run"
    run_dir.mkdir(mode=0o700)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"), XDG_RUNTIME_DIR=str(run_dir))
    env["CODEASK_DAEMON__ENABLED"] = "true"
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: imports from cached bytecode
    started = time.perf_counter()
    index = ["index", str(work), *(["--full"] if full else [])]
    subprocess.run(codeask(*index), env=env, check=True, capture_output=True)
    indexed = time.perf_counter() - started
    try:
        first = measure(["search", QUERIES[0]], work, env)  # starts the daemon
        daemon = [measure(["search", QUERIES[i % len(QUERIES)]], work, env) for i in range(runs)]
        local = [
            measure(["search", QUERIES[i % len(QUERIES)], "--no-daemon"], work, env)
            for i in range(runs)
        ]
        daemon_rss = daemon_rss_mb(work, env)
        bare = [measure([], work, env, command=[sys.executable, "-c", "pass"]) for _ in range(runs)]
    finally:
        subprocess.run(codeask("daemon", "--stop"), env=env, capture_output=True, timeout=30)
    same = all(d["stdout"] == n["stdout"] for d, n in zip(daemon, local, strict=True))
    notes = sorted(
        {line for run in daemon for line in run["stderr"].splitlines() if "daemon" in line}
    )
    return {
        "repo": str(repo),
        "tiers": "lexical+static+minilm" if full else "lexical+static",
        "index_seconds": round(indexed, 1),
        "runs": runs,
        "first_call_with_daemon_start": summary([first]),
        "through_daemon": summary(daemon),
        "in_process": summary(local),
        "python_startup": summary(bare),
        "daemon_rss_mb": daemon_rss,
        "same_output": same,
        "daemon_notes": notes,
        "load_average": os.getloadavg(),
    }


def codeask(*args: str) -> list[str]:
    return [sys.executable, "-m", "codeask", *args]


def measure(
    args: list[str], cwd: Path, env: dict[str, str], *, command: list[str] | None = None
) -> dict[str, Any]:
    """One `codeask` process under /usr/bin/time: wall (ours), CPU (user + system) and peak
    RSS (time's %M: the kernel's maxrss of a direct child of this process would also count
    this process's pages, kept across fork and exec)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        subprocess.run(
            [TIME, "-f", "codeask-time %U %S %M", *(command or codeask(*args))],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=err,
            check=False,
        )
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        out_text, stderr = out.read().decode(), err.read().decode()
    lines = stderr.splitlines()
    user, system, peak_kb = lines[-1].split()[1:]
    return {
        "wall": wall,
        "cpu": float(user) + float(system),
        "rss_mb": int(peak_kb) / 1024,
        "stdout": out_text,
        "stderr": "\n".join(lines[:-1]),
    }


def daemon_rss_mb(cwd: Path, env: dict[str, str]) -> float | None:
    status = subprocess.run(codeask("daemon", "--status"), cwd=cwd, env=env, capture_output=True)
    if status.returncode:
        return None
    pid = json.loads(status.stdout)["pid"]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def summary(runs: list[dict[str, Any]]) -> dict[str, float]:
    walls = sorted(r["wall"] for r in runs)
    return {
        "wall_p50_ms": round(statistics.median(walls) * 1000, 1),
        "wall_p90_ms": round(walls[min(len(walls) - 1, int(len(walls) * 0.9))] * 1000, 1),
        "cpu_p50_s": round(statistics.median(r["cpu"] for r in runs), 3),
        "rss_p50_mb": round(statistics.median(r["rss_mb"] for r in runs), 1),
        "rss_max_mb": round(max(r["rss_mb"] for r in runs), 1),
    }


def print_report(report: dict[str, Any]) -> None:
    print(f"{report['repo']} ({report['tiers']}), {report['runs']} runs each")
    print(f"{'':32} {'p50 wall':>9} {'p90 wall':>9} {'CPU-s':>7} {'client RSS':>11}")
    for key in ("first_call_with_daemon_start", "through_daemon", "in_process", "python_startup"):
        s = report[key]
        print(
            f"{key:32} {s['wall_p50_ms']:>7.0f}ms {s['wall_p90_ms']:>7.0f}ms "
            f"{s['cpu_p50_s']:>7.3f} {s['rss_p50_mb']:>8.1f} MB"
        )
    print(f"daemon RSS after the runs: {report['daemon_rss_mb']} MB")
    print(f"same hits both ways: {report['same_output']}; load average {report['load_average']}")
    for note in report["daemon_notes"]:
        print(f"  note: {note}")


if __name__ == "__main__":
    raise SystemExit(main())
