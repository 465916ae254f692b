"""`codeask mcp` sessions inside the per-user daemon (docs/daemon.md): one MCP server session
per forwarder connection, over the connection's bytes, with the same tools and wire layer as
the stdio server (server.py, wire.py).

Each session has its own tools over its own folders (its own roots, its own refusals, its own
path checks): one agent's workspace never widens another's. What sessions share is the folder
driver of a root and settings (core/driver/shared.py `SharedDrivers`, the daemon's one
registry): one index, one loop, one embedding backlog per folder for every agent and every
editor session on it whose settings for the folder come out the same.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path

from codeask.core.driver import SharedDrivers
from codeask.mcp.folders import FolderDriver
from codeask.mcp.server import build_server, serve_wire

log = logging.getLogger("codeask.mcp")
#: How long a driver no session uses may take to stop. In-process, `codeask mcp` exits after
#: 10 s whatever its threads do (the kernel frees the writer lock); the daemon lives on, so it
#: waits for the pass in progress to stop and then releases the index (and its writer lock).
STOP_SECONDS = 300.0


def acquire(drivers: SharedDrivers, checked: list[tuple[Path, str]]) -> list[FolderDriver]:
    """A session's folders, each (root, why refused) subscribed to the daemon's one driver of
    it (started when new); a refused root is the session's own and runs nothing."""
    held = [FolderDriver(root, refused, drivers=drivers) for root, refused in checked]
    for driver in held:
        driver.start()
        driver.serving()
    return held


def release(held: list[FolderDriver]) -> None:
    """A session left: the drivers no other session uses stop, save and release the index."""
    for driver in held:
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
