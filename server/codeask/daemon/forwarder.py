"""`codeask mcp` as a forwarder: the agent's stdio piped, line by line, to an MCP session in the
per-user daemon (docs/daemon.md), like `gopls -remote=auto`.

Standard library only (no numpy, no MCP SDK, no pydantic, no codeask.core): the process an
agent starts stays small. It reads just enough of each line to survive the daemon's death:

- it remembers the client's `initialize` request and `notifications/initialized`, and every
  request not answered yet (nor cancelled);
- when the connection drops (a crash, `kill -9`, `codeask daemon --stop`), it connects again,
  starting a daemon (or, when none can be reached, `codeask mcp` in a child process of its own
  with the daemon off), replays `initialize` under a private id (its answer is swallowed: the
  client was answered once) and `notifications/initialized`, then sends every unanswered
  request once more. Every tool is read-only, so a second send cannot do anything twice.
  A request whose second send is lost too is answered with an error ("codeask daemon
  restarted; retry"): a tool error for `tools/call`, a JSON-RPC error otherwise.
- only whole lines reach stdout: a reply cut by the drop is dropped and asked again. stdout
  carries nothing but the protocol; notes go to stderr.
"""

from __future__ import annotations

import os

from codeask import __version__
from codeask.daemon import protocol
from codeask.daemon.protocol import PROTOCOL
from codeask.daemon.relay import (
    RESTARTED,
    Pending,
    Relay,
    Upstream,
    request_key,
    send_all,
    sort_out,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: Lines up to this size are read for bookkeeping; longer ones pass through unread (an
#: agent's requests are small; the daemon refuses runaway lines itself, wire.py).
PARSE_LIMIT = 1 << 20
INTERNAL_ERROR = -32603


def hello(paths: list[str], *, allow_broad_root: bool, verbose: int) -> dict[str, Any]:
    """The request that opens an MCP session: what the in-process command would use (the
    folders named, the cwd they are relative to, the trust flag, the environment)."""
    return {
        "protocol": PROTOCOL,
        "version": __version__,
        "command": "mcp",
        "args": {"paths": list(paths), "allow_broad_root": allow_broad_root, "verbose": verbose},
        "cwd": os.getcwd(),
        "environment": protocol.environment(),
    }


class Lines:
    """Splits a byte stream into whole lines; lines over `limit` come out in pieces (flagged)."""

    def __init__(self, limit: int) -> None:
        self._buffer = bytearray()
        self._limit = limit
        self._scanned = 0

    def feed(self, chunk: bytes) -> list[tuple[bytes, bool]]:
        """(bytes, whole) pairs: `whole` False for a piece of a long line (passed unread)."""
        self._buffer += chunk
        out: list[tuple[bytes, bool]] = []
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline < 0:
                self._scanned = len(self._buffer)
                if len(self._buffer) > self._limit:
                    out.append((bytes(self._buffer), False))
                    self._buffer.clear()
                    self._scanned = 0
                return out
            out.append((bytes(self._buffer[: newline + 1]), True))
            del self._buffer[: newline + 1]
            self._scanned = 0

    def rest(self) -> bytes:
        return bytes(self._buffer)


class Proxy(Relay):
    """The agent's stdin → upstream, upstream → the agent's stdout, surviving upstream deaths."""

    SESSION = "the MCP session"

    def __init__(self, upstream: Upstream, reconnect: Callable[[], Upstream], **fds: int) -> None:
        super().__init__(upstream, reconnect, **fds)
        self._pending: dict[str, Pending] = {}
        self._init: bytes | None = None
        self._init_key = ""
        self._init_answered = False
        self._initialized: bytes | None = None
        self._lines = Lines(PARSE_LIMIT)
        self._streaming = False
        """Inside a long line passed through unread."""

    # ---- the agent's side ----------------------------------------------------------------------
    def _from_client(self, chunk: bytes) -> bool:
        for data, whole in self._lines.feed(chunk):
            if whole and not self._streaming:
                self._from_agent(data)
            else:
                self._pass(data)
                self._streaming = not whole
        return False

    def _input_ended(self) -> None:
        if self._lines.rest():
            self._pass(self._lines.rest())

    def _from_agent(self, line: bytes) -> None:
        message = _parse(line)
        with self._send:
            if isinstance(message, dict) and isinstance(message.get("method"), str):
                with self._state:
                    self._note_request(message, line)
            self._pass_locked(line)

    def _note_request(self, message: dict[str, Any], line: bytes) -> None:
        method = message["method"]
        if "id" not in message:
            if method == "notifications/initialized":
                self._initialized = line
            elif method == "notifications/cancelled":  # no answer is due: never send it again
                params = message.get("params")
                if isinstance(params, dict) and "requestId" in params:
                    self._pending.pop(request_key(params["requestId"]), None)
            return
        key = request_key(message["id"])
        self._pending[key] = Pending(message["id"], method, line)
        if method == "initialize":
            self._init, self._init_key, self._init_answered = line, key, False

    def _pass(self, data: bytes) -> None:
        with self._send:
            self._pass_locked(data)

    def _pass_locked(self, data: bytes) -> None:
        try:  # noqa: SIM105 - contextlib is ~0.3 MB of the forwarder
            self._up.send(data)
        except OSError:  # the reader sees the drop; pending requests go again
            pass

    # ---- the upstream's side -------------------------------------------------------------------
    def _upstream_reader(self, upstream: Upstream) -> Callable[[bytes], None]:
        lines = Lines(1 << 62)  # replies go out whole only: a cut one is asked again

        def take(chunk: bytes) -> None:
            for data, _ in lines.feed(chunk):
                self._to_client(data)

        return take

    def _to_client(self, line: bytes) -> None:
        message = _parse(line)
        if isinstance(message, dict) and "id" in message and "method" not in message:
            key = request_key(message["id"])
            with self._state:
                if self._swallowed(key):
                    return
                self._pending.pop(key, None)
                if key == self._init_key:
                    self._init_answered = True
        self._write_out(line)

    # ---- a dropped upstream --------------------------------------------------------------------
    def _recover(self, generation: int) -> None:
        with self._send:
            upstream = self._replace_upstream(generation)
            if upstream is None:
                return
            self._replay(upstream)
            self._start_reader(upstream, self._generation)

    def _replay(self, upstream: Upstream) -> None:
        """The handshake again, then every unanswered request once more (or its error)."""
        head: list[bytes] = []
        with self._state:
            if self._init is not None and self._init_answered:
                message = protocol.decode(self._init, "surrogatepass")
                message["id"] = self._replay_id()
                head.append(_line(message))
                if self._initialized is not None:
                    head.append(self._initialized)
            again, lost = sort_out(self._pending, list(self._pending))
        self._answer_lost(again, lost)
        send_all(upstream, head + again)

    def _pending_table(self) -> dict[str, Pending]:
        return self._pending

    def _error(self, request: Pending) -> bytes:
        return _error_line(request)


def _parse(line: bytes) -> Any:
    if len(line) > PARSE_LIMIT * 64:
        return None
    try:
        return protocol.decode(line, "surrogatepass")
    except (ValueError, RecursionError):  # deep nesting: passed on unread, never fatal
        return None


def _error_line(request: Pending) -> bytes:
    body: dict[str, Any]
    if request.method == "tools/call":
        text = {"type": "text", "text": RESTARTED}
        body = {"jsonrpc": "2.0", "id": request.id, "result": {"content": [text], "isError": True}}
    else:
        error = {"code": INTERNAL_ERROR, "message": RESTARTED}
        body = {"jsonrpc": "2.0", "id": request.id, "error": error}
    return _line(body)


def _line(message: dict[str, Any]) -> bytes:
    """`json.dumps(message)` and a newline (protocol.py's writer: `json` is not imported)."""
    return protocol.encode(message, (", ", ": ")) + b"\n"
