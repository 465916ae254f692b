"""`codeask mcp` as an agent meets it: cold start, restart on an existing index, warm latency
of every tool (p50/p95), and the server process's peak RSS. A real process driven by the MCP
SDK's own stdio client, on a copy of a corpus (default: the sphinx-5.1.1 sdist that
shared/eval/fetch_corpus.py fetches).

    python -m benchmarks.mcp_bench [--folder DIR] [--index-seconds 90]

1. cold: empty XDG cache, no index: the time from spawning the process to the first
   `search_code` answer with results over the whole corpus (every file chunked, static vectors
   in: lexical + static answer; MiniLM fills in for minutes after);
2. the first server keeps indexing for --index-seconds, then exits;
3. restart on that index: spawn → first `search_code` answer with results;
4. warm: each tool called repeatedly (after the MiniLM model loaded); p50 / p95 in ms;
5. VmHWM (peak RSS) of each server process, read from /proc before it exits.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from tests.support.env import in_process_env

DEFAULT_FOLDER = Path.home() / ".cache/codeask-eval/src/sphinx-5.1.1"
QUERIES = (
    "parse the command line arguments of sphinx-build",
    "intersphinx inventory download and cache",
    "autodoc documenter for class members",
    "napoleon google style docstring sections",
    "how are cross references resolved",
    "i18n gettext message catalogs",
    "html theme static files copied",
    "latex builder table rendering",
)


def peak_rss_mb(pid: int) -> float:
    """VmHWM of a process, MB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def server_pid(folder: Path) -> int:
    """The `codeask mcp` child of this process serving `folder`."""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if b"mcp" in cmd and str(folder).encode() in cmd and int(stat[1]) == me:
            return int(entry.name)
    return 0


def client(folder: Path, env: dict[str, str], log: Any) -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "codeask", "mcp", str(folder)], env=env, cwd=folder
    )
    return Client(stdio_client(params, errlog=log), mode="legacy", read_timeout_seconds=300)


async def call(c: Client, tool: str, **arguments: Any) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    result = await c.call_tool(tool, arguments)
    elapsed = time.perf_counter() - started
    text = result.content[0].text  # type: ignore[union-attr]
    if result.is_error:
        raise RuntimeError(f"{tool}: {text}")
    return elapsed, json.loads(text)


def whole_corpus(index: dict[str, Any]) -> bool:
    """Every file chunked and its static vectors in (the static tier follows the chunking of
    the last file): the first answer that searched the whole corpus."""
    done, total = (int(n) for n in index["static"].split("/"))
    return 0 < total == done


async def first_useful(folder: Path, env: dict[str, str], log: Any, keep: float) -> dict[str, Any]:
    """Spawn, then search until an answer has results; then let it index for `keep` s."""
    spawned = time.perf_counter()
    async with client(folder, env, log) as c:
        connected = time.perf_counter() - spawned
        pid = server_pid(folder)
        calls = 0
        while True:
            calls += 1
            last, answer = await call(c, "search_code", query=QUERIES[0])
            if answer["results"] and whole_corpus(answer["index"]):
                break
            await anyio.sleep(0.25)
        first = time.perf_counter() - spawned
        out = {
            "connected_s": round(connected, 2),
            "last_call_s": round(last, 2),
            "first_useful_s": round(first, 2),
            "calls": calls,
            "index": answer["index"],
        }
        deadline = time.monotonic() + keep
        while time.monotonic() < deadline:
            await anyio.sleep(5)
        _, status = await call(c, "index_status")
        out["status_after"] = {
            k: status["folders"][0].get(k) for k in ("state", "files", "chunks", "tiers")
        }
        out["peak_rss_mb"] = round(peak_rss_mb(pid), 1)
    return out


async def warm(folder: Path, env: dict[str, str], log: Any, rounds: int) -> dict[str, Any]:
    """Restart on the existing index: first answer, then every tool's latency."""
    spawned = time.perf_counter()
    async with client(folder, env, log) as c:
        connected = time.perf_counter() - spawned
        pid = server_pid(folder)
        first_call, answer = await call(c, "search_code", query=QUERIES[1])
        restart = time.perf_counter() - spawned
        first_results = len(answer["results"])
        await anyio.sleep(3)  # the MiniLM query model loads in the background
        times: dict[str, list[float]] = {
            t: []
            for t in (
                "search_code",
                "find_related",
                "get_context",
                "search_history",
                "index_status",
            )
        }
        sources = sorted(p for p in folder.rglob("*.py") if ".codeask" not in p.parts)[:40]
        for i in range(rounds):
            query = QUERIES[i % len(QUERIES)]
            times["search_code"].append((await call(c, "search_code", query=query))[0])
            path = sources[i % len(sources)]
            times["find_related"].append(
                (await call(c, "find_related", path=str(path), line=1 + (i * 7) % 20))[0]
            )
            times["search_history"].append((await call(c, "search_history", query=query))[0])
            times["index_status"].append((await call(c, "index_status"))[0])
            if i % 4 == 0:
                times["get_context"].append((await call(c, "get_context", question=query))[0])
        latency = {
            tool: {
                "n": len(values),
                "p50_ms": round(1000 * statistics.median(values), 1),
                "p95_ms": round(1000 * sorted(values)[max(0, int(0.95 * len(values)) - 1)], 1),
            }
            for tool, values in times.items()
        }
        return {
            "restart_connected_s": round(connected, 2),
            "restart_first_call_s": round(first_call, 2),
            "restart_first_answer_s": round(restart, 2),
            "restart_results": first_results,
            "restart_tiers": answer["index"]["tiers_answered"],
            "latency": latency,
            "peak_rss_mb": round(peak_rss_mb(pid), 1),
        }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="codeask-mcp-bench-") as tmp:
        base = Path(tmp)
        folder = base / args.folder.name
        shutil.copytree(args.folder, folder, symlinks=True)
        cache = base / "xdg"
        cache.mkdir()
        env = in_process_env()
        env.update(XDG_CACHE_HOME=str(cache), HF_HUB_OFFLINE="1")
        files = sum(1 for p in folder.rglob("*") if p.is_file())
        with (base / "server.log").open("w") as log:
            cold = await first_useful(folder, env, log, args.index_seconds)
            warm_run = await warm(folder, env, log, args.rounds)
        return {"folder": str(args.folder), "files": files, "cold": cold, "warm": warm_run}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=DEFAULT_FOLDER)
    parser.add_argument("--index-seconds", type=float, default=90.0)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    if not args.folder.is_dir():
        parser.error(f"no folder {args.folder} (run shared/eval/fetch_corpus.py)")
    print(json.dumps(anyio.run(run, args), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
