"""Issue 29: the daemon serves an agent's whole MCP session (the SDK's own client, through a
real `codeask mcp` forwarder) without importing the MCP SDK or pydantic: they were ~44 MB of
the daemon's resident memory from its first agent on. The real daemon runs in a fresh
interpreter that lists the modules it held when it was stopped."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_helpers import codeask, daemon_pid, python_detached, socket_path, wait_until
from mcp_agents import agent_env, build_project, call, complete, mcp_session, tool_error

pytestmark = pytest.mark.slow

#: The real daemon (`codeask daemon`), then its modules, written once it has stopped.
DAEMON_PROBE = (
    "import sys\n"
    "from codeask.cli import main\n"
    "code = main(['daemon'])\n"
    "open(sys.argv[1], 'w').write(' '.join(sorted(sys.modules)))\n"
    "raise SystemExit(code)\n"
)
TEST_ONLY = ("mcp", "mcp_types", "pydantic", "pydantic_core")


def mapped(pid: int, names: tuple[str, ...]) -> list[str]:
    """Which of these packages have a file mapped into `pid` (compiled parts: pydantic_core)."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return sorted({name for name in names if f"/{name}/" in maps})


async def test_the_daemon_serves_agents_without_the_sdk(
    daemon_env: dict[str, str], tmp_path: Path
) -> None:
    project = build_project(tmp_path / "shop")
    env = agent_env(daemon_env)
    listing = tmp_path / "daemon-modules.txt"
    daemon = python_detached(DAEMON_PROBE, str(listing), env=env)
    try:
        assert wait_until(lambda: socket_path(env).exists(), timeout=60)
        log = tmp_path / "agent.log"
        async with mcp_session(project, env=env, stderr=log) as client:
            await complete(client)
            found = await call(client, "search_code", query="expiring cache eviction")
            assert found["results"][0]["path"] == str(project / "src/shop/cache.py")
            await tool_error(client, "search_code", query="x", k=0)  # a bad argument, answered
            assert daemon_pid(env) == daemon.pid, "the session ran in the probed daemon"
            assert mapped(daemon.pid, TEST_ONLY) == []
        assert "daemon unavailable" not in log.read_text()
        stopped = codeask("daemon", "--stop", cwd=Path("/"), env=env, timeout=60)
        assert stopped.returncode == 0, stopped.stderr
        assert daemon.wait(60) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    modules = listing.read_text().split()
    assert "codeask.mcp.remote" in modules  # it served the session
    loaded = [m for m in modules if m.split(".")[0] in TEST_ONLY]
    assert loaded == [], f"{len(loaded)} modules of the SDK and pydantic: {loaded[:20]}"
