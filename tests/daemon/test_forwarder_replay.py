"""The forwarder's replay rules, step by step, against scripted daemons (a stand-in: the exact
moments a real daemon would have to die, e.g. twice under the same request, cannot be forced
with real processes). The forwarder itself is real (`Proxy` over real sockets and pipes): the
agent writes to its stdin and reads its stdout; each "daemon" is the far end of a socketpair
that the test reads and answers line by line, then hangs up."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from codeask.daemon.forwarder import RESTARTED, Proxy
from codeask.daemon.relay import REPLAY_ID, SocketUpstream

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "x"}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(request_id: int, query: str) -> dict[str, Any]:
    params = {"name": "search_code", "arguments": {"query": query}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


class ScriptedDaemon:
    """The daemon end of one connection: reads the forwarder's lines, writes answers."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader = sock.makefile("rb")

    def read(self) -> dict[str, Any]:
        line = self.reader.readline()
        assert line.endswith(b"\n"), f"expected a line, got {line!r}"
        return json.loads(line)

    def answer(self, request_id: Any, result: dict[str, Any]) -> None:
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n"
        self.sock.sendall(line.encode())

    def hang_up(self) -> None:
        self.reader.close()
        self.sock.close()


class Agent:
    """The forwarder's stdin and stdout, as the agent holds them."""

    def __init__(self) -> None:
        self.stdin_read, self.stdin_write = os.pipe()
        self.stdout_read, self.stdout_write = os.pipe()
        self.out = os.fdopen(self.stdout_read, "rb")

    def send(self, message: dict[str, Any]) -> None:
        os.write(self.stdin_write, json.dumps(message).encode() + b"\n")

    def read(self) -> dict[str, Any]:
        return json.loads(self.out.readline())

    def close(self) -> None:
        os.close(self.stdin_write)


@pytest.fixture
def wired() -> Iterator[tuple[Agent, list[ScriptedDaemon], threading.Thread, list[int]]]:
    """A forwarder between an agent and daemon #0; each reconnection gets the next daemon."""
    agent = Agent()
    daemons: list[ScriptedDaemon] = []
    ready = threading.Semaphore(0)

    def new_daemon() -> SocketUpstream:
        ours, theirs = socket.socketpair()
        daemons.append(ScriptedDaemon(theirs))
        ready.release()
        return SocketUpstream(ours)

    first = new_daemon()
    proxy = Proxy(first, new_daemon, stdin_fd=agent.stdin_read, stdout_fd=agent.stdout_write)
    code: list[int] = []
    thread = threading.Thread(target=lambda: code.append(proxy.run()), daemon=True)
    thread.start()
    ready.acquire()
    yield agent, daemons, thread, code
    for daemon in daemons:
        daemon.sock.close()


def next_daemon(daemons: list[ScriptedDaemon], count: int) -> ScriptedDaemon:
    """Daemon #count, once the forwarder has connected to it."""
    import time

    deadline = time.monotonic() + 10
    while len(daemons) <= count:
        assert time.monotonic() < deadline, "the forwarder did not reconnect"
        time.sleep(0.01)
    return daemons[count]


def test_scripted_daemons_a_request_lost_twice_is_answered_retry(
    wired: tuple[Agent, list[ScriptedDaemon], threading.Thread, list[int]],
) -> None:
    agent, daemons, thread, code = wired
    first = daemons[0]
    agent.send(INIT)
    assert first.read() == INIT
    first.answer(1, {"serverInfo": {"name": "codeask"}})
    assert agent.read()["id"] == 1
    agent.send(INITIALIZED)
    assert first.read() == INITIALIZED
    agent.send(call(2, "cache"))
    assert first.read() == call(2, "cache")
    first.hang_up()  # dies with call 2 inside

    second = next_daemon(daemons, 1)
    replay = second.read()
    assert replay["method"] == "initialize" and replay["id"] == f"{REPLAY_ID}1"
    assert replay["params"] == INIT["params"]
    assert second.read() == INITIALIZED
    assert second.read() == call(2, "cache"), "sent again, once"
    second.answer(replay["id"], {"serverInfo": {"name": "codeask"}})  # swallowed
    second.hang_up()  # dies with call 2 inside again

    third = next_daemon(daemons, 2)
    assert third.read()["id"] == f"{REPLAY_ID}2"
    assert third.read() == INITIALIZED
    lost = agent.read()
    assert lost == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {"content": [{"type": "text", "text": RESTARTED}], "isError": True},
    }
    agent.send(call(3, "parser"))
    assert third.read() == call(3, "parser"), "call 2 is not sent a third time"
    third.answer(3, {"content": [{"type": "text", "text": "hits"}], "isError": False})
    assert agent.read()["id"] == 3, "the replayed handshake's answer never reached the agent"

    agent.send({"jsonrpc": "2.0", "id": "ping-1", "method": "ping"})
    assert third.read()["id"] == "ping-1"
    agent.send(call(4, "cancelled"))
    assert third.read()["id"] == 4
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}
    agent.send(cancel)
    assert third.read() == cancel
    third.hang_up()  # with a ping and a cancelled call inside

    fourth = next_daemon(daemons, 3)
    assert fourth.read()["id"] == f"{REPLAY_ID}3"
    assert fourth.read() == INITIALIZED
    assert fourth.read()["id"] == "ping-1", "a ping is sent again; the cancelled call is not"
    fourth.answer("ping-1", {})
    assert agent.read() == {"jsonrpc": "2.0", "id": "ping-1", "result": {}}
    agent.close()  # the agent leaves: the forwarder ends its input, waits for the daemon
    assert fourth.reader.readline() == b""
    fourth.hang_up()
    thread.join(10)
    assert code == [0]
    os.close(agent.stdout_write)  # the forwarder's end: what is left to read, then EOF
    assert agent.out.read() == b"", "nothing else on stdout"


def test_scripted_daemon_a_reply_cut_by_the_drop_never_reaches_the_agent(
    wired: tuple[Agent, list[ScriptedDaemon], threading.Thread, list[int]],
) -> None:
    agent, daemons, thread, code = wired
    first = daemons[0]
    agent.send(call(7, "half"))
    assert first.read() == call(7, "half")
    first.sock.sendall(b'{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"ty')
    first.hang_up()
    second = next_daemon(daemons, 1)
    assert second.read() == call(7, "half"), "no handshake to replay; the call goes again"
    second.answer(7, {"content": [], "isError": False})
    assert agent.read() == {"jsonrpc": "2.0", "id": 7, "result": {"content": [], "isError": False}}
    agent.close()
    assert second.reader.readline() == b""
    second.hang_up()
    thread.join(10)
    assert code == [0]
