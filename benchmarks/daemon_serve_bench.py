"""Two editors' language servers and three agents on one repository through the per-user
daemon, against one language server alone (issue 29's memory target: the first ≤ 1.3× the
second).

    python -m benchmarks.daemon_serve_bench REPO [--editors 2] [--agents 3] [--settle 10]

REPO must be indexed already (both tiers, e.g. `codeask index --full REPO`); the environment's
XDG_CACHE_HOME is used (models, embedding cache). First one `codeask serve` in its own process
(daemon off): initialize, ready, the query model loaded (a search), five searches, then RSS
after `--settle` seconds. Then, with `daemon.enabled` and a private runtime dir, the editors'
`codeask serve` (forwarders) and the agents' `codeask mcp` (forwarders), each ready and warm,
the same searches, and the RSS of every codeask process (forwarders + daemon). The hits of the
first editor are compared with the server alone's. Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from tests.support.env import in_process_env

from benchmarks.daemon_mcp_bench import Agent, daemon_pid, rss_mb

QUERIES = (
    "build the HTML output of a document",
    "parse a reStructuredText directive",
    "resolve a cross-reference to a Python object",
    "read the configuration file conf.py",
    "search index for the HTML builder",
)
READY_SECONDS = 900.0


async def editor(repo: Path, env: dict[str, str]) -> LanguageClient:
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "codeask", "serve"], server_env=env
    )
    client = await config.start()
    assert isinstance(client, LanguageClient)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[types.WorkspaceFolder(uri=repo.as_uri(), name=repo.name)],
        )
    )
    return client


async def request(client: LanguageClient, method: str, params: Any) -> Any:
    return await client.protocol.send_request_async(method, params)


async def warm(client: LanguageClient) -> None:
    """Ready, every chunk embedded, the query model loaded (a search starts its load)."""
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        status = await request(client, "codeask/indexStatus", {})
        if status.state == "ready":
            await search(client, QUERIES[0])
            if not status.warming:
                return
        await asyncio.sleep(0.5)
    raise TimeoutError("the editor's server did not become ready")


async def search(client: LanguageClient, query: str) -> list[tuple[str, int]]:
    found = await request(client, "workspace/semanticSearch", {"query": query})
    return [(item.uri, item.range.start.line) for item in found.results]


async def stop(client: LanguageClient) -> None:
    try:
        await asyncio.wait_for(client.shutdown_session(), 60)
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()


def pid_of(client: LanguageClient) -> int:
    assert client._server is not None
    return int(client._server.pid)


async def alone(repo: Path, env: dict[str, str], settle: float) -> dict[str, Any]:
    client = await editor(repo, env)
    try:
        await warm(client)
        hits = {query: await search(client, query) for query in QUERIES}
        await asyncio.sleep(settle)
        return {"rss_mb": rss_mb(pid_of(client)), "hits": hits}
    finally:
        await stop(client)


async def shared(
    repo: Path, env: dict[str, str], settle: float, editors: int, agents: int
) -> dict[str, Any]:
    run_dir = Path(env["XDG_RUNTIME_DIR"])
    clients: list[LanguageClient] = []
    started: list[Agent] = []
    steps: list[tuple[str, float]] = []

    def step(label: str) -> None:
        daemon = daemon_pid(run_dir)
        steps.append((label, rss_mb(daemon) if daemon else 0.0))

    try:
        for n in range(editors):
            clients.append(await editor(repo, env))
            await warm(clients[-1])
            step(f"{n + 1} editor(s) ready and warm")
        log = run_dir / "agents.log"
        for n in range(agents):
            started.append(Agent(repo, env, log).start())
            await asyncio.to_thread(started[-1].wait_ready, ["static", "minilm"])
            step(f"+ {n + 1} agent(s) ready")
        hits = {query: await search(clients[0], query) for query in QUERIES}
        for client in clients[1:]:
            for query in QUERIES:
                await search(client, query)
        for agent in started:
            for query in QUERIES:
                agent.tool("search_code", query=query)
        await asyncio.sleep(settle)
        step("after the searches, at rest")
        daemon = daemon_pid(run_dir)
        assert daemon is not None, "no daemon ran"
        return {
            "steps": steps,
            "editor_rss_mb": [rss_mb(pid_of(c)) for c in clients],
            "agent_rss_mb": [rss_mb(a.proc.pid) for a in started],
            "daemon_rss_mb": rss_mb(daemon),
            "hits": hits,
        }
    finally:
        for agent in started:
            agent.close()
        for client in clients:
            await stop(client)


async def run(repo: Path, editors: int, agents: int, settle: float) -> int:
    base = in_process_env()
    base.setdefault("HF_HUB_OFFLINE", "1")
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"# {repo} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load})")
    one = await alone(repo, base, settle)
    print(f"one language server alone: {one['rss_mb']:.1f} MB")
    with tempfile.TemporaryDirectory(prefix="codeask-serve-bench-") as tmp:
        runtime = Path(tmp) / "run"
        runtime.mkdir(mode=0o700)
        env = dict(base, XDG_RUNTIME_DIR=str(runtime), CODEASK_DAEMON__ENABLED="true")
        try:
            many = await shared(repo, env, settle, editors, agents)
        finally:
            subprocess.run(
                [sys.executable, "-m", "codeask", "daemon", "--stop"], env=env, check=False
            )
    total = sum(many["editor_rss_mb"]) + sum(many["agent_rss_mb"]) + many["daemon_rss_mb"]
    print(f"{editors} editors' forwarders: {many['editor_rss_mb']} MB")
    print(f"{agents} agents' forwarders: {many['agent_rss_mb']} MB")
    print(f"daemon: {many['daemon_rss_mb']:.1f} MB")
    for label, mb in many["steps"]:
        print(f"  daemon RSS, {label}: {mb:.1f} MB")
    print(f"total: {total:.1f} MB = {total / one['rss_mb']:.2f}x one language server alone")
    same = many["hits"] == one["hits"]
    print(f"the first editor's hits equal the server alone's: {same}")
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"load at the end: {load}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--editors", type=int, default=2)
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--settle", type=float, default=10.0)
    args = parser.parse_args()
    return asyncio.run(run(args.repo.resolve(), args.editors, args.agents, args.settle))


if __name__ == "__main__":
    raise SystemExit(main())
