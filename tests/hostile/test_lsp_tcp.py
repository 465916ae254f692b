"""`codeask serve --tcp`: the same framing reader and lifecycle gate as stdio, over a socket."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from support import PYTHON_M
from support.lsp_wire import frame, frame_bytes

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class SocketClient:
    """A hand-written client: the test chooses every byte."""

    def __init__(self, port: int) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read_exactly(self, count: int) -> bytes:
        data = b""
        while len(data) < count:
            piece = self.sock.recv(count - len(data))
            assert piece, "the server closed the connection"
            data += piece
        return data

    def message(self) -> dict[str, Any]:
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            header += self._read_exactly(1)
        length = int(header.split(b":")[1].split(b"\r\n")[0])
        return dict(json.loads(self._read_exactly(length)))

    def reply(self, msg_id: int | None) -> dict[str, Any]:
        """The response with `msg_id` (server notifications and requests are skipped)."""
        while True:
            message = self.message()
            if "method" not in message and message.get("id") == msg_id:
                return message


def test_tcp_serves_through_the_framing_reader_and_the_gate(tmp_path: Path) -> None:
    port = _free_port()
    env = os.environ | {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    server = subprocess.Popen(
        [*PYTHON_M, "serve", "--tcp", str(port)],
        env=env,
        cwd=tmp_path,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = SocketClient(port)
        # before initialize: ServerNotInitialized, like stdio
        client.send(frame({"jsonrpc": "2.0", "id": 1, "method": "codeask/indexStatus"}))
        early = client.reply(1)
        assert early["error"]["code"] == -32002, early
        # a body that is not JSON gets a parse error (id null) and the stream stays in sync
        client.send(frame_bytes(b'{"jsonrpc": "2.0", "id": 2, "method":'))
        assert client.reply(None)["error"]["code"] == -32700
        # a lying Content-Length: the reader resynchronises at the next real header
        client.send(frame_bytes(b'{"jsonrpc":"2.0"}', length=10_000))
        init = {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"capabilities": {}}}
        client.send(frame(init))
        assert "capabilities" in client.reply(3)["result"]
        client.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        bad_hover = {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "textDocument/hover",
            "params": {"textDocument": {"uri": "file:///x.py"}, "position": {"line": "x"}},
        }
        client.send(frame(bad_hover))
        error = client.reply(4)["error"]
        assert error["code"] == -32602 and "position" in error["message"], error
        client.send(frame({"jsonrpc": "2.0", "id": 5, "method": "codeask/indexStatus"}))
        assert client.reply(5)["result"]["state"] in ("empty", "ready", "indexing")
        client.send(frame({"jsonrpc": "2.0", "id": 6, "method": "shutdown"}))
        assert client.reply(6)["result"] is None
        client.send(frame({"jsonrpc": "2.0", "method": "exit"}))
        assert server.wait(30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
