"""Issue 29: how the MCP session (mcp/protocol.py) runs tool calls, with a tool whose end the
test decides (a real Session and real threads; only the tool is the test's own, since the five
real tools end when they end): calls run at once on worker threads and are answered when each
ends, in any order; a cancelled call is never answered (the spec); closing the session waits for
the calls in flight and answers them."""

from __future__ import annotations

import json
import threading
from typing import Any

from msgspec import Struct

from codeask.mcp.protocol import ServerInfo, Session
from codeask.mcp.toolkit import Tool

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


class Wait(Struct):
    name: str


class Gates:
    """A tool that ends when the test opens its gate."""

    def __init__(self) -> None:
        self.gates: dict[str, threading.Event] = {}
        self.started: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def gate(self, name: str) -> threading.Event:
        with self._lock:
            return self.gates.setdefault(name, threading.Event())

    def began(self, name: str) -> threading.Event:
        with self._lock:
            return self.started.setdefault(name, threading.Event())

    def run(self, given: Wait) -> str:
        self.began(given.name).set()
        assert self.gate(given.name).wait(30)
        return f"done {given.name}"


class Outbox:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.changed = threading.Condition()

    def send(self, data: bytes) -> None:
        with self.changed:
            self.lines.append(json.loads(data))
            self.changed.notify_all()

    def wait_for(self, message_id: int) -> dict[str, Any]:
        with self.changed:
            assert self.changed.wait_for(lambda: self.by_id(message_id) is not None, timeout=30)
            found = self.by_id(message_id)
            assert found is not None
            return found

    def by_id(self, message_id: int) -> dict[str, Any] | None:
        return next((m for m in self.lines if m.get("id") == message_id), None)


def session() -> tuple[Session, Gates, Outbox]:
    gates, outbox = Gates(), Outbox()
    tool = Tool(name="wait", description="waits", arguments=Wait, run=gates.run)
    server = ServerInfo(name="t", version="0", title="t", instructions="", tools=[tool])
    opened = Session(server, outbox.send)
    opened.receive(json.dumps(INIT))
    return opened, gates, outbox


def call(opened: Session, message_id: int, name: str) -> None:
    params = {"name": "wait", "arguments": {"name": name}}
    request = {"jsonrpc": "2.0", "id": message_id, "method": "tools/call", "params": params}
    opened.receive(json.dumps(request))


def text(answer: dict[str, Any]) -> str:
    return str(answer["result"]["content"][0]["text"])


def test_calls_run_at_once_and_are_answered_as_they_end() -> None:
    opened, gates, outbox = session()
    call(opened, 1, "slow")
    call(opened, 2, "fast")
    assert gates.began("slow").wait(30) and gates.began("fast").wait(30)  # both running
    opened.receive('{"jsonrpc":"2.0","id":3,"method":"ping"}')
    assert outbox.wait_for(3)["result"] == {}  # the reader is never blocked by a call
    gates.gate("fast").set()
    assert text(outbox.wait_for(2)) == "done fast"
    assert outbox.by_id(1) is None
    gates.gate("slow").set()
    assert text(outbox.wait_for(1)) == "done slow"
    opened.close()


def test_a_cancelled_call_is_never_answered() -> None:
    opened, gates, outbox = session()
    call(opened, 1, "cancelled")
    call(opened, 2, "kept")
    assert gates.began("cancelled").wait(30)
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    opened.receive(json.dumps(note))
    gates.gate("cancelled").set()
    gates.gate("kept").set()
    assert text(outbox.wait_for(2)) == "done kept"
    opened.close()  # every worker done: the cancelled call's answer would be written by now
    assert outbox.by_id(1) is None
    assert [m["id"] for m in outbox.lines] == [0, 2]


def test_closing_answers_the_calls_in_flight() -> None:
    opened, gates, outbox = session()
    call(opened, 1, "last")
    assert gates.began("last").wait(30)
    closer = threading.Thread(target=opened.close)
    closer.start()
    closer.join(0.2)
    assert closer.is_alive(), "close returned while a call was running"
    gates.gate("last").set()
    closer.join(30)
    assert text(outbox.wait_for(1)) == "done last"
