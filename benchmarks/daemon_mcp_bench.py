"""Three `codeask mcp` on one repository: forwarders to the per-user daemon versus three
servers in their own processes (issue 29, step 2).

    python -m benchmarks.daemon_mcp_bench [--repo PATH] [--agents 3] [--calls 30] [--minilm]
                                          [--json]

Copies the repository (default: flask 2.2.3 from the eval cache, else this checkout's
`server/`) into a temporary folder with a private cache and runtime dir, static vectors only
(`embed.tiers = ["static"]`; `--minilm`: both tiers, measured once the MiniLM backlog is
embedded and the query model loaded, so both ways answer with the same tiers). For
each way it starts the agents' `codeask mcp` processes (a raw JSON-RPC client per process,
as an agent drives them), waits until index_status says ready, then calls search_code
round-robin. Reported: each process's RSS (VmRSS, and the daemon's), their total, and the
p50/p90 of a search_code call seen by the agent. The hits of both ways are compared.
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

from benchmarks.daemon_bench import FLASK, QUERIES  # the same corpus and questions as the CLI bench

READY_SECONDS = 600.0


class Agent:
    """One `codeask mcp` process driven over raw JSON-RPC lines."""

    def __init__(self, cwd: Path, env: dict[str, str], log: Path) -> None:
        self.spawned = time.perf_counter()
        self.initialized = 0.0
        """Seconds from the spawn to the `initialize` answer (the agent's wait to start)."""
        with log.open("ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "codeask", "mcp"],
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        self._id = 0

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._id += 1
        line = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        assert answer.get("id") == self._id, answer
        return answer

    def start(self) -> Agent:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        }
        assert "result" in self.request("initialize", init)
        self.initialized = time.perf_counter() - self.spawned
        assert self.proc.stdin is not None
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()
        return self

    def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        answer = self.request("tools/call", {"name": name, "arguments": arguments})
        result = answer["result"]
        assert not result.get("isError"), result
        return json.loads(result["content"][0]["text"])

    def wait_ready(self, tiers: list[str]) -> None:
        """Indexed with every tier, and (with MiniLM) the query model loaded: searches use it."""
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            folders = self.tool("index_status")["folders"]
            if all(
                f["state"] in ("ready", "following")
                and f.get("chunks")
                and all(t["done"] == t["total"] for t in f["tiers"].values())
                for f in folders
            ):
                answered = self.tool("search_code", query=QUERIES[0])["index"]["tiers_answered"]
                if "minilm" not in tiers or "minilm" in answered:
                    return
            time.sleep(0.5)
        raise TimeoutError("the index did not become ready")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds `pid` has used so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 2)


