"""Round 3, item 3, through the daemon: a line nested 1,000 deep dropped the agent's daemon
session unanswered, and six of them made the forwarder give up. Now each is answered -32600
under its id by the daemon's session, which goes on (same daemon, no resumed session), and
another agent's search answers in under a second while the hostile lines keep coming."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from daemon_helpers import daemon_pid
from mcp_agents import RawPipe, agent_env, build_project

pytestmark = pytest.mark.slow
SEARCH = {"name": "search_code", "arguments": {"query": "expiring cache eviction"}}
#: Generous on a loaded 2-core machine (a warm daemon's search takes tens of ms).
SEARCH_SECONDS = 1.0


def nested(message_id: int, depth: int = 1_000) -> bytes:
    nest = "[" * depth + "]" * depth
    params = '{"cursor":' + nest + "}"
    return f'{{"jsonrpc":"2.0","id":{message_id},"method":"tools/list","params":{params}}}'.encode()


def indexed(pipe: RawPipe) -> list[object]:
    """Search until the index answers (the first pass is quick on this tiny repository)."""
    deadline = time.monotonic() + 120
    while True:
        answer = pipe.request("tools/call", SEARCH)
        found = json.loads(answer["result"]["content"][0]["text"])
        if found["results"] and "state" not in found["index"]:
            return list(found["results"])
        assert time.monotonic() < deadline, found
        time.sleep(0.3)


def test_nested_lines_through_the_daemon(tmp_path: Path, daemon_env: dict[str, str]) -> None:
    project = build_project(tmp_path / "shop")
    env = agent_env(daemon_env)
    hostile_log, calm_log = tmp_path / "hostile.log", tmp_path / "calm.log"
    hostile = RawPipe(project, env, stderr=hostile_log).start()
    calm = RawPipe(project, env, stderr=calm_log).start()
    expected = indexed(calm)
    pid = daemon_pid(env)
    assert pid
    for message_id in range(60, 66):  # six: what made the forwarder give up
        hostile.send_line(nested(message_id))
        answer = hostile.read()
        assert answer["id"] == message_id and answer["error"]["code"] == -32600, answer
    again = hostile.request("tools/call", SEARCH)
    assert json.loads(again["result"]["content"][0]["text"])["results"] == expected

    stop = threading.Event()
    refused: list[int] = []

    def keep_sending() -> None:
        message_id = 1_000
        while not stop.is_set():
            message_id += 1
            hostile.send_line(nested(message_id, 50_000))
            answer = hostile.read()
            refused.append(int(answer["error"]["code"]))

    sender = threading.Thread(target=keep_sending, daemon=True)
    sender.start()
    try:
        while len(refused) < 3:  # hostile lines are arriving in the daemon
            time.sleep(0.01)
        took = []
        for _ in range(5):
            started = time.monotonic()
            answer = calm.request("tools/call", SEARCH)
            took.append(time.monotonic() - started)
            assert json.loads(answer["result"]["content"][0]["text"])["results"] == expected
    finally:
        stop.set()
        sender.join(30)
    print(f"\nsearch beside hostile lines: {[round(t, 3) for t in took]} s, {len(refused)} refused")
    assert max(took) < SEARCH_SECONDS, took
    assert set(refused) == {-32600}
    assert daemon_pid(env) == pid, "the daemon never restarted"
    assert hostile.close() == 0 and calm.close() == 0
    assert "session resumed" not in hostile_log.read_text()
    assert "cannot continue" not in hostile_log.read_text()
