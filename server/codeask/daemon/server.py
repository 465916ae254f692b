"""The daemon: one per user, answering the CLI's commands from warm memory.

`serve()` takes `daemon.lock` (flock: a second daemon started in a race exits at once; the
kernel drops the lock when the holder dies, even by SIGKILL), binds `daemon.sock` 0600, and
answers one request per connection. Peers of another uid are dropped unanswered (SO_PEERCRED).
A request names a typed operation (messages.py: its arguments convert to its call struct) and
is answered with data, the operation's answer, which the client renders as its own process
would; requests run concurrently, each in its connection's thread, with no lock around them, no
change of directory and no captured output. A session (`codeask mcp`) passes the same checks,
then keeps its connection for its own protocol, concurrently with everything else, until the
client leaves or the daemon stops (which hangs up on it: its forwarder reconnects to the next
daemon). After `idle_seconds` without a request (an open session counts as one) the socket is
removed and the process exits. Connections, request bytes in flight and running out of
descriptors are bounded in limits.py: none of them ends the daemon."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from codeask import __version__
from codeask.core.runtime.flock_probe import held_note
from codeask.daemon import protocol
from codeask.daemon.answers import CALLS as CALLS  # re-exported: the daemon's operations
from codeask.daemon.answers import Answers, Operation, Session, tell
from codeask.daemon.answers import CodeWatch as CodeWatch
from codeask.daemon.answers import CommandError as CommandError
from codeask.daemon.limits import (
    REQUEST_BUDGET,
    REQUEST_LIMIT,
    Admission,
    Budget,
    Overflow,
    Share,
)
from codeask.daemon.limits import connection_limit as connection_limit
from codeask.daemon.messages import Request
from codeask.daemon.paths import LOCK_NAME, SOCKET_NAME
from codeask.daemon.sessions import LiveSessions

log = logging.getLogger("codeask.daemon")

#: Seconds a client may take to send its request once connected.
REQUEST_SECONDS = 30.0
#: Seconds a stopping daemon waits for the requests it accepted.
DRAIN_SECONDS = 30.0
#: How often the accept loop looks at the idle clock and the stop flag.
TICK_SECONDS = 0.25
#: accept()'s errors that mean "out of descriptors or memory for now", never "stop".
STARVED = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


class Daemon:
    """The daemon of one runtime directory."""

    def __init__(
        self,
        run_dir: Path,
        operations: Mapping[str, Operation],
        *,
        idle_seconds: float,
        environment: dict[str, str],
        on_exit: Callable[[], None] = lambda: None,
        sessions: Mapping[str, Session] | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.idle_seconds = idle_seconds
        self.on_exit = on_exit
        self.started = time.time()
        self.served = 0
        self._in_flight = 0
        self._count = threading.Lock()
        self._last = time.monotonic()
        self._stop = threading.Event()
        self._sessions = LiveSessions(self._stop)
        self._info: Callable[[], dict[str, Any]] = dict
        self._answers = Answers(
            operations,
            sessions or {},
            environment,
            stop=self._stop,
            info=self.info,
            counted=self._counted,
        )
        self._admission = Admission(connection_limit(), tell)
        self._budget = Budget(REQUEST_BUDGET)
        self._overflow = Overflow(self._admission.limit, tell)
        self._starved = False

    def describe_with(self, info: Callable[[], dict[str, Any]]) -> None:
        """Extra fields `codeask daemon --status` shows (e.g. the folders held)."""
        self._info = info

    # ---- lifetime ------------------------------------------------------------------------------
    def serve(self) -> int:
        """Run until idle, stopped or signalled; 0 also when another daemon already runs."""
        lock = _take_lock(self.run_dir / LOCK_NAME)
        if lock is None:
            log.info("another codeask daemon holds %s; leaving it to answer", self.run_dir)
            return 0
        path = self.run_dir / SOCKET_NAME
        listener = _bind(path)
        bound = os.stat(path).st_ino
        signal.signal(signal.SIGTERM, lambda *_: self._stop.set())
        self._answers.code.changed()  # what is loaded now is the code this daemon runs
        log.info("codeask daemon %s (pid %d) listening on %s", __version__, os.getpid(), path)
        try:
            self._accept_loop(listener)
        finally:
            with contextlib.suppress(OSError):
                if os.stat(path).st_ino == bound:  # never remove a successor's socket
                    path.unlink()
            listener.close()
            self._sessions.hang_up()
            self._drain()
            self.on_exit()
            log.info("codeask daemon (pid %d) exits after %d requests", os.getpid(), self.served)
            os.close(lock)  # last: a new daemon may bind only once this one is gone
        return 0

    def _accept_loop(self, listener: socket.socket) -> None:
        listener.settimeout(TICK_SECONDS)
        threading.Thread(target=self._overflow.run, daemon=True).start()
        while not self._stop.is_set():
            if self._idle():
                log.info("idle for %.0f s: exiting", self.idle_seconds)
                return
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if exc.errno not in (*STARVED, errno.ECONNABORTED, errno.EINTR):
                    raise
                if exc.errno in STARVED:
                    self._starving(exc)
                continue
            self._starved = False
            self._start(conn)

    def _starving(self, exc: OSError) -> None:
        """Out of descriptors: the oldest connection without a request makes room, else
        the next accept waits a tick (the connections queued wait, none is lost)."""
        if not self._starved:
            log.warning("cannot accept a connection (%s): closing idle ones, waiting", exc)
        self._starved = True
        if not self._admission.shed_oldest():
            self._stop.wait(TICK_SECONDS)

    def _start(self, conn: socket.socket) -> None:
        """A thread for `conn`, when the connection cap (limits.py) lets it in."""
        if not self._admission.admit(conn):
            self._overflow.refuse(conn)
            return
        with self._count:
            self._in_flight += 1
        try:
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()
        except RuntimeError as exc:  # no thread to be had: as out of descriptors
            log.warning("cannot start a thread for a connection: %s", exc)
            self._admission.closed(conn)
            conn.close()
            with self._count:
                self._in_flight -= 1

    def _drain(self) -> None:
        """Let requests already accepted finish (a stop asked mid-search must not close the
        folders under it), for at most DRAIN_SECONDS."""
        deadline = time.monotonic() + DRAIN_SECONDS
        while time.monotonic() < deadline:
            with self._count:
                if not self._in_flight:
                    return
            time.sleep(0.05)

    def _idle(self) -> bool:
        with self._count:
            return not self._in_flight and time.monotonic() - self._last > self.idle_seconds

    def stop(self) -> None:
        self._stop.set()

    # ---- one connection ------------------------------------------------------------------------
    def _connection(self, conn: socket.socket) -> None:
        try:
            with conn:
                try:
                    self._handle(conn)
                finally:  # while `conn` is open: never shed once closed
                    self._admission.closed(conn)
        finally:
            with self._count:
                self._in_flight -= 1
                self._last = time.monotonic()

    def _handle(self, conn: socket.socket) -> None:
        """Check the peer, read the request's length, take its share of the budget, go on."""
        uid = protocol.peer_uid(conn)
        if uid is not None and uid != os.getuid():
            log.warning("refused a connection from uid %d (not uid %d)", uid, os.getuid())
            return
        conn.settimeout(REQUEST_SECONDS)
        deadline = time.monotonic() + REQUEST_SECONDS
        try:
            size = protocol.receive_size(conn, REQUEST_LIMIT)
        except protocol.TooLarge as exc:
            if self._admission.started(conn):
                log.warning("refused a request: %s", exc)
                tell(
                    conn,
                    f"a request of {exc.size} bytes is over the daemon's {exc.limit}-byte limit",
                )
            return
        except (protocol.ProtocolError, OSError) as exc:
            if self._admission.started(conn):  # else it was shed: said so already
                log.warning("dropped a connection: %s", exc)
            return
        share = self._budget.take(size, max(0.0, deadline - time.monotonic()))
        if share is None:
            if self._admission.started(conn):
                tell(conn, "the daemon has too many requests in flight")
            return
        try:
            self._request(conn, size, deadline, share)
        finally:
            share.give()

    def _request(self, conn: socket.socket, size: int, deadline: float, share: Share) -> None:
        """Read the request's `size` bytes (`share`: their part of the budget) and answer it."""
        try:
            conn.settimeout(max(0.001, deadline - time.monotonic()))
            request = msgspec.convert(protocol.receive_body(conn, size), Request)
        except (protocol.ProtocolError, OSError, msgspec.ValidationError) as exc:
            if self._admission.started(conn):
                log.warning("dropped a connection: %s", exc)
            return
        if not self._admission.started(conn):
            return  # shed while its last bytes arrived: it was told so
        if request.command in self._answers.sessions:
            command = request.command
            serve = self._session(conn, request)
            del request  # the request's bytes leave the budget: nothing keeps them now
            share.give()
            if serve is not None:
                self._counted()
                self._sessions.serve(conn, command, serve)
            return
        answer = self._answers.answer(request)
        conn.settimeout(None)
        try:
            protocol.send(conn, msgspec.to_builtins(answer))
        except (protocol.ProtocolError, OSError, ValueError) as exc:
            log.warning("could not send the reply: %s", exc)

    def _session(
        self, conn: socket.socket, request: Request
    ) -> Callable[[socket.socket], None] | None:
        """A long-lived connection: the same checks as a command, then "ok" and what serves
        the session's own bytes (None: refused, failed, or the reply could not be sent)."""
        answer, serve = self._answers.open_session(request)
        conn.settimeout(None)
        try:
            protocol.send(conn, msgspec.to_builtins(answer))
        except (protocol.ProtocolError, OSError, ValueError) as exc:
            log.warning("could not send the reply: %s", exc)
            return None
        return serve

    def _counted(self) -> None:
        """One more request answered (`codeask daemon --status`)."""
        with self._count:
            self.served += 1

    def info(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "version": __version__,
            "socket": str(self.run_dir / SOCKET_NAME),
            "uptime_seconds": round(time.time() - self.started, 1),
            "requests": self.served,
            "sessions": len(self._sessions),
            "idle_seconds": self.idle_seconds,
            **self._info(),
        }


def _take_lock(path: Path) -> int | None:
    """The daemon lock's fd, held for life (pid written for messages), or None when taken."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def lock_holder(path: Path) -> int | None:
    """The pid of the daemon holding the lock at `path`, or None when no daemon holds it
    (0: one holds it and has not written its pid yet)."""
    return held_note(path, _read_pid)


def _read_pid(fd: int) -> int:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else 0


def _bind(path: Path) -> socket.socket:
    """A listening socket at `path`, 0600 from birth (umask), replacing a dead daemon's."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # we hold the lock: whatever is there is a dead daemon's
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    listener.listen(64)
    return listener
