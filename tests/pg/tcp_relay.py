"""A TCP relay in front of the test PostgreSQL: a database that is down, comes up, and drops
its connections, on one address (the server itself keeps running for the other tests)."""

from __future__ import annotations

import contextlib
import socket
import threading


class Relay:
    """Listens on 127.0.0.1:`port` while `up()`, forwarding every connection to `target`;
    `down()` stops listening and cuts every open connection (a database gone mid-query)."""

    def __init__(self, port: int, target: tuple[str, int]) -> None:
        self.port = port
        self.target = target
        self._listener: socket.socket | None = None
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()

    def up(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            sockets, self._open = self._open, []
            listener, self._listener = self._listener, None
        for sock in [*sockets, *([listener] if listener else [])]:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed by down()
                return
            server = socket.create_connection(self.target)
            with self._lock:
                self._open += [client, server]
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
