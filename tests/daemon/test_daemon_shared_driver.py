"""One folder driver per folder in the daemon, across all its sessions (issue 43): an editor's
`codeask serve` and an agent's `codeask mcp` on the same folder subscribe to ONE
`core/driver` worker (`codeask daemon --status` lists it with both sessions): one first pass,
both see its state, a save in the editor is searchable from the agent, and the editor leaving
does not stop the agent's driver. Real processes: forwarders and one daemon."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import codeask
from mcp_agents import call, complete, mcp_session
from test_daemon_serve import editor_env

from support.lsp_harness import build_project, server_env, session, wait_for

pytestmark = pytest.mark.slow

NEW_FILE = "billing_rules.py"
NEW_TEXT = '''"""Late fees."""


def compute_late_payment_penalty(days_overdue, balance):
    """Penalty charged on an overdue balance, per day late."""
    return balance * 0.001 * days_overdue
'''


def drivers_of(cwd: Path, env: dict[str, str], root: Path) -> list[dict[str, Any]]:
    """The daemon's running drivers of `root` (`codeask daemon --status`)."""
    status = codeask("daemon", "--status", cwd=cwd, env=env)
    assert status.returncode == 0, status.stderr
    drivers = json.loads(status.stdout)["drivers"]
    return [d for d in drivers if Path(d["root"]) == root.resolve()]


def _progress_ended(values: list[Any]) -> bool:
    kinds = [v.kind for v in values]
    return bool(kinds) and kinds[0] == "begin" and kinds[-1] == "end"


async def test_an_editor_and_an_agent_share_one_driver(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    project = build_project(tmp_path / "demo")
    cache = tmp_path / "xdg"
    env = editor_env(daemon_env)
    async with AsyncExitStack() as stack, AsyncExitStack() as editor_stack:
        editor = await editor_stack.enter_async_context(session([project], cache, env=env))
        await editor.wait_ready(180)

        async def progress_seen() -> bool:  # the editor's bar of the one first pass
            return any(_progress_ended(v) for v in editor.client.progress_reports.values())

        assert await wait_for(progress_seen, bool, 30)
        agent = await stack.enter_async_context(mcp_session(project, env=server_env(cache, env)))
        status = await complete(agent, 180)  # the agent sees the editor's pass as done
        assert status["folders"][0]["state"] == "ready", status
        [driver] = drivers_of(tmp_path, daemon_env, project)
        assert driver["sessions"] == ["mcp", "serve"], driver
        assert driver["full_passes"] == 1, driver  # the agent's start ran no second pass

        # a file saved in the editor is searchable from the agent
        (project / NEW_FILE).write_text(NEW_TEXT)
        editor.save(editor.uri(NEW_FILE))

        async def found() -> bool:
            hits = await call(agent, "search_code", query="compute_late_payment_penalty")
            return any(h["path"].endswith(NEW_FILE) for h in hits["results"])

        assert await wait_for(found, bool, 60)

        async def reread() -> list[str] | None:  # set once the update (and its vectors) ended
            folder = (await call(agent, "index_status"))["folders"][0]
            return folder.get("last_files_reindexed")

        assert await wait_for(reread, bool, 120) == [NEW_FILE]

        await editor_stack.aclose()
        # the editor left: the same driver runs on for the agent (no new pass, no restart)
        sessions = _sessions(tmp_path, daemon_env, project)
        assert await wait_for(sessions, lambda d: d == [["mcp"]], 60) == [["mcp"]]
        [driver] = drivers_of(tmp_path, daemon_env, project)
        assert driver["full_passes"] == 1, driver
        await complete(agent, 120)  # still served, by the same driver
        assert await found()
    # the last session gone, the daemon stops the driver
    sessions = _sessions(tmp_path, daemon_env, project)
    assert await wait_for(sessions, lambda d: d == [], 60) == []


def _sessions(cwd: Path, env: dict[str, str], root: Path) -> Any:
    async def probe() -> list[list[str]]:
        return [d["sessions"] for d in drivers_of(cwd, env, root)]

    return probe
