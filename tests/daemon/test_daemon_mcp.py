"""`codeask mcp` as a thin forwarder to the per-user daemon (issue 29, step 2): real agents
(the MCP SDK's stdio client) on real `codeask mcp` processes, a real daemon.

- two forwarders share one daemon (one pid, two sessions) and answer search_code exactly as
  `codeask search` does, while each forwarder stays small (no engine, no SDK loaded);
- the forwarder's stdout carries protocol lines only, with -v, forwarded or not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from daemon_helpers import codeask, daemon_pid, wait_until
from mcp_agents import (
    TOOLS,
    Agents,
    RawPipe,
    agent_env,
    build_project,
    call,
    complete,
    forwarders,
    hit_lines,
    loaded_heavy,
    mcp_session,
    rss_mb,
)

pytestmark = pytest.mark.slow
QUERIES = ("expiring cache eviction", "operator precedence tree", "evaluate user expression")


def cli_hits(project: Path, env: dict[str, str], query: str) -> list[tuple[str, str]]:
    """`codeask search --json --no-daemon`: the ranking search_code must match."""
    found = codeask("search", query, "--json", "--no-daemon", cwd=project, env=env)
    assert found.returncode == 0, found.stderr
    return [
        (r["path"], f"{r['start_line']}-{r['end_line']}")
        for r in json.loads(found.stdout)["results"]
    ]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return build_project(tmp_path / "shop")


async def test_two_forwarders_share_one_daemon(project: Path, agents: Agents) -> None:
    env, log = agents.env, agents.log
    async with agents.two(project, project) as (first, second, pid):
        status = json.loads(codeask("daemon", "--status", cwd=project, env=env).stdout)
        assert status["pid"] == pid and status["sessions"] == 2
        assert status["mcp_folders"] == [str(project)], "one driver for both agents"
        answers: dict[str, list[list[tuple[str, str]]]] = {q: [] for q in QUERIES}

        async def agent(client: object) -> None:
            for query in QUERIES:
                answer = await call(client, "search_code", query=query)  # type: ignore[arg-type]
                answers[query].append(hit_lines(answer))

        async with anyio.create_task_group() as group:
            group.start_soon(agent, first)
            group.start_soon(agent, second)
        small = forwarders(env)
        assert len(small) == 2
        for forwarder in small:
            assert loaded_heavy(forwarder) == [], "a forwarder loads nothing of the engine"
            assert rss_mb(forwarder) < 40, f"forwarder {forwarder}: {rss_mb(forwarder):.1f} MB"
        assert daemon_pid(env) == pid
    for query in QUERIES:
        expected = cli_hits(project, env, query)
        assert expected, query
        assert answers[query] == [expected, expected], query
    assert "daemon unavailable" not in log.read_text()
    # the last agent gone, the daemon stops the shared driver (the index saved and released)
    assert wait_until(
        lambda: (
            json.loads(codeask("daemon", "--status", cwd=project, env=env).stdout)["mcp_folders"]
            == []
        )
    )


@pytest.mark.parametrize("daemon", [True, False], ids=["forwarded", "in-process"])
def test_stdout_carries_protocol_lines_only(
    project: Path, daemon_env: dict[str, str], tmp_path: Path, daemon: bool
) -> None:
    """With -v (logging on), every byte on stdout is a JSON-RPC line answering a request."""
    env = agent_env(daemon_env, enabled=daemon)
    stderr = tmp_path / "raw.log"
    pipe = RawPipe(project, env, flags=("-v",), stderr=stderr).start()
    answer = pipe.request("tools/call", {"name": "index_status", "arguments": {}})
    assert answer["jsonrpc"] == "2.0" and answer["id"] == 2 and "result" in answer
    found = pipe.request(
        "tools/call", {"name": "search_code", "arguments": {"query": "expiring cache"}}
    )
    assert found["id"] == 3 and not found["result"].get("isError")
    assert pipe.close() == 0
    assert pipe.proc.stdout is not None
    assert pipe.proc.stdout.read() == b"", "nothing but answers on stdout"
    assert (daemon_pid(env) is not None) is daemon
    assert ("daemon unavailable" in stderr.read_text()) is False


def test_forwarder_imports_nothing_heavy(daemon_env: dict[str, str], tmp_path: Path) -> None:
    """The forwarding path's modules: standard library and codeask's light client only."""
    probe = (
        "import sys; import codeask.cli, codeask.cli.mcp, codeask.daemon.forwarder, "
        "codeask.daemon.client; print(' '.join(sorted(sys.modules)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    heavy = [
        m for m in loaded if m.split(".")[0] in {"numpy", "mcp", "pydantic", "msgspec", "anyio"}
    ]
    assert heavy == []
    # the parser's `input_text` (cli/parser.py): core/source/names.py imports nothing but
    # unicodedata
    assert [m for m in loaded if m.startswith("codeask.core")] == [
        "codeask.core",
        "codeask.core.source",  # the room's __init__: a docstring
        "codeask.core.source.names",
    ]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_both_protocol_eras_through_the_forwarder(
    project: Path, daemon_env: dict[str, str], tmp_path: Path, mode: str
) -> None:
    """The 2025 handshake era and the stateless 2026-07-28 era ("auto") both pass through the
    forwarder untouched: the five tools listed, a search answered by the daemon."""
    env = agent_env(daemon_env)
    log = tmp_path / "agents.log"
    async with mcp_session(project, env=env, stderr=log, mode=mode) as client:
        listed = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert listed == sorted(TOOLS)
        await complete(client)
        found = await call(client, "search_code", query=QUERIES[0])
        assert hit_lines(found) == cli_hits(project, env, QUERIES[0])
        assert daemon_pid(env)
    assert "daemon unavailable" not in log.read_text()
