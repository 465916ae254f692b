"""One index per folder in the daemon (issue 29's memory): two editors' sessions and an agent on
one folder hold ONE open index through ONE driver (`codeask daemon --status` lists the index,
held by the driver, and the driver's sessions: issue 43), answer as a
server of their own, index each other's saves, and keep it when the others leave; an editor
whose settings for the folder differ (a trusted workspace) keeps its own. Real processes:
`python -m codeask serve` and `codeask mcp` forwarders, one daemon."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import codeask, daemon_pid
from mcp_agents import call, mcp_session
from test_daemon_serve import QUERIES, _located_elsewhere, answers, editor_env, settle

from support.lsp_harness import build_project, server_env, session, wait_for

pytestmark = pytest.mark.slow

NEW_FILE = "billing_rules.py"
NEW_TEXT = '''"""Late fees."""


def compute_late_payment_penalty(days_overdue, balance):
    """Penalty charged on an overdue balance, per day late."""
    return balance * 0.001 * days_overdue
'''


def indexes(cwd: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """The daemon's open indexes (`codeask daemon --status`)."""
    status = codeask("daemon", "--status", cwd=cwd, env=env)
    assert status.returncode == 0, status.stderr
    return list(json.loads(status.stdout)["indexes"])


def sessions_of(cwd: Path, env: dict[str, str], root: Path) -> list[list[str]]:
    """The sessions on each of the daemon's drivers of `root` (core/driver/shared.py)."""
    status = codeask("daemon", "--status", cwd=cwd, env=env)
    drivers = json.loads(status.stdout)["drivers"]
    return sorted(d["sessions"] for d in drivers if Path(d["root"]) == root.resolve())


def users_of(cwd: Path, env: dict[str, str], root: Path) -> list[int]:
    return [i["users"] for i in indexes(cwd, env) if Path(i["root"]) == root.resolve()]


async def test_editors_and_an_agent_share_one_index(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    project = build_project(tmp_path / "demo")
    cache = tmp_path / "xdg"
    async with session([project], cache) as alone:  # a server of its own, no daemon
        await alone.wait_ready(180)
        expected = await answers(alone)
    assert all(expected.values()), expected

    env = editor_env(daemon_env)
    async with session([project], cache, env=env) as first:
        await first.wait_ready(180)
        async with session([project], cache, env=env) as second:
            await settle(second)
            assert users_of(tmp_path, daemon_env, project) == [1]  # one index: one driver's
            assert sessions_of(tmp_path, daemon_env, project) == [["serve", "serve"]]
            assert await answers(second) == expected
            agent_env = server_env(cache, env)
            async with mcp_session(project, env=agent_env) as agent:
                found = await call(agent, "search_code", query=QUERIES[0])
                assert found["results"][0]["path"].endswith("mathutil.py"), found
                assert users_of(tmp_path, daemon_env, project) == [1]
                assert sessions_of(tmp_path, daemon_env, project) == [["mcp", "serve", "serve"]]
            assert await answers(first) == expected

            # a file the second editor saves is searchable from the first at once
            (project / NEW_FILE).write_text(NEW_TEXT)
            second.save(second.uri(NEW_FILE))
            query = "penalty for paying an invoice late"
            hits = await wait_for(
                lambda: first.search(query),
                lambda r: bool(r) and r[0]["uri"].endswith(NEW_FILE),
                60,
            )
            assert hits[0]["uri"] == first.uri(NEW_FILE)

        # the first editor keeps the index when the second leaves, and still indexes saves
        await wait_for(_sessions(tmp_path, daemon_env, project), lambda u: u == [["serve"]], 60)
        assert users_of(tmp_path, daemon_env, project) == [1]
        (project / NEW_FILE).unlink()
        first.save(first.uri(NEW_FILE))
        await wait_for(
            lambda: first.search(query),
            lambda r: not any(h["uri"].endswith(NEW_FILE) for h in r),
            60,
        )
        after = await answers(first)  # scores move a little: the corpus changed twice
        assert {q: h[0][:2] for q, h in after.items()} == {q: h[0][:2] for q, h in expected.items()}
    pid = daemon_pid(daemon_env)
    assert pid is not None
    await wait_for(_users(tmp_path, daemon_env, project), lambda u: u == [], 300)


async def test_a_trusted_editor_keeps_its_own_index(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    """Trust changes what the folder's settings come out as (the project file's protected
    index.location): the trusting and the wary editor never share an index."""
    project = build_project(tmp_path / "demo")
    _located_elsewhere(project)
    env = editor_env(daemon_env)
    cache = tmp_path / "xdg"
    async with session([project], cache, env=env, options={"trustWorkspace": True}) as trusting:
        await trusting.wait_ready(180)
        async with session([project], cache, env=env) as wary:
            await wary.wait_ready(180)
            open_now = [i for i in indexes(tmp_path, daemon_env) if i["root"] == str(project)]
            assert sorted(i["users"] for i in open_now) == [1, 1], open_now
            assert len({i["index"] for i in open_now}) == 2, open_now
            async with session([project], cache, env=env) as also_wary:
                await also_wary.wait_ready(180)
                open_now = [i for i in indexes(tmp_path, daemon_env) if i["root"] == str(project)]
                assert sorted(i["users"] for i in open_now) == [1, 1], open_now  # a driver each
                assert sessions_of(tmp_path, daemon_env, project) == [["serve"], ["serve", "serve"]]


def _users(cwd: Path, env: dict[str, str], root: Path) -> Any:
    async def probe() -> list[int]:
        return users_of(cwd, env, root)

    return probe


def _sessions(cwd: Path, env: dict[str, str], root: Path) -> Any:
    async def probe() -> list[list[str]]:
        return sessions_of(cwd, env, root)

    return probe
