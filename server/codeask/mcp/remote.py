"""`codeask mcp` sessions inside the per-user daemon (docs/daemon.md): one MCP server session
per forwarder connection, over the connection's bytes, with the same tools and wire layer as
the stdio server (server.py, wire.py).

Each session has its own tools over its own folders (its own roots, its own refusals, its own
path checks): one agent's workspace never widens another's. What sessions share is the folder
driver of a root (`SharedFolders`): one index, one writer, one embedding backlog per folder
for every agent on it; that index is also the editor sessions' when their settings for the
folder come out the same (core/indexer/shared.py).
"""

from __future__ import annotations

import logging
import socket
import threading
from pathlib import Path

from codeask.core.indexer import SharedIndexes
from codeask.mcp.folders import FolderDriver
from codeask.mcp.server import build_server, serve_wire

log = logging.getLogger("codeask.mcp")
#: How long a driver no session uses may take to stop. In-process, `codeask mcp` exits after
#: 10 s whatever its threads do (the kernel frees the writer lock); the daemon lives on, so it
#: waits for the pass in progress to stop and then releases the index (and its writer lock).
STOP_SECONDS = 300.0


class SharedFolders:
    """Root → the one FolderDriver the daemon's sessions on that root share (refcounted: the
    last session to leave stops it, which saves and releases the index). A refused root is
    never shared: its refusal is the session's own (its own --allow-broad-root)."""

    def __init__(self, indexes: SharedIndexes | None = None) -> None:
        self._lock = threading.Lock()
        self._held: dict[Path, tuple[FolderDriver, int]] = {}
        self._indexes = indexes
        """The daemon's open indexes, shared with its editor sessions."""

    def acquire(self, checked: list[tuple[Path, str]]) -> list[FolderDriver]:
        """The drivers of these (root, why refused) pairs, started when new."""
        drivers = []
        with self._lock:
            for root, refused in checked:
                if refused:
                    drivers.append(FolderDriver(root, refused))
                    continue
                driver, users = self._held.get(root, (None, 0))
                if driver is None:
                    driver = FolderDriver(root, shared=self._indexes)
                    driver.start()
                    driver.serving()
                self._held[root] = (driver, users + 1)
                drivers.append(driver)
        return drivers

    def release(self, drivers: list[FolderDriver]) -> None:
        """A session left: stop the drivers no other session uses."""
        unused = []
        with self._lock:
            for driver in drivers:
                held, users = self._held.get(driver.root, (None, 0))
                if held is not driver:
                    continue  # a refused root's own driver: nothing runs
                if users > 1:
                    self._held[driver.root] = (driver, users - 1)
                else:
                    del self._held[driver.root]
                    unused.append(driver)
        for driver in unused:
            _stop(driver)

    def close(self) -> None:
        with self._lock:
            held = [driver for driver, _ in self._held.values()]
            self._held.clear()
        for driver in held:
            _stop(driver)

    def roots(self) -> list[str]:
        with self._lock:
            return [str(root) for root in self._held]


def _stop(driver: FolderDriver) -> None:
    driver.stop(timeout=STOP_SECONDS)
    if driver.running():
        log.warning("%s: its index thread did not stop; its index stays open", driver.root)


class SocketReader:
    """The connection's incoming bytes as wire.Input reads them (b"" at the end, or when the
    connection is reset: the session then ends as on a closed stdin)."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn

    def read(self, size: int) -> bytes:
        try:
            return self._conn.recv(size)
        except OSError:
            return b""


class SocketWriter:
    """The connection's outgoing bytes as wire.Output writes them (whole writes)."""

    def __init__(self, conn: socket.socket) -> None:
        self._conn = conn

    def write(self, data: bytes) -> int:
        self._conn.sendall(data)
        return len(data)


def serve_connection(drivers: list[FolderDriver], conn: socket.socket) -> None:
    """One MCP session over `conn`, with tools over `drivers` only, until the client leaves."""
    server = build_server(drivers)
    try:
        serve_wire(server, SocketReader(conn), SocketWriter(conn))
    except Exception as exc:  # a forwarder gone mid-answer: its session only
        log.info("an MCP session ended: %s: %s", type(exc).__name__, exc)
