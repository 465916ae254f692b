"""An OpenAI-compatible POST /v1/embeddings on loopback whose answer the test chooses.

Real HTTP over real sockets (a standard-library server in a thread). `mode` says what the next
request gets: `vectors` (well-formed, `dim` wide), `drip` (a byte every 0.2 s of a long body),
`endless` (a body of blanks that never ends), `oversized` (a declared 80 MiB body), `bomb`
(`body` sent with the `encoding` header, e.g. stacked gzip). `start` may come later than the
port is chosen: the endpoint is down first, then comes up at the same address.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import socket
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: Blanks written per send in the endless and oversized modes.
BLOCK = b" " * (1 << 20)


def free_port() -> int:
    """A loopback port nothing listens on (now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def gzip_of(chunks: int, block: bytes = BLOCK) -> bytes:
    """gzip of `chunks` x `block`, compressed piece by piece (never held inflated)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [z.compress(block) for _ in range(chunks)]
    return b"".join(out) + z.flush()


def vector(text: str, dim: int) -> list[float]:
    """A deterministic, text-dependent vector of `dim` floats."""
    seed = hashlib.sha256(text.encode()).digest()
    return [seed[i % 32] / 255.0 - 0.5 + (i % 7) / 100.0 for i in range(dim)]


class Endpoint:
    """The loopback endpoint; `requests` counts the embedding requests it got."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.mode = "vectors"
        self.dim = 8
        self.encoding = ""
        self.body = b""
        self.requests = 0
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> Endpoint:
        """Listen at `url` (again) and serve until `close`."""
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        """Stop listening."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def reply(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        """Answer one request as `mode` says (a client hanging up just ends it)."""
        self.requests += 1
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            getattr(self, f"_{self.mode}")(handler, body)

    def _vectors(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        rows = [
            {"index": i, "embedding": vector(text, self.dim)}
            for i, text in enumerate(body.get("input") or [])
        ]
        payload = json.dumps({"data": rows}).encode()
        _head(handler, length=len(payload))
        handler.wfile.write(payload)

    def _drip(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        _head(handler, length=100_000)
        for _ in range(600):  # two minutes at most; the client hangs up long before
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.2)

    def _endless(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        _head(handler)  # no length: the body ends when the connection does
        for _ in range(4096):  # 4 GiB at most; the client hangs up long before
            handler.wfile.write(BLOCK)

    def _oversized(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        _head(handler, length=80 * len(BLOCK))
        for _ in range(80):
            handler.wfile.write(BLOCK)

    def _bomb(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        _head(handler, length=len(self.body), encoding=self.encoding)
        handler.wfile.write(self.body)


def _head(handler: BaseHTTPRequestHandler, length: int = -1, encoding: str = "") -> None:
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    if length >= 0:  # without a length the body ends when the connection does
        handler.send_header("content-length", str(length))
    handler.send_header("connection", "close")  # one request per connection, said so
    if encoding:
        handler.send_header("content-encoding", encoding)
    handler.end_headers()


def _handler(endpoint: Endpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
            endpoint.reply(self, body)
            self.close_connection = True

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def stacked_gzip(gib: int = 1) -> bytes:
    """`Content-Encoding: gzip, gzip` of `gib` GiB of blanks: ~1.8 KB on the wire per GiB."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return z.compress(gzip_of(1024 * gib)) + z.flush()
