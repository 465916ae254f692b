"""What one user's clients may hold of the daemon at once: connections and request bytes.

Only the user's own processes reach the daemon, but those can misbehave: a plugin that leaks
connections, a script that opens hundreds, a client that sends a huge frame. Each connection
costs a descriptor and a thread; each request frame its bytes and what JSON makes of them.

- Connections: at most `connection_limit()` open at once (half the descriptor limit, at most
  MAX_CONNECTIONS). At the cap, the oldest connection that has not sent its request yet (a
  client that connected and said nothing) is told why and closed to make room; when every
  open connection is a request being answered or a session, the new one is refused with a
  reply that says so, and the client answers in-process.
- Request bytes: a request frame is at most REQUEST_LIMIT (its length is checked before its
  body is read); the requests being read, decoded and answered at once share REQUEST_BUDGET.
"""

from __future__ import annotations

import contextlib
import queue
import resource
import socket
import threading
import time
from collections.abc import Callable

#: Connections open at once, whatever the descriptor limit (each is also a thread).
MAX_CONNECTIONS = 256
#: A request is a command's arguments, a cwd and some environment: a few KB.
REQUEST_LIMIT = 1 << 20
#: Request bytes read, decoded and answered at once, over all connections.
REQUEST_BUDGET = 8 << 20
#: Seconds a refused connection is given to send its request (so it reads the reply), and
#: refused connections queued for that at most (past it they are closed at once).
REFUSE_SECONDS = 1.0
REFUSALS = 32


def connection_limit(descriptors: int | None = None) -> int:
    """Connections the daemon holds open at once: half its descriptor limit (the rest is for
    indexes, models, logs and worker pipes), at most MAX_CONNECTIONS, at least 8."""
    if descriptors is None:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        descriptors = MAX_CONNECTIONS * 4 if soft == resource.RLIM_INFINITY else soft
    return max(8, min(MAX_CONNECTIONS, descriptors // 2))


#: How the daemon tells a connection why it is closed (a refused reply, never blocking).
Tell = Callable[[socket.socket, str], None]


class Admission:
    """The open connections, and which of them have not sent their request yet (those are
    the ones shed to make room)."""

    def __init__(self, limit: int, tell: Tell) -> None:
        self.limit = limit
        self._tell = tell
        self._lock = threading.Lock()
        self._open = 0
        self._waiting: dict[socket.socket, float] = {}
        """Connections without a request yet, oldest first, with when they were accepted."""

    def admit(self, conn: socket.socket) -> bool:
        """Count `conn` in, shedding the oldest waiting connection when at the cap; False
        when every open connection is busy (the caller refuses this one)."""
        with self._lock:
            if self._open >= self.limit:
                if not self._waiting:
                    return False
                self._shed(next(iter(self._waiting)))
            self._open += 1
            self._waiting[conn] = time.monotonic()
            return True

    def shed_oldest(self) -> bool:
        """Close the oldest waiting connection (out of descriptors); False when none waits."""
        with self._lock:
            if not self._waiting:
                return False
            self._shed(next(iter(self._waiting)))
            return True

    def _shed(self, conn: socket.socket) -> None:
        """Tell `conn` why and hang up on it; its thread sees the end and closes it."""
        idle = time.monotonic() - self._waiting.pop(conn)
        self._tell(
            conn,
            f"closed after {idle:.0f} s without a request: the daemon was at its limit of "
            f"{self.limit} connections",
        )
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)

    def started(self, conn: socket.socket) -> bool:
        """`conn`'s request is read: it is never shed now (False: it was shed already)."""
        with self._lock:
            return self._waiting.pop(conn, None) is not None

    def closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._waiting.pop(conn, None)
            self._open -= 1

    def count(self) -> int:
        with self._lock:
            return self._open


class Budget:
    """Bytes shared by the requests in flight: a request waits for its share (at most its
    deadline) before its body is read, and gives it back once answered."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._free = total
        self._changed = threading.Condition()

    def take(self, size: int, timeout: float) -> Share | None:
        """`size` bytes of it (None when they did not free up within `timeout` seconds)."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._free >= size, timeout):
                return None
            self._free -= size
        return Share(self, size)

    def _give(self, size: int) -> None:
        with self._changed:
            self._free += size
            self._changed.notify_all()


class Share:
    """Bytes taken from a `Budget`, given back once (`give` again does nothing)."""

    def __init__(self, budget: Budget, size: int) -> None:
        self._budget = budget
        self._size = size

    def give(self) -> None:
        size, self._size = self._size, 0
        if size:
            self._budget._give(size)


class Overflow:
    """The connections past the cap, each answered why by one thread of their own once its
    request is in (a reply written before it would be lost to the client's failed write)."""

    def __init__(self, limit: int, tell: Callable[[socket.socket, str], None]) -> None:
        self._limit = limit
        self._tell = tell
        self._queue: queue.Queue[socket.socket] = queue.Queue(REFUSALS)

    def refuse(self, conn: socket.socket) -> None:
        """Queue `conn` to be told why; closed at once when REFUSALS already wait."""
        try:
            self._queue.put_nowait(conn)
        except queue.Full:
            conn.close()

    def run(self) -> None:
        """Tell each queued connection why, for the daemon's life (a daemon thread)."""
        while True:
            conn = self._queue.get()
            with conn:
                self._tell(conn, f"the daemon has {self._limit} connections open, its limit")
                conn.settimeout(REFUSE_SECONDS)
                with contextlib.suppress(OSError):
                    conn.recv(1 << 16)
