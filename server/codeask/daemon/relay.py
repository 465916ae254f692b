"""`codeask mcp`'s forwarder's skeleton (forwarder.py): where the agent's bytes go (the daemon's
session, or a child with the daemon off), how the next one is found when the daemon dies, and
`Relay`, the loop the proxy fills in. (`codeask serve`'s forwarder is a plain pipe that ends
with the daemon, the editor restarting it: lsp_forwarder.py.)

`Relay` pipes the client's stdin to the upstream and the upstream to the client's stdout, one
reader thread per upstream. When an upstream drops it takes the next one (at most RECONNECTS
within RECONNECT_WINDOW seconds, else it answers what is pending with an error and exits); a
subclass keeps its protocol's bookkeeping: what it notes of each message, what it replays to
the next upstream, which requests it sends again.

Standard library only, and no `typing` at run time (its import is ~0.7 MB of every
forwarder's resident memory): the process a client starts stays small. For the same reason
it uses the C modules under the standard library's wrappers: `_socket` (`socket` imports enum
and selectors), `_thread` (`threading` imports functools and collections), protocol.py's
`_json` (`json` imports `re`), and try/except instead of contextlib.
"""

from __future__ import annotations

import _socket
import _thread
import os
import sys
import time

from codeask.daemon import protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

RESTARTED = "codeask daemon restarted; retry"
#: Reconnections allowed within RECONNECT_WINDOW seconds; past that the forwarder answers what
#: is pending with an error and exits (the client sees the server end, never a hang).
RECONNECTS = 5
RECONNECT_WINDOW = 60.0
#: Sessions tried before a forwarder serves from a child process with the daemon off.
RECONNECT_TRIES = 2
#: After the client closes stdin: seconds to wait for the answers still due.
CLOSE_SECONDS = 10.0
#: The id prefix of a replayed `initialize` (its answer is swallowed: the client had one).
REPLAY_ID = "codeask-forwarder-replay-"
CHUNK = 65536
#: Seconds between tries of a write to a non-blocking stdout that is full.
WAIT_WRITABLE = 0.002


class Upstream:
    """Where the client's bytes go: the daemon's session, or a child with the daemon off (a
    plain base class: `typing.Protocol` would import `typing` in every forwarder)."""

    def send(self, data: bytes) -> None:
        raise NotImplementedError

    def recv(self) -> bytes:
        raise NotImplementedError

    def end_input(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class SocketUpstream(Upstream):
    """A session in the daemon, on a connection `client.open_session` opened."""

    def __init__(self, sock: _socket.socket) -> None:
        self.sock = sock

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self) -> bytes:
        return self.sock.recv(CHUNK)

    def end_input(self) -> None:
        self.sock.shutdown(_socket.SHUT_WR)

    def close(self) -> None:
        self.sock.close()


class ChildUpstream(Upstream):
    """The same command in a child process with the daemon off: the answer when no daemon can
    be reached after a drop (its stderr is ours)."""

    def __init__(self, argv: list[str]) -> None:
        import subprocess  # only on this rare path: it costs a few ms and ~1 MB

        env = dict(os.environ, CODEASK_DAEMON__ENABLED="false")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0
        )

    def send(self, data: bytes) -> None:
        """All of `data`: an unbuffered pipe's write may take part of it (a write cut short by
        a signal, a stop and continue) and says how much."""
        assert self.proc.stdin is not None
        write_whole(self.proc.stdin.fileno(), data)

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
        try:  # noqa: SIM105 - contextlib is ~0.3 MB of the forwarder
            self.end_input()
        except OSError:
            pass


class GiveUp(Exception):
    """No upstream can be had: the forwarder answers what is pending and exits."""


