"""Resident memory of codeask's MCP server at rest (issue 29): an in-process `codeask mcp`,
and the per-user daemon with one agent connected, after initialize + tools/list + one search
on a small repository whose index is complete.

    python benchmarks/mcp_rest_memory.py [--repo PATH] [--settle 5] [--json]

Without --repo a small git repository (three Python files) is made in a temporary folder.
Each measurement is a fresh process with its own XDG cache and runtime dir. Numbers are VmRSS
(and VmHWM, the peak) from /proc after `--settle` seconds of rest; the load (`uptime`) is
printed beside them: the machine is shared, RSS is not timing but a busy page cache is noise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from tests.support.env import in_process_env

FILES = {
    "src/shop/cache.py": "class ExpiringCache:\n    def get(self, key):\n        return key\n",
    "src/shop/parser.py": "def tokenize_expression(text):\n    return text.split()\n",
    "src/shop/calc.py": "def evaluate(text):\n    return len(text)\n",
}


def make_repo(root: Path) -> Path:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run([*git, "init", "-q", str(root)], check=True)
    subprocess.run([*git, "-C", str(root), "add", "."], check=True)
    subprocess.run([*git, "-C", str(root), "commit", "-qm", "start"], check=True)
    return root


def status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of `pid`, in MB, and the CPU-seconds it used so far."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(line.split()[1]) / 1024, 1)
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    out["cpu_s"] = round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 2)
    return out


class Agent:
    """An agent: `codeask mcp` over raw JSON lines."""

    def __init__(self, repo: Path, env: dict[str, str], log: IO[bytes]) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "codeask", "mcp"],
            cwd=repo,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
        self._id = 0
        self.initialize_s = 0.0
        """Seconds from the start of the process to the answer to `initialize`."""

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._id, "method": method}
        if params is not None:
            message["params"] = params
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            answer = json.loads(self.proc.stdout.readline())
            if answer.get("id") == self._id:
                return dict(answer)

    def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        return dict(json.loads(result["content"][0]["text"]))

    def session(self) -> None:
        """The handshake, the tool list, a complete index, one search."""
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        }
        self.request("initialize", init)
        self.initialize_s = round(time.monotonic() - self.started, 2)
        assert self.proc.stdin is not None
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.request("tools/list")
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            folders = self.tool("index_status")["folders"]
            if all(f["state"] == "ready" for f in folders):
                break
            time.sleep(0.5)
        self.tool("search_code", query="expiring cache")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(60)


def base_env(tmp: Path) -> dict[str, str]:
    env = in_process_env()
    runtime = tmp / "run"
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    env.update(
        XDG_CACHE_HOME=str(tmp / "cache"),
        XDG_RUNTIME_DIR=str(runtime),
        HF_HUB_OFFLINE="1",
        CODEASK_EMBED__TIERS='["static"]',
    )
    return env


def in_process(repo: Path, tmp: Path, settle: float) -> dict[str, float]:
    env = dict(base_env(tmp), CODEASK_DAEMON__ENABLED="false")
    with (tmp / "in-process.log").open("ab") as log:
        agent = Agent(repo, env, log)
        try:
            agent.session()
            time.sleep(settle)
            return {**status(agent.proc.pid), "initialize_s": agent.initialize_s}
        finally:
            agent.close()


def daemon_pid(runtime: Path) -> int:
    from codeask.daemon.paths import LOCK_NAME
    from codeask.daemon.server import lock_holder

    pid = lock_holder(runtime / "codeask" / LOCK_NAME)
    assert pid, "no daemon"
    return pid


def through_daemon(repo: Path, tmp: Path, settle: float) -> dict[str, float]:
    env = dict(base_env(tmp), CODEASK_DAEMON__ENABLED="true", CODEASK_DAEMON__IDLE_SECONDS="120")
    with (tmp / "daemon-agent.log").open("ab") as log:
        agent = Agent(repo, env, log)
        try:
            agent.session()
            time.sleep(settle)
            pid = daemon_pid(Path(env["XDG_RUNTIME_DIR"]))
            daemon = status(pid)
            forwarder = status(agent.proc.pid)
            return {
                "daemon_VmRSS": daemon["VmRSS"],
                "daemon_VmHWM": daemon["VmHWM"],
                "daemon_cpu_s": daemon["cpu_s"],
                "forwarder_VmRSS": forwarder["VmRSS"],
                "initialize_s": agent.initialize_s,
            }
        finally:
            agent.close()
            subprocess.run(
                [sys.executable, "-m", "codeask", "daemon", "--stop"],
                env=env,
                cwd="/",
                capture_output=True,
                timeout=60,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, help="a repository (default: a small one made here)")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds at rest before reading")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-rest-") as raw:
        tmp = Path(raw)
        repo = args.repo.resolve() if args.repo else make_repo(tmp / "shop")
        results = {
            "in_process": in_process(repo, tmp / "a", args.settle),
            "daemon": through_daemon(repo, tmp / "b", args.settle),
            "load": os.getloadavg()[0],
        }
    if args.json:
        print(json.dumps(results))
    else:
        for name, values in results.items():
            print(f"{name}: {values}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
