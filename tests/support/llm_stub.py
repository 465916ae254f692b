"""A stand-in OpenAI-compatible endpoint served by the test (shared by the askCode tests of
both backends).

It is a real HTTP server on a loopback port (raw asyncio streams, SSE), so the server's real LLM
client, streaming and cancellation are exercised without a model.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FakeLLM:
    """What the stand-in endpoint saw."""

    port: int = 0
    requests: list[dict[str, Any]] = field(default_factory=list)
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)


NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


@asynccontextmanager
async def fake_llm(pieces: list[str] | None, finish: str = "") -> AsyncIterator[FakeLLM]:
    """Streams `pieces` as SSE chat deltas, then `finish` as the last chunk's finish_reason
    (none by default: `[DONE]` alone ends the stream); with None, sends headers and then
    stalls. Anything but a chat request (llama.cpp's GET /props, say) is 404: the stand-in
    does not say its context size."""
    state = FakeLLM()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        match = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
        body = await reader.readexactly(int(match.group(1))) if match else b"{}"
        if not head.startswith(b"POST /v1/chat/completions "):
            writer.write(NOT_FOUND)
            await writer.drain()
            writer.close()
            return
        state.requests.append(json.loads(body))
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
        )
        await writer.drain()
        if pieces is None:
            await reader.read()  # until the client hangs up
            state.disconnected.set()
            writer.close()
            return
        for piece in pieces:
            chunk = {"choices": [{"delta": {"content": piece}}]}
            writer.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await writer.drain()
            await asyncio.sleep(0.01)
        if finish:
            last = {"choices": [{"delta": {}, "finish_reason": finish}]}
            writer.write(f"data: {json.dumps(last)}\n\n".encode())
        writer.write(b"data: [DONE]\n\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    async with server:
        yield state


def llm_options(port: int) -> dict[str, Any]:
    """initializationOptions pointing `llm` at the stand-in on `port`."""
    return {
        "llm": {
            "provider": "openai",
            "baseUrl": f"http://127.0.0.1:{port}",
            "model": "stand-in",
            "connectTimeout": 2,
            "readTimeout": 30,
        }
    }