def reconnector(
    open_session: Callable[[dict[str, Any]], tuple[_socket.socket, dict[str, Any]]],
    request: dict[str, Any],
    child_argv: list[str],
    note: Callable[[BaseException], None],
) -> Callable[[], Upstream]:
    """What the `mcp` forwarder calls when its daemon goes away: the next daemon
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


def request_key(request_id: Any) -> str:
    """A request id as a dict key (1, "1" and 1.0 stay apart)."""
    return protocol.id_key(request_id)


class Signal:
    """threading.Event's `set` and `wait`, on one `_thread` lock (held while not set)."""

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._lock.acquire()

    def set(self) -> None:
        try:  # noqa: SIM105 - contextlib is ~0.3 MB of the forwarder
            self._lock.release()
        except RuntimeError:  # set already
            pass

    def wait(self, timeout: float) -> bool:
        """True once set (at once when set already), False after `timeout` seconds."""
        if not self._lock.acquire(timeout=max(0.0, timeout)):
            return False
        self.set()  # set it back for the next wait
        return True


class Pending:
    """A request the client sent and was not answered yet (a plain class: dataclasses' import
    costs more than the forwarder's own code). `resend` False: never sent twice (it may act
    or stream); it is answered with the error instead."""

    __slots__ = ("data", "id", "method", "resend", "sends")

    def __init__(self, request_id: Any, method: str, data: bytes, resend: bool = True) -> None:
        self.id = request_id
        self.method = method
        self.data = data
        self.resend = resend
        self.sends = 1


def sort_out(table: dict[str, Pending], keys: Iterable[str]) -> tuple[list[bytes], list[Pending]]:
    """The requests of `keys` still in `table` when an upstream died: (the bytes to send once
    more, the requests to answer with the error: sent twice already, or never resent). The
    latter leave `table`."""
    again: list[bytes] = []
    lost: list[Pending] = []
    for key in keys:
        pending = table.get(key)
        if pending is None:
            continue  # answered by an earlier upstream, or cancelled
        if pending.sends >= 2 or not pending.resend:
            del table[key]
            lost.append(pending)
        else:
            pending.sends += 1
            again.append(pending.data)
    return again, lost


def send_all(upstream: Upstream, pieces: Iterable[bytes]) -> bool:
    """Send each piece; False when the upstream dropped again (its reader recovers once more)."""
    for data in pieces:
        try:
            upstream.send(data)
        except OSError:
            return False
    return True


def write_all(fd: int, data: bytes) -> None:
    """All of `data` to `fd` (the client's stdout), or as much as it takes before it closes."""
    try:
        write_whole(fd, data)
    except OSError:
        return  # the client is gone; its stdin ends too


