"""A real HTTP server on 127.0.0.1 for the tests' stand-in endpoints (a model list, an LLM, an
embedding API, an attacker's endpoint): started in a thread on a free port, stopped when the
block ends, and the one way its handlers write a JSON answer."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """`handler` served on 127.0.0.1 until the block ends: the port it listens on."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def send_json(handler: BaseHTTPRequestHandler, payload: Any, status: int = 200) -> None:
    """`payload` as the JSON answer, with its length (the client reads exactly that)."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
