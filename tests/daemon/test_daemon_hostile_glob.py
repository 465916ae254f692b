"""One agent's path glob must not freeze the daemon for everyone (issue "Round 3", item 1).

`search_code` with `path: "*a*a*a*a*a*a*a*a*a*a*a*a*b"` over a file named with 60 `a`s: with
Python's `re` the match backtracked for hours while holding the interpreter, so every other
session of the daemon, every forwarded CLI search and `codeask daemon --stop` waited with it.
Real agents (the MCP SDK's stdio client on real `codeask mcp` processes), a real daemon and
real CLI processes; the globs are matched by RE2 now, in time linear in the path.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from daemon_helpers import codeask, daemon_pid
from mcp_agents import Agents, build_project, call

pytestmark = pytest.mark.slow

HOSTILE = "*a*a*a*a*a*a*a*a*a*a*a*a*b"
LONG_NAME = "a" * 60
#: The brief's bound for another session's search while the hostile one runs.
ANSWER_SECONDS = 1.0
#: A forwarded CLI search is a new process (~0.1 s measured): a generous bound on a loaded box.
CLI_SECONDS = 10.0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = build_project(tmp_path / "shop")
    (root / LONG_NAME).write_text(
        "def expiring_cache_eviction(cache):\n    return [k for k in cache if k.expired]\n"
    )
    return root


def _cli_search(project: Path, env: dict[str, str], *extra: str) -> tuple[dict[str, Any], float]:
    """A forwarded `codeask search` (a real process) and the seconds it took."""
    started = time.monotonic()
    found = codeask("search", "expiring cache eviction", "--json", *extra, cwd=project, env=env)
    seconds = time.monotonic() - started
    assert found.returncode in (0, 1), found.stderr
    return json.loads(found.stdout), seconds


async def test_hostile_glob_does_not_stall_other_sessions(project: Path, agents: Agents) -> None:
    env = agents.env
    async with agents.two(project, project) as (hostile, other, pid):
        warm = await call(other, "search_code", query="expiring cache eviction")
        assert str(project / LONG_NAME) in {h["path"] for h in warm["results"]}, "a candidate"
        answers: dict[str, Any] = {}

        async def hostile_search() -> None:
            answers["hostile"] = await call(
                hostile, "search_code", query="expiring cache eviction", path=HOSTILE
            )

        async def other_search() -> None:
            started = time.monotonic()
            answers["other"] = await call(other, "search_code", query="cache expiry")
            answers["other_seconds"] = time.monotonic() - started

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(hostile_search)
                group.start_soon(other_search)
                cli, cli_seconds = await anyio.to_thread.run_sync(_cli_search, project, env)
        assert answers["hostile"]["results"] == [], "no path ends in b"
        assert answers["other"]["results"], "the other agent's search answered"
        assert answers["other_seconds"] < ANSWER_SECONDS, answers["other_seconds"]
        assert cli["results"], "the CLI's search answered"
        assert cli_seconds < CLI_SECONDS, cli_seconds
        hostile_cli, _ = await anyio.to_thread.run_sync(
            _cli_search, project, env, "--path", HOSTILE
        )
        assert hostile_cli["results"] == [], "the forwarded CLI search with the glob answers"
        assert daemon_pid(env) == pid, "one daemon answered all of it"
    stopped = codeask("daemon", "--stop", cwd=project, env=env, timeout=60)
    assert stopped.returncode == 0, stopped.stderr
