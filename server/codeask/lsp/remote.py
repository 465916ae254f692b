"""`codeask serve` sessions inside the per-user daemon (docs/daemon.md): one language server
per forwarder connection, run by the very code `codeask serve` runs in-process (server.py's
features behind the same framing reader and gate), in the connection's own thread and event
loop (pygls' `start_io` runs `asyncio.run` in the calling thread; each server has its own
protocol, workspace and thread pools; its folders' workers are the daemon's, one per folder
and settings for every session: core/driver/shared.py).

Per client: its open documents, settings, workspace folders and trust live in its own
`CodeaskServer`, exactly as in a process of its own: one editor's trusted workspace never
widens another's. Shared: the process (Python, the imported engine, the loaded models) and
the open indexes (core/indexer/shared.py): sessions whose settings for a folder come out the
same (trust included) hold one `FolderIndex` of it and subscribe to one driver of it, the
agents too; the last to leave stops the driver and saves and closes the index. Sessions whose
settings differ keep the writer-lock rule of two servers (the first writes, the other follows
its snapshots read-only and takes over when it leaves).

The `codeask` logger is the process's: each session's window/logMessage handler passes only
the records of its own threads (its event loop, its request pool, its folders' index and
embedding threads: a shared folder's go to every session on it), so no editor reads another's
logs.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO, cast

from codeask.core.driver import SharedDrivers
from codeask.lsp.base import CodeaskServer
from codeask.lsp.logs import setup_logging
from codeask.lsp.server import build_server, finish, serve_streams

log = logging.getLogger("codeask.lsp")
#: How long a leaving session's folder workers may take to stop. In-process, `codeask serve`
#: exits after 10 s whatever its threads do (the kernel frees the writer lock); the daemon
#: lives on, so it waits for the step in progress to end and then saves and releases the index.
STOP_SECONDS = 300.0


class SessionThreads:
    """The threads whose log records belong to one session."""

    def __init__(self, ls: CodeaskServer) -> None:
        self._ls = ls
        self._own: set[int] = set()
        self._lock = threading.Lock()

    def add_current(self) -> None:
        with self._lock:
            self._own.add(threading.get_ident())

    def owns(self, record: logging.LogRecord) -> bool:
        with self._lock:
            if record.thread in self._own:
                return True
        for worker in list(self._ls.folders.workers.values()):
            if any(thread.ident == record.thread for thread in worker.threads()):
                return True
        return False


def hosted_server(
    drivers: SharedDrivers | None = None,
) -> tuple[CodeaskServer, SessionThreads]:
    """A server as `codeask serve` builds it, its log handler passing its own records only."""
    ls = build_server(drivers)
    threads = SessionThreads(ls)
    ls.requests.shutdown(wait=False)  # no thread started yet: replaced by one that registers
    ls.requests = ThreadPoolExecutor(
        4, thread_name_prefix="codeask-request", initializer=threads.add_current
    )
    ls.log_handler.addFilter(threads.owns)
    return ls, threads


def serve_connection(conn: socket.socket, drivers: SharedDrivers | None = None) -> int:
    """One language server over `conn` until the client leaves; its exit code as in-process
    (0 after `shutdown`, else 1). Its folders' drivers (and indexes) are shared with the
    daemon's other sessions that would open the same (`drivers`)."""
    ls, threads = hosted_server(drivers)
    threads.add_current()  # the event loop runs in this thread
    setup_logging(ls.log_handler)
    try:
        with conn.makefile("rb", buffering=0) as raw_in, conn.makefile("wb") as raw_out:
            serve_streams(ls, cast(BinaryIO, raw_in), cast(BinaryIO, raw_out))
    except Exception as exc:  # a forwarder gone mid-answer: its session only
        log.info("an editor session ended: %s: %s", type(exc).__name__, exc)
    finally:
        with contextlib.suppress(OSError):  # the forwarder exits now, not after the save
            conn.shutdown(socket.SHUT_RDWR)
        finish(ls, STOP_SECONDS)
    return 0 if ls.shutdown_requested else 1