def children_rss(pid: int, daemon: int | None) -> float:
    """RSS of `pid`'s child processes (a forwarder's child when it had to serve itself), but
    the daemon's (the first forwarder starts it, detached: counted once, as the daemon)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and int(entry.name) != daemon:
            total += rss_mb(int(entry.name))
    return total


def daemon_pid(run_dir: Path) -> int | None:
    from codeask.daemon.paths import LOCK_NAME
    from codeask.daemon.server import lock_holder

    return lock_holder(run_dir / "codeask" / LOCK_NAME)


def one_way(
    work: Path,
    env: dict[str, str],
    run_dir: Path,
    log: Path,
    *,
    agents: int,
    calls: int,
    tiers: list[str],
) -> dict[str, Any]:
    started = [Agent(work, env, log).start() for _ in range(agents)]
    try:
        for agent in started:
            agent.wait_ready(tiers)
        hits: dict[str, list[list[tuple[str, str]]]] = {}  # every answer, compared
        seconds = []
        for i in range(calls):
            agent = started[i % agents]
            query = QUERIES[i % len(QUERIES)]
            begun = time.perf_counter()
            found = agent.tool("search_code", query=query)
            seconds.append(time.perf_counter() - begun)
            hits.setdefault(query, []).append([(r["path"], r["lines"]) for r in found["results"]])
        time.sleep(1.0)  # settle: RSS after the calls, not mid-answer
        daemon = daemon_pid(run_dir)
        processes = [rss_mb(a.proc.pid) + children_rss(a.proc.pid, daemon) for a in started]
        cpu = [cpu_seconds(a.proc.pid) for a in started]
        daemon_rss = rss_mb(daemon) if daemon else 0.0
        daemon_cpu = cpu_seconds(daemon) if daemon else 0.0
    finally:
        for agent in started:
            agent.close()
    ordered = sorted(seconds)
    return {
        "initialize_ms": [round(a.initialized * 1000) for a in started],
        "agent_rss_mb": processes,
        "agent_cpu_seconds": cpu,
        "daemon_rss_mb": daemon_rss,
        "daemon_cpu_seconds": daemon_cpu,
        "total_rss_mb": round(sum(processes) + daemon_rss, 1),
        "call_p50_ms": round(statistics.median(ordered) * 1000, 1),
        "call_p90_ms": round(ordered[int(len(ordered) * 0.9) - 1] * 1000, 1),
        "hits": hits,
    }


def bench(repo: Path, tmp: Path, *, agents: int, calls: int, tiers: list[str]) -> dict[str, Any]:
    work = tmp / repo.name
    shutil.copytree(repo, work, ignore=shutil.ignore_patterns(".codeask", ".git"))
    run_dir = tmp / "run"
    run_dir.mkdir(mode=0o700)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"), XDG_RUNTIME_DIR=str(run_dir))
    env["CODEASK_EMBED__TIERS"] = json.dumps(tiers)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    log = tmp / "agents.log"
    subprocess.run(
        [sys.executable, "-m", "codeask", "index", str(work)], env=env, check=True, cwd=work
    )
    local_env = dict(env, CODEASK_DAEMON__ENABLED="false")
    local = one_way(work, local_env, run_dir, log, agents=agents, calls=calls, tiers=tiers)
    daemon_env = dict(env, CODEASK_DAEMON__ENABLED="true")
    try:
        forwarded = one_way(work, daemon_env, run_dir, log, agents=agents, calls=calls, tiers=tiers)
    finally:
        subprocess.run(
            [sys.executable, "-m", "codeask", "daemon", "--stop"],
            env=daemon_env,
            capture_output=True,
            timeout=60,
        )
    same = local.pop("hits") == forwarded.pop("hits")
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "repo": str(repo),
        "agents": agents,
        "tiers": tiers,
        "calls": calls,
        "in_process": local,
        "forwarded": forwarded,
        "same_hits": same,
        "fallback_notes": log.read_text().count("daemon unavailable"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = FLASK if FLASK.is_dir() else Path(__file__).resolve().parent.parent / "server"
    parser.add_argument("--repo", type=Path, default=default)
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument(
        "--minilm", action="store_true", help="both tiers (static + MiniLM, its query model)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tiers = ["static", "minilm"] if args.minilm else ["static"]
    with tempfile.TemporaryDirectory(prefix="codeask-mcp-bench-") as tmp:
        report = bench(args.repo, Path(tmp), agents=args.agents, calls=args.calls, tiers=tiers)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for way in ("in_process", "forwarded"):
            row = report[way]
            print(
                f"{way:>10}: initialize {row['initialize_ms']} ms; "
                f"agents {row['agent_rss_mb']} MB, daemon {row['daemon_rss_mb']} MB, "
                f"total {row['total_rss_mb']} MB; search_code p50 {row['call_p50_ms']} ms, "
                f"p90 {row['call_p90_ms']} ms"
            )
        print(
            f"same hits: {report['same_hits']}; fallback notes: {report['fallback_notes']}; "
            f"load {report['load_average']}; {report['date']}"
        )
    return 0 if report["same_hits"] and not report["fallback_notes"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
