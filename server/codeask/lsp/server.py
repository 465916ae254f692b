"""The pygls 2 language server: every feature registered on a `CodeaskServer`, and `run()`.

Only public pygls API is used: the features register with `ls.feature` / `ls.command`
(features/); a `converter_factory` (base.py) keeps custom params as plain JSON for the
features to decode with msgspec (features/common.py); the lifecycle rules and InvalidParams
for malformed standard params are answered by the framing reader's gate (gate.py) before
pygls parses a message.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from typing import BinaryIO, cast

from codeask.core.driver import SharedDrivers
from codeask.lsp.base import CodeaskServer
from codeask.lsp.features import (
    ask,
    configuration,
    documents,
    health,
    hover,
    index,
    lens,
    lifecycle,
    related,
    search,
    symbols,
)
from codeask.lsp.framing import FramedStdin, Framer, LockedWriter
from codeask.lsp.gate import MessageGate
from codeask.lsp.logs import setup_logging

log = logging.getLogger("codeask.lsp")

#: Every feature module; each registers its own handlers.
FEATURES = (
    lifecycle,
    configuration,
    documents,
    hover,
    related,
    lens,
    symbols,
    search,
    index,
    ask,
    health,
)


def build_server(drivers: SharedDrivers | None = None) -> CodeaskServer:
    """A server with every feature registered (in the daemon: its folders' drivers, and so
    their indexes, shared with the other sessions that would open the same)."""
    ls = CodeaskServer(drivers)
    for feature in FEATURES:
        feature.register(ls)
    return ls


def serve_streams(ls: CodeaskServer, raw_in: BinaryIO, raw_out: BinaryIO) -> None:
    """pygls' public `start_io` behind our framing reader and its lifecycle/params gate."""
    out = LockedWriter(raw_out)
    stdin = FramedStdin(Framer(raw_in, out, MessageGate()))
    ls.start_io(cast(BinaryIO, stdin), cast(BinaryIO, out))


def _serve_tcp(ls: CodeaskServer, port: int) -> None:
    """One client on 127.0.0.1:`port` (debugging), through the same reader as stdio."""
    with socket.create_server(("127.0.0.1", port)) as listener:
        log.info("codeask: listening on 127.0.0.1:%d (one client)", port)
        conn, _ = listener.accept()
    with conn, conn.makefile("rb", buffering=0) as raw_in, conn.makefile("wb") as raw_out:
        serve_streams(ls, cast(BinaryIO, raw_in), cast(BinaryIO, raw_out))


def run(tcp_port: int | None = None) -> int:
    """`codeask serve`: stdio (stdout carries only LSP) or TCP; returns the exit code."""
    ls = build_server()
    setup_logging(ls.log_handler)
    try:
        if tcp_port:
            _serve_tcp(ls, tcp_port)
        else:
            stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
            os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints/C output → stderr
            sys.stdout = sys.stderr
            serve_streams(ls, sys.stdin.buffer, stdout)
    finally:
        finish(ls)
    return 0 if ls.shutdown_requested else 1


def finish(ls: CodeaskServer, stop_seconds: float = 10.0) -> None:
    """The client is gone: stop the workers (saving what stopped within `stop_seconds`), the
    pools, and the editor's log handler."""
    ls.folders.stop(stop_seconds)
    ls.requests.shutdown(wait=False, cancel_futures=True)
    ls.blame.shutdown()
    logging.getLogger("codeask").removeHandler(ls.log_handler)
