"""Real loopback endpoints for health checks: a model list served over HTTP, a port that
accepts connections and never answers, and a port nothing listens on."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from .loopback import send_json, serving


class Seen:
    """What the endpoint saw: the port it listens on and the request paths, in order."""

    def __init__(self) -> None:
        self.port = 0
        self.paths: list[str] = []
        self.auth: list[str] = []


def _handler(models: list[str], seen: Seen) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.paths.append(self.path)
            seen.auth.append(self.headers.get("authorization", ""))
            if self.path == "/v1/models":
                body: Any = {"object": "list", "data": [{"id": m} for m in models]}
            elif self.path == "/api/tags":
                body = {"models": [{"name": m} for m in models]}
            else:
                self.send_error(404)
                return
            send_json(self, body)

        def log_message(self, *args: Any) -> None:
            return

    return Handler


@contextmanager
def models_endpoint(models: list[str]) -> Iterator[Seen]:
    """An OpenAI-compatible (`/v1/models`) and Ollama (`/api/tags`) model list until the block
    ends."""
    seen = Seen()
    with serving(_handler(models, seen)) as seen.port:
        yield seen


@contextmanager
def silent_endpoint() -> Iterator[int]:
    """A port whose connections are accepted (by the kernel's backlog) and never answered."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
