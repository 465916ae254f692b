"""A `kill -9` of the daemon under two agents calling tools in a loop: the forwarders start a
new daemon, replay the handshake and send again what was unanswered. Every answer that comes
back is right (the same hits as before the kill), the rest are the forwarder's "restarted;
retry" tool errors, nothing hangs, and both agents go on answering from the new daemon."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from daemon_helpers import codeask, daemon_pid
from mcp_agents import (
    Agents,
    RawPipe,
    agent_env,
    build_project,
    call,
    hit_lines,
)

from codeask.daemon.forwarder import RESTARTED

pytestmark = pytest.mark.slow
QUERIES = ("expiring cache eviction", "operator precedence tree", "evaluate user expression")
KILLS = 2
#: Answers each agent gets between two kills (and after the last one).
BETWEEN = 6


async def test_kill_9_while_agents_call_tools(tmp_path: Path, agents: Agents) -> None:
    project = build_project(tmp_path / "shop")
    env, log = agents.env, agents.log
    answers: list[tuple[str, bool, str]] = []
    killed: list[int] = []
    stop = anyio.Event()
    with anyio.fail_after(400):  # a hang fails the test instead of blocking the run
        async with agents.two(project, project) as (first, second, _):
            expected = {q: hit_lines(await call(first, "search_code", query=q)) for q in QUERIES}
            assert all(expected.values())

            counts = [0, 0]

            async def agent(client: Any, offset: int) -> None:
                turn = offset
                while not stop.is_set():
                    query = QUERIES[turn % len(QUERIES)]
                    turn += 1
                    result = await client.call_tool("search_code", {"query": query})
                    answers.append((query, result.is_error, result.content[0].text))
                    counts[offset] += 1

            async def both_answer(more: int) -> None:
                """Until each agent has `more` answers more than now (so both reconnected)."""
                target = [count + more for count in counts]
                while any(c < t for c, t in zip(counts, target, strict=True)):
                    await anyio.sleep(0.02)

            async def killer() -> None:
                for _ in range(KILLS):
                    await both_answer(BETWEEN)
                    pid = daemon_pid(env)
                    assert pid and pid not in killed
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    while daemon_pid(env) in (pid, None):  # a forwarder starts the next one
                        await anyio.sleep(0.05)
                await both_answer(BETWEEN)
                stop.set()

            async with anyio.create_task_group() as group:
                group.start_soon(agent, first, 0)
                group.start_soon(agent, second, 1)
                group.start_soon(killer)
            # both agents go on: right answers from the new daemon
            for client in (first, second):
                again = await call(client, "search_code", query=QUERIES[0])
                assert hit_lines(again) == expected[QUERIES[0]]
            alive = daemon_pid(env)
    assert len(killed) == KILLS and alive and alive not in killed
    wrong = [
        (query, text[:200])
        for query, is_error, text in answers
        if (is_error and text != RESTARTED)
        or (not is_error and hit_lines(json.loads(text)) != expected[query])
    ]
    assert wrong == [], "every answer is right, or says to retry"
    right = [a for a in answers if not a[1]]
    assert len(right) >= len(answers) - 2 * KILLS, "at most the twice-lost calls fail"
    assert "daemon unavailable" not in log.read_text(), "a daemon was there to reconnect to"


def test_a_request_in_flight_is_answered_by_the_next_daemon(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    """Deterministic: the daemon is frozen (SIGSTOP) with a search_code call inside it, then
    killed. The forwarder starts a new daemon, replays the handshake (its answer never reaches
    stdout) and sends the call again: the agent gets the right answer under its own id."""
    project = build_project(tmp_path / "shop")
    env = agent_env(daemon_env)
    stderr = tmp_path / "raw.log"
    pipe = RawPipe(project, env, stderr=stderr).start()
    arguments = {"name": "search_code", "arguments": {"query": QUERIES[0]}}

    def hits(answer: dict[str, Any]) -> list[tuple[str, str]]:
        return hit_lines(json.loads(answer["result"]["content"][0]["text"]))

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # indexed: the hits before and after the kill agree
        before = pipe.request("tools/call", arguments)
        if (
            hits(before)
            and "state" not in json.loads(before["result"]["content"][0]["text"])["index"]
        ):
            break
        time.sleep(0.3)
    pid = daemon_pid(env)
    assert pid
    os.kill(pid, signal.SIGSTOP)
    pipe.send_line(
        json.dumps(
            {"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": arguments}
        ).encode()
    )
    os.kill(pid, signal.SIGKILL)
    after = pipe.read()
    assert after["id"] == 99, "the replayed handshake's answer is swallowed"
    assert hits(after) == hits(before)
    assert daemon_pid(env) not in (None, pid)
    assert pipe.close() == 0
    assert pipe.proc.stdout is not None and pipe.proc.stdout.read() == b""
    assert "session resumed (1 unanswered requests sent again, 0 answered" in stderr.read_text()


def test_daemon_stop_hangs_up_and_the_agent_moves_on(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    """`codeask daemon --stop` (after an upgrade, say) does not wait for agents: it hangs up on
    their sessions and exits; the next call of each agent is served by a new daemon."""
    project = build_project(tmp_path / "shop")
    env = agent_env(daemon_env)
    stderr = tmp_path / "raw.log"
    pipe = RawPipe(project, env, stderr=stderr).start()
    status = pipe.request("tools/call", {"name": "index_status", "arguments": {}})
    assert not status["result"].get("isError")
    pid = daemon_pid(env)
    assert pid
    stopped = codeask("daemon", "--stop", cwd=project, env=env, timeout=60)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
    again = pipe.request("tools/call", {"name": "index_status", "arguments": {}})
    folders = json.loads(again["result"]["content"][0]["text"])["folders"]
    assert [f["root"] for f in folders] == [str(project)]
    assert daemon_pid(env) not in (None, pid)
    assert pipe.close() == 0
    assert "session resumed (0 unanswered requests sent again" in stderr.read_text()
    assert "daemon unavailable" not in stderr.read_text()
