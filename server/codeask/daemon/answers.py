"""What the daemon replies to one request, apart from how connections come and go (server.py):
the checks every request passes (protocol, version, codeask's code on disk, environment), the
typed operation run on its call struct and answered as data, and a session's opening.

A request names a typed operation (messages.py: its arguments convert to its call struct); the
answer is data the client renders as its own process would. `Answers` holds no lock around an
operation: requests run concurrently, each in its connection's thread."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from codeask import __version__
from codeask.daemon import protocol
from codeask.daemon.messages import (
    AskCall,
    IndexCall,
    Reply,
    Request,
    SearchCall,
    Status,
    StatusCall,
)
from codeask.daemon.protocol import PROTOCOL

log = logging.getLogger("codeask.daemon")

#: An operation: its call struct (messages.py) and the client's cwd in; out, its answer (a
#: msgspec Struct or plain data) and the notes for the client's stderr. A CommandError refuses
#: it as a user error.
Operation = Callable[[Any, str], tuple[Any, str]]
#: Each operation's call struct.
CALLS: dict[str, type] = {
    "search": SearchCall,
    "status": StatusCall,
    "ask": AskCall,
    "index": IndexCall,
}
#: A session (`codeask mcp`): the parsed arguments and the client's cwd in (a CommandError
#: refuses it as a user error); out, what serves the connection once "ok" is sent, until the
#: client leaves. Sessions run concurrently, each in its own thread (they take absolute paths
#: only).
Session = Callable[[argparse.Namespace, str], Callable[[socket.socket], None]]


class CommandError(Exception):
    """A user error an operation raised: its one line, exit code and the notes written
    before it go back to the client."""

    def __init__(self, message: str, code: int, notes: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.notes = notes


def reply(status: Status, **fields: Any) -> Reply:
    """A reply of this daemon's protocol and version."""
    return Reply(protocol=PROTOCOL, version=__version__, status=status, **fields)


def tell(conn: socket.socket, message: str) -> None:
    """A refused reply saying `message`, written only if it fits without waiting."""
    data = protocol.encode(msgspec.to_builtins(reply("refused", message=message)))
    with contextlib.suppress(OSError):
        conn.send(len(data).to_bytes(protocol.HEADER_BYTES, "big") + data, socket.MSG_DONTWAIT)


class Answers:
    """The replies of one daemon. `stop` is the daemon's stop flag (set by `stop` and by code
    that changed on disk), `info` what `ping` shows, `counted` called once per operation run."""

    def __init__(
        self,
        operations: Mapping[str, Operation],
        sessions: Mapping[str, Session],
        environment: dict[str, str],
        *,
        stop: threading.Event,
        info: Callable[[], dict[str, Any]],
        counted: Callable[[], None],
    ) -> None:
        self.operations = dict(operations)
        self.sessions = dict(sessions)
        self.environment = environment
        self.code = CodeWatch()
        self._stop = stop
        self._info = info
        self._counted = counted

    def answer(self, request: Request) -> Reply:
        """The reply to a request that is not a session: ping, stop, or an operation."""
        if request.protocol == PROTOCOL and request.command == "ping":  # any version may ask
            return reply("ok", info=self._info())  # (`codeask daemon --status`)
        if request.protocol == PROTOCOL and request.command == "stop":  # and stop it (upgrades)
            self._stop.set()
            return reply("ok", message="stopping")
        refused = self.refusal(request)
        if refused is not None:
            return refused
        operation = self.operations.get(request.command)
        if operation is None or request.command not in CALLS:
            return reply("refused", message=f"unknown command {request.command!r}")
        self._counted()
        return self._run(operation, request)

    def open_session(
        self, request: Request
    ) -> tuple[Reply, Callable[[socket.socket], None] | None]:
        """(the reply, what serves the session's bytes once it is sent; None: refused or
        failed): the same checks as an operation first."""
        refused = self.refusal(request)
        if refused is not None:
            return refused, None
        try:
            serve = self.sessions[request.command](argparse.Namespace(**request.args), request.cwd)
        except CommandError as exc:
            return reply("user_error", code=exc.code, message=str(exc)), None
        except Exception as exc:  # the client serves in-process (and shows the error)
            log.exception("%s session failed to start", request.command)
            return reply("failed", message=f"{type(exc).__name__}: {exc}"), None
        return reply("ok"), serve

    def refusal(self, request: Request) -> Reply | None:
        """Why this daemon must not answer `request` (None: it may): another protocol or
        version, codeask's code changed on disk, another environment."""
        mismatch = (
            f"version mismatch: the daemon is codeask {__version__} (protocol {PROTOCOL}), "
            f"the client {request.version} (protocol {request.protocol})"
        )
        if request.protocol != PROTOCOL or request.version != __version__:
            return reply("refused", message=mismatch)
        stale = self.code.changed()
        if stale:
            self._stop.set()  # the next command starts a daemon with the code on disk
            return reply(
                "refused",
                message=f"codeask's code changed since the daemon started ({stale}); "
                "it exits, the next command starts a new one",
            )
        if request.environment != self.environment:
            return reply(
                "refused",
                message="the daemon was started under another environment (CODEASK_*, HOME, "
                "XDG_* or GIT_* differ)",
            )
        return None

    def _run(self, operation: Operation, request: Request) -> Reply:
        """The operation on its typed arguments: its answer as data, or the user error."""
        try:
            call: Any = msgspec.convert(request.args, CALLS[request.command])
        except msgspec.ValidationError as exc:
            return reply("refused", message=f"bad {request.command} arguments: {exc}")
        try:
            answer, notes = operation(call, request.cwd)
        except CommandError as exc:
            return reply("user_error", notes=exc.notes, code=exc.code, message=str(exc))
        except Exception as exc:  # the client answers in-process (and shows the real error)
            log.exception("%s failed", request.command)
            return reply("failed", message=f"{type(exc).__name__}: {exc}")
        return reply("ok", answer=answer, notes=notes)


class CodeWatch:
    """codeask's source files as this process loaded them. A newer one on disk (an upgrade,
    a `git pull` in a checkout: the version string need not change) means the daemon would
    answer with old code: it refuses and exits instead. ~150 stats per request."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}

    def changed(self) -> str:
        """The first loaded codeask file whose mtime moved since first seen ('' when none)."""
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None) if name.startswith("codeask") else None
            if not path:
                continue
            try:
                mtime = os.stat(path).st_mtime
            except OSError:
                return str(path)
            if self._seen.setdefault(path, mtime) != mtime:
                return str(path)
        return ""