def write_whole(fd: int, data: bytes) -> None:
    """All of `data` to `fd`, however many writes it takes, waiting while a non-blocking one
    is full (not a client gone); OSError when the reader is gone. The forwarder's own copy of
    core.runtime.pipe_write's loop: importing that would bring the engine's package in."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            time.sleep(WAIT_WRITABLE)  # the client reads on
            continue
        view = view[written:]


class Relay:
    """The client's stdin → upstream, upstream → the client's stdout, surviving upstream
    deaths. A subclass fills in its protocol: `_from_client`, `_upstream_reader`, `_recover`
    (with `_replace_upstream`), `_pending_table`, `_error`; and may end the input
    (`_input_ended`)."""

    #: Who cannot continue, in the note before the forwarder exits.
    SESSION = "the session"

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
        self._send = _thread.allocate_lock()
        """Held while writing upstream and while replacing it (never waits on the reader)."""
        self._state = _thread.allocate_lock()
        """The bookkeeping; held only briefly, never across I/O."""
        self._out = _thread.allocate_lock()
        self._swallow: set[str] = set()
        """Keys of private requests whose answers the client must not see."""
        self._replays = 0
        self._generation = 0
        self._closing = False
        self._done = Signal()
        self._reconnects: list[float] = []
        self.restarts = 0

    # ---- the client's side -------------------------------------------------------------------
    def run(self) -> int:
        """Forward until the client closes stdin (or `_from_client` says the session ended)
        and the answers still due came back; 0."""
        self._start_reader(self._up, 0)
        while True:
            try:
                chunk = os.read(self._in, CHUNK)
            except OSError:
                chunk = b""
            if not chunk or self._from_client(chunk):
                break
        self._input_ended()
        with self._send:
            with self._state:
                self._closing = True
            try:  # noqa: SIM105 - contextlib is ~0.3 MB of the forwarder
                self._up.end_input()
            except OSError:
                pass
        self._done.wait(CLOSE_SECONDS)
        with self._send:
            self._up.close()
        return 0

    def _from_client(self, chunk: bytes) -> bool:
        """The client's bytes, passed on and noted; True when the session ends with them."""
        raise NotImplementedError

    def _input_ended(self) -> None:
        """The client closed stdin (or ended the session): bytes still held go on now."""

    # ---- the upstream's side -----------------------------------------------------------------
    def _start_reader(self, upstream: Upstream, generation: int) -> None:
        """One thread per upstream (as a daemon thread: the process never waits for it)."""
        _thread.start_new_thread(self._pump, (upstream, generation))

    def _pump(self, upstream: Upstream, generation: int) -> None:
        take = self._upstream_reader(upstream)
        while True:
            try:
                chunk = upstream.recv()
            except OSError:
                chunk = b""
            if not chunk:
                break
            take(chunk)
        with self._state:
            closing = self._closing
        if closing:
            self._done.set()
            return
        self._recover(generation)

    def _upstream_reader(self, upstream: Upstream) -> Callable[[bytes], None]:
        """What takes this upstream's bytes (its own parser: a fresh one per upstream)."""
        raise NotImplementedError

    def _swallowed(self, key: str) -> bool:
        """An answer to a private request (the `_state` lock held): dropped here."""
        if key in self._swallow:
            self._swallow.discard(key)
            return True
        return False

    def _write_out(self, data: bytes) -> None:
        with self._out:
            write_all(self._out_fd, data)

    # ---- a dropped upstream ------------------------------------------------------------------
    def _recover(self, generation: int) -> None:
        """Called by the reader of a dropped upstream: replace it and restore the session."""
        raise NotImplementedError

    def _replace_upstream(self, generation: int) -> Upstream | None:
        """The next upstream, now current (`_send` held), or None: another reader recovered
        already."""
        if generation != self._generation:
            return None
        try:  # noqa: SIM105 - contextlib is ~0.3 MB of the forwarder
            self._up.close()
        except OSError:
            pass
        try:
            upstream = self._next_upstream()
        except GiveUp as exc:
            self._give_up(str(exc))
            return None
        self._generation += 1
        self._up = upstream
        self.restarts += 1
        return upstream

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

    def _replay_id(self) -> str:
        """A private id for the replayed `initialize` (`_state` held): its answer is
        swallowed."""
        self._replays += 1
        replay_id = f"{REPLAY_ID}{self._replays}"
        self._swallow.add(request_key(replay_id))
        return replay_id

    def _answer_lost(self, again: list[bytes], lost: list[Pending]) -> str:
        """Answer the lost requests with the error; the note (on stderr) of a resumed
        session, returned."""
        for pending in lost:
            self._write_out(self._error(pending))
        note = (
            f"codeask: the daemon went away; session resumed ({len(again)} unanswered "
            f"requests sent again, {len(lost)} answered '{RESTARTED}')"
        )
        sys.stderr.write(note + "\n")
        sys.stderr.flush()
        return note

    def _pending_table(self) -> dict[str, Pending]:
        """The client's requests not answered yet, by key."""
        raise NotImplementedError

    def _error(self, request: Pending) -> bytes:
        """The error answer (RESTARTED) to `request`, framed for the client."""
        raise NotImplementedError

    def _give_up(self, why: str) -> None:
        with self._state:
            table = self._pending_table()
            pending = list(table.values())
            table.clear()
        for request in pending:
            self._write_out(self._error(request))
        sys.stderr.write(f"codeask: {self.SESSION} cannot continue ({why}); exiting\n")
        sys.stderr.flush()
        os._exit(1)  # the main thread sits in a read of stdin: end the process itself
