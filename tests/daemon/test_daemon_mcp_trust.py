"""Trust stays per agent in the shared daemon: each `codeask mcp` session has its own roots and
its own path checks, even though every session runs in one process. Agent A serves repo1,
agent B repo2, in the same daemon: whatever B names in repo1 is refused exactly as a `codeask
mcp` of its own on repo2 refuses it, and nothing of repo1 reaches B's answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp_agents import (
    Agents,
    agent_env,
    build_other_project,
    build_project,
    call,
    complete,
    mcp_session,
    tool_error,
)

pytestmark = pytest.mark.slow


async def refusals_seen_by(client: Any, repo1: Path) -> dict[str, str]:
    """What an agent on repo2 gets when it names repo1's files."""
    target = str(repo1 / "src/shop/cache.py")
    return {
        "find_related": await tool_error(client, "find_related", path=target, line=10),
        "find_related_relative": await tool_error(
            client, "find_related", path="../shop/src/shop/cache.py", line=10
        ),
        "search_history": await tool_error(client, "search_history", path=target, line=10),
    }


async def test_one_agents_workspace_never_widens_anothers(
    tmp_path: Path, daemon_env: dict[str, str], agents: Agents
) -> None:
    repo1 = build_project(tmp_path / "shop")
    repo2 = build_other_project(tmp_path / "ledger")
    log = agents.log
    async with agents.two(repo1, repo2) as (agent_a, agent_b, _):
        # A reads repo1: the files B will try to name exist and are served
        mine = await call(agent_a, "find_related", path=str(repo1 / "src/shop/cache.py"), line=10)
        assert mine["at"]["symbol"]
        # B: repo1's files are outside its workspace
        forwarded = await refusals_seen_by(agent_b, repo1)
        found = await call(agent_b, "search_code", query="ExpiringCache ttl_seconds capacity")
        assert not [r for r in found["results"] if r["path"].startswith(str(repo1))]
        context = await call(agent_b, "get_context", question="How does ExpiringCache expire?")
        assert not [s for s in context["sources"] if s["path"].startswith(str(repo1))]
        assert "ttl_seconds" not in context["context"], "no code of repo1 in the context"
        status = await call(agent_b, "index_status")
        assert [f["root"] for f in status["folders"]] == [str(repo2)]
        # and A still sees only repo1
        status_a = await call(agent_a, "index_status")
        assert [f["root"] for f in status_a["folders"]] == [str(repo1)]
    # the same refusals, word for word, as B's own `codeask mcp` in its own process
    async with mcp_session(repo2, env=agent_env(daemon_env, enabled=False), stderr=log) as alone:
        await complete(alone)
        in_process = await refusals_seen_by(alone, repo1)
    assert forwarded == in_process
    assert all("outside every workspace folder" in text for text in forwarded.values())


async def test_a_refused_root_is_the_sessions_own(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    """`codeask mcp /` is refused (no --allow-broad-root) in the daemon as in-process, and an
    agent on a real folder beside it is not affected."""
    repo1 = build_project(tmp_path / "shop")
    env = agent_env(daemon_env)
    log = tmp_path / "agents.log"
    async with (
        mcp_session(repo1, env=env, stderr=log) as agent_a,
        mcp_session(tmp_path, "/", env=env, stderr=log) as broad,
    ):
        refused = await tool_error(broad, "search_code", query="anything")
        status = await call(broad, "index_status")
        await complete(agent_a)
        found = await call(agent_a, "search_code", query="expiring cache")
        assert found["results"][0]["path"] == str(repo1 / "src/shop/cache.py")
    async with mcp_session(
        tmp_path, "/", env=agent_env(daemon_env, enabled=False), stderr=log
    ) as alone:
        assert await tool_error(alone, "search_code", query="anything") == refused
        assert await call(alone, "index_status") == status
    assert status["folders"][0]["state"] == "refused"
