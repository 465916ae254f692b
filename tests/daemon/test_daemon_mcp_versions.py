"""The CLI's version and code rules hold for agents: a daemon of another codeask version, or
one whose code changed on disk since it started, never serves an MCP session; `codeask mcp`
then serves in its own process (one note on stderr) with the answers it always gave."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_helpers import codeask, daemon_pid, python_detached, socket_path, wait_until
from daemon_helpers import copied_package as package_copy
from daemon_helpers import touched_later as touch
from mcp_agents import agent_env, build_project, call, complete, hit_lines, mcp_session

pytestmark = pytest.mark.slow
QUERY = "expiring cache eviction"
#: The real daemon, run as if it were another release (test_daemon_versions.py's).
OTHER_RELEASE = (
    "import codeask; codeask.__version__ = '0.0.0-other'\n"
    "from codeask.cli import main\n"
    "raise SystemExit(main(['daemon']))\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return build_project(tmp_path / "shop")


def notes(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if "daemon unavailable" in line]


async def search_once(project: Path, env: dict[str, str], log: Path) -> list[tuple[str, str]]:
    async with mcp_session(project, env=env, stderr=log) as client:
        await complete(client)
        return hit_lines(await call(client, "search_code", query=QUERY))


async def test_a_daemon_of_another_version(
    project: Path, daemon_env: dict[str, str], tmp_path: Path
) -> None:
    env = agent_env(daemon_env)
    expected = await search_once(project, agent_env(daemon_env, enabled=False), tmp_path / "a")
    other = python_detached(OTHER_RELEASE, env=env)
    try:
        assert wait_until(lambda: socket_path(env).exists(), timeout=60)
        log = tmp_path / "agent.log"
        assert await search_once(project, env, log) == expected
        assert notes(log) == [
            "codeask: daemon unavailable (version mismatch: the daemon is codeask 0.0.0-other "
            "(protocol 1), the client 0.1.0 (protocol 1)); answering in-process"
        ]
        assert daemon_pid(env) == other.pid, "not replaced behind its back"
    finally:
        other.kill()
        other.wait()


async def test_changed_code_retires_the_daemon(
    project: Path, daemon_env: dict[str, str], tmp_path: Path
) -> None:
    """The daemon and the agent's `codeask mcp` run from a copy of the package: the copy is
    touched, never the checkout (a daemon the user runs from it would retire mid-session)."""
    import codeask.daemon.messages as loaded

    real = Path(loaded.__file__)
    real_mtime = real.stat().st_mtime_ns
    copy, env = package_copy(tmp_path / "pkg", agent_env(daemon_env))
    started = codeask("status", cwd=project, env=env)  # a daemon, code as loaded now
    assert "daemon unavailable" not in started.stderr
    pid = daemon_pid(env)
    assert pid
    log = tmp_path / "agent.log"
    touch(copy / "daemon" / "messages.py")
    async with mcp_session(project, env=env, stderr=log) as client:
        await complete(client)
        stale = hit_lines(await call(client, "search_code", query=QUERY))
        assert real.stat().st_mtime_ns == real_mtime, "the checkout's file is touched"
    [note] = notes(log)
    assert "codeask's code changed since the daemon started" in note
    assert f"({copy / 'daemon' / 'messages.py'})" in note  # the copy's, not the checkout's
    assert wait_until(lambda: daemon_pid(env) != pid, timeout=20), "the stale daemon exits"
    fresh_log = tmp_path / "fresh.log"
    assert await search_once(project, env, fresh_log) == stale
    assert notes(fresh_log) == [] and daemon_pid(env) not in (None, pid)
    assert real.stat().st_mtime_ns == real_mtime, "the checkout's file was touched"
