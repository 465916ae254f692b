"""A real loopback OpenAI-compatible endpoint that records every request body it gets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.loopback import serving


class Recorder:
    """What the endpoint saw: raw request bodies, in order."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.port = 0

    def text(self) -> str:
        """Every body, decoded (JSON escapes undone), as one string to search."""
        return "\n".join(json.dumps(json.loads(b), ensure_ascii=False) for b in self.bodies)


def _handler(recorder: Recorder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            recorder.bodies.append(body)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            chunk = {"choices": [{"delta": {"content": "An answer."}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())

        def log_message(self, *args: Any) -> None:
            return

    return Handler


@contextmanager
def fake_llm() -> Iterator[Recorder]:
    """Serve until the block ends."""
    recorder = Recorder()
    with serving(_handler(recorder)) as recorder.port:
        yield recorder
