"""`codeask mcp` without the daemon: off by setting it runs in its own process
exactly as before and starts no daemon; on, but with no daemon to be had (an unusable runtime
dir, a daemon of another environment), it says so in one line on stderr and serves in-process,
stdout untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from daemon_helpers import codeask, daemon_pid, processes_run_in, run_dir, socket_path
from mcp_agents import RawPipe, agent_env, build_project, call, complete, hit_lines, mcp_session

pytestmark = pytest.mark.slow
NOTE = "codeask: daemon unavailable ("


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return build_project(tmp_path / "shop")


async def test_off_by_setting_serves_in_process(
    project: Path, daemon_env: dict[str, str], tmp_path: Path
) -> None:
    env = agent_env(daemon_env, enabled=False)
    log = tmp_path / "agent.log"
    async with mcp_session(project, env=env, stderr=log) as client:
        await complete(client)
        found = await call(client, "search_code", query="expiring cache")
        assert found["results"][0]["path"] == str(project / "src/shop/cache.py")
        assert len(processes_run_in({env["XDG_RUNTIME_DIR"]})) == 1, "only the agent's own"
    assert daemon_pid(env) is None and not socket_path(env).exists()
    assert NOTE not in log.read_text()


def test_unusable_runtime_dir_falls_back_with_one_note(
    project: Path, daemon_env: dict[str, str], tmp_path: Path
) -> None:
    env = agent_env(daemon_env)
    run_dir(env).write_text("not a directory\n")  # $XDG_RUNTIME_DIR/codeask: a file
    stderr = tmp_path / "raw.log"
    pipe = RawPipe(project, env, stderr=stderr).start()
    found = pipe.request(
        "tools/call", {"name": "search_code", "arguments": {"query": "expiring cache"}}
    )
    assert not found["result"].get("isError"), found
    assert pipe.close() == 0
    assert pipe.proc.stdout is not None and pipe.proc.stdout.read() == b""
    notes = [line for line in stderr.read_text().splitlines() if line.startswith(NOTE)]
    assert len(notes) == 1 and "is not a directory" in notes[0]
    assert notes[0].endswith("; answering in-process")
    assert daemon_pid(env) is None


@pytest.mark.parametrize(
    "differs",
    [{"GIT_AUTHOR_NAME": "someone else"}, {"CODEASK_TRUST_WORKSPACE": "1"}],
    ids=["git-env", "trust"],
)
async def test_a_daemon_of_another_environment_is_not_used(
    project: Path, daemon_env: dict[str, str], tmp_path: Path, differs: dict[str, str]
) -> None:
    """The CLI's rule holds for agents: a daemon started under other settings refuses the
    session (its answers could differ), the agent is served in-process, rightly. So an agent
    that trusts every workspace (`CODEASK_TRUST_WORKSPACE=1`) never shares a daemon with one
    that does not: its trust cannot widen the other's."""
    started = codeask("status", cwd=project, env=agent_env(daemon_env))  # (not indexed: 1)
    assert "daemon unavailable" not in started.stderr
    pid = daemon_pid(daemon_env)
    assert pid
    other = dict(agent_env(daemon_env), **differs)
    log = tmp_path / "agent.log"
    async with mcp_session(project, env=other, stderr=log) as client:
        await complete(client)
        found = await call(client, "search_code", query="expiring cache")
    expected = codeask("search", "expiring cache", "--json", "--no-daemon", cwd=project, env=other)
    assert hit_lines(found) == [
        (r["path"], f"{r['start_line']}-{r['end_line']}")
        for r in json.loads(expected.stdout)["results"]
    ]
    notes = [line for line in log.read_text().splitlines() if line.startswith(NOTE)]
    assert len(notes) == 1 and "another environment" in notes[0]
    assert daemon_pid(daemon_env) == pid, "the other daemon is left alone"


def test_no_daemon_flag_serves_in_process_with_the_daemon_on(
    project: Path, daemon_env: dict[str, str], tmp_path: Path
) -> None:
    """`codeask mcp --no-daemon`, as `search --no-daemon`: this agent in its own process, no
    daemon started for it, no note (it asked for exactly this)."""
    env = agent_env(daemon_env)
    stderr = tmp_path / "raw.log"
    pipe = RawPipe(project, env, "--no-daemon", stderr=stderr).start()
    found = pipe.request(
        "tools/call", {"name": "search_code", "arguments": {"query": "expiring cache"}}
    )
    assert not found["result"].get("isError"), found
    assert pipe.close() == 0
    assert daemon_pid(env) is None and not socket_path(env).exists()
    assert NOTE not in stderr.read_text()
