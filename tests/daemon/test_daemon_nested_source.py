"""A file nested 100k levels deep (issue round 3, item 5) indexed by real processes: the daemon's
folder driver (an agent's `codeask mcp` session) and `codeask index`. The file becomes line
windows with a logged reason naming it, the pass ends, and while the daemon indexes it another
session's search still answers.

Before the bound, the Zig file held the definitions query (in C, the GIL held) for minutes and
the Scala one the parser: a search through the daemon got no answer in 30 s."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from daemon_helpers import codeask
from mcp_agents import agent_env, build_other_project, call, complete, mcp_session

pytestmark = pytest.mark.slow
DEPTH = 100_000
#: A search answers in well under a second here; the margin is for a loaded 2-core machine
#: starting a `codeask search` process. Before the bound it waited for minutes.
SEARCH_SECONDS = 10.0


def write_deep_files(root: Path) -> None:
    """200 KB each: Zig nested in parentheses, Scala in blocks."""
    (root / "deep.zig").write_text("const x = " + "(" * DEPTH + "1" + ")" * DEPTH + ";\n")
    (root / "deep.scala").write_text("object A { def f = " + "{" * DEPTH + "}" * DEPTH + " }\n")


def test_codeask_index_ends_with_a_reason_naming_each_deep_file(tmp_path: Path) -> None:
    root = tmp_path / "hostile"
    build_other_project(root)
    write_deep_files(root)
    env = agent_env(dict(os.environ), enabled=False)
    started = time.monotonic()
    indexed = codeask("-v", "index", str(root), cwd=root, env=env, timeout=240)
    assert indexed.returncode == 0, indexed.stderr
    assert time.monotonic() - started < 240
    assert "deep.zig: nested more than 2000 levels deep (at line 1); used line windows" in (
        indexed.stderr
    )
    assert "deep.scala: parsing took more than 5 s of CPU; used line windows" in indexed.stderr
    found = codeask("search", "journal entry", "--json", "--no-daemon", cwd=root, env=env)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["path"].endswith("lib/ledger.py")


async def test_another_sessions_search_answers_while_the_daemon_indexes_a_deep_file(
    daemon_env: dict[str, str], tmp_path: Path
) -> None:
    env = agent_env(daemon_env)
    other = build_other_project(tmp_path / "ledger")
    assert codeask("index", str(other), cwd=other, env=env).returncode == 0
    hostile = build_other_project(tmp_path / "hostile")
    write_deep_files(hostile)
    first = codeask("search", "journal entry", "--json", cwd=other, env=env, timeout=120)
    assert first.returncode == 0, first.stderr  # the daemon runs
    log = tmp_path / "agent.log"
    async with mcp_session(hostile, env=env, stderr=log) as agent:
        # the daemon's driver for `hostile` starts its first pass, deep files included
        waits = []
        for _ in range(4):
            started = time.monotonic()
            found = codeask("search", "journal entry", "--json", cwd=other, env=env, timeout=300)
            waits.append(time.monotonic() - started)
            assert found.returncode == 0, found.stderr
            assert json.loads(found.stdout)["results"][0]["path"].endswith("lib/ledger.py")
        assert max(waits) < SEARCH_SECONDS, waits
        status = await complete(agent, timeout=240)  # the pass ends: no file stalls it
        assert status["folders"][0]["state"] == "ready"
        hits = await call(agent, "search_code", query="journal entry")
        assert hits["results"][0]["path"].endswith("lib/ledger.py")
