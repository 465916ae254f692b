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
  request once more. All five tools are read-only, so a second send cannot do anything twice.
  A request whose second send is lost too is answered with an error ("codeask daemon
  restarted; retry"): a tool error for `tools/call`, a JSON-RPC error otherwise.
- only whole lines reach stdout: a reply cut by the drop is dropped and asked again. stdout
  carries nothing but the protocol; notes go to stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from codeask import __version__
from codeask.daemon import protocol
from codeask.daemon.protocol import PROTOCOL

RESTARTED = "codeask daemon restarted; retry"
#: Lines up to this size are read for bookkeeping; longer ones pass through unread (an
#: agent's requests are small; the daemon refuses runaway lines itself, wire.py).
PARSE_LIMIT = 1 << 20
#: Reconnections allowed within RECONNECT_WINDOW seconds; past that the forwarder answers what
#: is pending with an error and exits (the agent sees the server end, never a hang).
RECONNECTS = 5
RECONNECT_WINDOW = 60.0
#: After the agent closes stdin: seconds to wait for the answers still due.
CLOSE_SECONDS = 10.0
REPLAY_ID = "codeask-forwarder-replay-"
INTERNAL_ERROR = -32603
CHUNK = 65536


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


class Upstream(Protocol):
    """Where the agent's lines go: the daemon's session, or a child `codeask mcp`."""

    def send(self, data: bytes) -> None: ...
    def recv(self) -> bytes: ...
    def end_input(self) -> None: ...
    def close(self) -> None: ...


class SocketUpstream:
    """An MCP session in the daemon, on a connection `client.open_session` opened."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self) -> bytes:
        return self.sock.recv(CHUNK)

    def end_input(self) -> None:
        self.sock.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.sock.close()


class ChildUpstream:
    """`codeask mcp` in a child process with the daemon off: the answer when no daemon can be
    reached after a drop (its stderr is ours)."""

    def __init__(self, argv: list[str]) -> None:
        import subprocess  # only on this rare path: it costs a few ms and ~1 MB

        env = dict(os.environ, CODEASK_DAEMON__ENABLED="false")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0
        )

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def recv(self) -> bytes:
        assert self.proc.stdout is not None
        return os.read(self.proc.stdout.fileno(), CHUNK)

    def end_input(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.end_input_quietly()
            try:
                self.proc.wait(CLOSE_SECONDS)
            except Exception:  # subprocess.TimeoutExpired
                self.proc.kill()
                self.proc.wait()

    def end_input_quietly(self) -> None:
        with contextlib.suppress(OSError):
            self.end_input()


class GiveUp(Exception):
    """No upstream can be had: the forwarder answers what is pending and exits."""


#: Sessions tried before a forwarder serves from a child process with the daemon off.
RECONNECT_TRIES = 2


def reconnector(
    open_session: Callable[[dict[str, Any]], tuple[socket.socket, dict[str, Any]]],
    request: dict[str, Any],
    child_argv: list[str],
    note: Callable[[BaseException], None],
) -> Callable[[], Upstream]:
    """What `serve` and `mcp` forwarders call when their daemon goes away: the next daemon
    (started when none answers; a second try when the one reached dies too), else the same
    command in a child process with the daemon off (`note` says why)."""

    def reconnect() -> Upstream:
        for attempt in range(RECONNECT_TRIES):
            try:
                again, answer = open_session(request)
            except Exception as exc:
                if attempt + 1 < RECONNECT_TRIES:
                    continue
                note(exc)
                return ChildUpstream(child_argv)
            if answer["status"] != "ok":
                raise GiveUp(str(answer.get("message")))
            return SocketUpstream(again)
        raise AssertionError("unreachable")

    return reconnect


class _Pending:
    """A request the agent sent and was not answered yet (a plain class: dataclasses' import
    costs more than the forwarder's own code)."""

    __slots__ = ("id", "line", "method", "sends")

    def __init__(self, request_id: Any, method: str, line: bytes) -> None:
        self.id = request_id
        self.method = method
        self.line = line
        self.sends = 1


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


class Proxy:
    """The agent's stdin → upstream, upstream → the agent's stdout, surviving upstream deaths."""

    def __init__(
        self,
        upstream: Upstream,
        reconnect: Callable[[], Upstream],
        *,
        stdin_fd: int = 0,
        stdout_fd: int = 1,
    ) -> None:
        self._up = upstream
        self._reconnect = reconnect
        self._in, self._out_fd = stdin_fd, stdout_fd
        self._send = threading.Lock()
        """Held while writing upstream and while replacing it (never waits on the reader)."""
        self._state = threading.Lock()
        """The bookkeeping below; held only briefly, never across I/O."""
        self._out = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._init: bytes | None = None
        self._init_key = ""
        self._init_answered = False
        self._initialized: bytes | None = None
        self._swallow: set[str] = set()
        self._replays = 0
        self._generation = 0
        self._closing = False
        self._done = threading.Event()
        self._reconnects: list[float] = []
        self.restarts = 0

    # ---- the agent's side ----------------------------------------------------------------------
    def run(self) -> int:
        """Forward until the agent closes stdin (and its answers came back), then 0."""
        self._start_reader(self._up, 0)
        lines = Lines(PARSE_LIMIT)
        streaming = False  # inside a long line passed through unread
        while True:
            try:
                chunk = os.read(self._in, CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                break
            for data, whole in lines.feed(chunk):
                if whole and not streaming:
                    self._from_client(data)
                else:
                    self._pass(data)
                    streaming = not whole
        if lines.rest():
            self._pass(lines.rest())
        with self._send:
            with self._state:
                self._closing = True
            with contextlib.suppress(OSError):
                self._up.end_input()
        self._done.wait(CLOSE_SECONDS)
        with self._send:
            self._up.close()
        return 0

    def _from_client(self, line: bytes) -> None:
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
                    self._pending.pop(_key(params["requestId"]), None)
            return
        key = _key(message["id"])
        self._pending[key] = _Pending(message["id"], method, line)
        if method == "initialize":
            self._init, self._init_key, self._init_answered = line, key, False

    def _pass(self, data: bytes) -> None:
        with self._send:
            self._pass_locked(data)

    def _pass_locked(self, data: bytes) -> None:
        with contextlib.suppress(OSError):  # the reader sees the drop; pending requests go again
            self._up.send(data)

    # ---- the upstream's side -------------------------------------------------------------------
    def _start_reader(self, upstream: Upstream, generation: int) -> None:
        threading.Thread(
            target=self._pump, args=(upstream, generation), name="codeask-forward", daemon=True
        ).start()

    def _pump(self, upstream: Upstream, generation: int) -> None:
        lines = Lines(1 << 62)  # replies go out whole only: a cut one is asked again
        while True:
            try:
                chunk = upstream.recv()
            except OSError:
                chunk = b""
            if not chunk:
                break
            for data, _ in lines.feed(chunk):
                self._to_client(data)
        with self._state:
            closing = self._closing
        if closing:
            self._done.set()
            return
        self._recover(generation)

    def _to_client(self, line: bytes) -> None:
        message = _parse(line)
        if isinstance(message, dict) and "id" in message and "method" not in message:
            key = _key(message["id"])
            with self._state:
                if key in self._swallow:
                    self._swallow.discard(key)
                    return
                self._pending.pop(key, None)
                if key == self._init_key:
                    self._init_answered = True
        self._write_out(line)

    def _write_out(self, data: bytes) -> None:
        with self._out:
            view = memoryview(data)
            while view:
                try:
                    written = os.write(self._out_fd, view)
                except OSError:
                    return  # the agent is gone; its stdin ends too
                view = view[written:]

    # ---- a dropped upstream --------------------------------------------------------------------
    def _recover(self, generation: int) -> None:
        with self._send:
            if generation != self._generation:
                return
            with contextlib.suppress(OSError):
                self._up.close()
            try:
                upstream = self._next_upstream()
            except GiveUp as exc:
                self._give_up(str(exc))
                return
            self._generation += 1
            self._up = upstream
            self.restarts += 1
            self._replay(upstream)
            self._start_reader(upstream, self._generation)

    def _next_upstream(self) -> Upstream:
        now = time.monotonic()
        self._reconnects = [t for t in self._reconnects if now - t < RECONNECT_WINDOW]
        if len(self._reconnects) >= RECONNECTS:
            raise GiveUp(f"{RECONNECTS} reconnections within {RECONNECT_WINDOW:.0f} s")
        self._reconnects.append(now)
        try:
            return self._reconnect()
        except GiveUp:
            raise
        except Exception as exc:
            raise GiveUp(f"{type(exc).__name__}: {exc}") from exc

    def _replay(self, upstream: Upstream) -> None:
        """The handshake again, then every unanswered request once more (or its error)."""
        head: list[bytes] = []
        again: list[bytes] = []
        lost: list[_Pending] = []
        with self._state:
            if self._init is not None and self._init_answered:
                self._replays += 1
                replay_id = f"{REPLAY_ID}{self._replays}"
                message = json.loads(self._init)
                message["id"] = replay_id
                head.append(json.dumps(message, ensure_ascii=True).encode() + b"\n")
                self._swallow.add(_key(replay_id))
                if self._initialized is not None:
                    head.append(self._initialized)
            for key, pending in list(self._pending.items()):
                if pending.sends >= 2:
                    del self._pending[key]
                    lost.append(pending)
                else:
                    pending.sends += 1
                    again.append(pending.line)
        for pending in lost:
            self._write_out(_error_line(pending))
        sys.stderr.write(
            f"codeask: the daemon went away; session resumed ({len(again)} unanswered "
            f"requests sent again, {len(lost)} answered '{RESTARTED}')\n"
        )
        sys.stderr.flush()
        for line in head + again:
            try:
                upstream.send(line)
            except OSError:
                return  # dropped again: its reader recovers once more

    def _give_up(self, why: str) -> None:
        with self._state:
            pending = list(self._pending.values())
            self._pending.clear()
        for request in pending:
            self._write_out(_error_line(request))
        sys.stderr.write(f"codeask: the MCP session cannot continue ({why}); exiting\n")
        sys.stderr.flush()
        os._exit(1)  # the main thread sits in a read of stdin: end the process itself


def _parse(line: bytes) -> Any:
    if len(line) > PARSE_LIMIT * 64:
        return None
    try:
        return json.loads(line)
    except (ValueError, RecursionError):  # deep nesting: passed on unread, never fatal
        return None


def _key(request_id: Any) -> str:
    """A request id as a dict key (1, "1" and 1.0 stay apart)."""
    return json.dumps(request_id, sort_keys=True)


def _error_line(request: _Pending) -> bytes:
    body: dict[str, Any]
    if request.method == "tools/call":
        text = {"type": "text", "text": RESTARTED}
        body = {"jsonrpc": "2.0", "id": request.id, "result": {"content": [text], "isError": True}}
    else:
        error = {"code": INTERNAL_ERROR, "message": RESTARTED}
        body = {"jsonrpc": "2.0", "id": request.id, "error": error}
    return json.dumps(body, ensure_ascii=True).encode() + b"\n"
