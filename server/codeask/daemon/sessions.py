"""The sessions a daemon keeps open (`codeask mcp`, `codeask serve` forwarded): each runs in
its connection's thread until the client leaves; when the daemon stops it hangs up on all of
them, and each forwarder reconnects to the next daemon."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable

log = logging.getLogger("codeask.daemon")


class LiveSessions:
    """The connections of running sessions (`stopped`: the daemon's stop flag)."""

    def __init__(self, stopped: threading.Event) -> None:
        self._stopped = stopped
        self._lock = threading.Lock()
        self._live: set[socket.socket] = set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._live)

    def serve(
        self, conn: socket.socket, command: str, serve: Callable[[socket.socket], None]
    ) -> None:
        """A session's own bytes, until the client leaves or the daemon stops."""
        with self._lock:
            self._live.add(conn)
        try:
            if not self._stopped.is_set():  # after the add: a stop now still hangs up on it
                serve(conn)
        except Exception:
            log.exception("a %s session ended in error", command)
        finally:
            with self._lock:
                self._live.discard(conn)

    def hang_up(self) -> None:
        """Hang up on every session: its forwarder reconnects to the next daemon."""
        with self._lock:
            live = list(self._live)
        for conn in live:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
