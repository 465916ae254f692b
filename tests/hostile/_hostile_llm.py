"""A hostile LLM endpoint on loopback: real HTTP over real sockets, every byte chosen here.

One server (a thread running its own asyncio loop) serves every mode. The mode is the first
path segment of the base URL: with `llm.base_url = http://127.0.0.1:PORT/<mode>` the client asks
`/<mode>/v1/chat/completions` (openai, SSE) or `/<mode>/api/chat` (ollama, NDJSON), and the
valid events a mode sends are in that provider's format. Every request is recorded, so a test
can tell that a redirect was not followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

#: What every partial answer starts with (the text of the first, valid event).
PARTIAL = "Partial answer. "
#: A body length no client should believe.
HUGE_LENGTH = 5_000_000_000
#: One SSE comment line of 64 KiB (valid SSE, meaningless to a chat parser).
COMMENT_LINE = b": " + b"k" * (65536 - 3) + b"\n"


@dataclass
class Seen:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]


@dataclass
class Conn:
    """One connection: the writer, the request and the server's address."""

    writer: asyncio.StreamWriter
    request: Seen
    port: int

    @property
    def provider(self) -> str:
        return "ollama" if "/api/" in self.request.path else "openai"

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def head(self, status: int = 200, **headers: str | int) -> None:
        """Status line and headers; without a length or chunking the body ends at close."""
        kind = "application/x-ndjson" if self.provider == "ollama" else "text/event-stream"
        kind = str(headers.pop("content_type", kind))
        lines = [f"HTTP/1.1 {status} X", f"Content-Type: {kind}", "Connection: close"]
        lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
        await self.send(("\r\n".join(lines) + "\r\n\r\n").encode())

    def event(self, text: str) -> bytes:
        """One valid chat delta in the provider's format."""
        if self.provider == "ollama":
            msg = {"message": {"role": "assistant", "content": text}, "done": False}
            return json.dumps(msg).encode() + b"\n"
        delta = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
        return b"data: " + json.dumps(delta).encode() + b"\n\n"

    def end(self) -> bytes:
        """The provider's end-of-answer marker."""
        if self.provider == "ollama":
            return json.dumps({"message": {"content": ""}, "done": True}).encode() + b"\n"
        return b"data: [DONE]\n\n"


def chunk(data: bytes) -> bytes:
    """One HTTP/1.1 chunk."""
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


# ---------------------------------------------------------------- modes


async def ok(conn: Conn) -> None:
    """An honest, short answer."""
    await conn.head()
    await conn.send(conn.event("Hello from the fake.") + conn.end())


async def flood(conn: Conn) -> None:
    """One delta, then bytes without a newline as fast as the socket takes them."""
    await conn.head()
    await conn.send(conn.event(PARTIAL))
    junk = b"x" * 65536
    while True:
        await conn.send(junk)


async def drip(conn: Conn) -> None:
    """One delta, then one byte every 0.5 s forever: no read ever times out."""
    await conn.head()
    await conn.send(conn.event(PARTIAL))
    while True:
        await conn.send(b"x")
        await asyncio.sleep(0.5)


async def endless(conn: Conn) -> None:
    """Valid deltas forever, never an end marker."""
    await conn.head()
    batch = conn.event(PARTIAL) + conn.event("word ") * 256
    while True:
        await conn.send(batch)


async def cut(conn: Conn) -> None:
    """One delta, then half an event, then the socket closes (the body ends at close)."""
    await conn.head()
    half = conn.event("never finished")[:25]
    await conn.send(conn.event(PARTIAL) + half)


async def cut_chunked(conn: Conn) -> None:
    """Chunked: one delta, then a chunk that promises 100 bytes and brings 10, then close."""
    await conn.head(transfer_encoding="chunked")
    await conn.send(chunk(conn.event(PARTIAL)) + b"64\r\n" + conn.event("x")[:10])


async def huge_length(conn: Conn) -> None:
    """Content-Length of 5 GB, one delta, then close."""
    await conn.head(content_length=HUGE_LENGTH)
    await conn.send(conn.event(PARTIAL))


async def chunked_endless(conn: Conn) -> None:
    """Chunked: one delta, then 64 KiB comment lines in chunks forever, never the last chunk."""
    await conn.head(transfer_encoding="chunked")
    await conn.send(chunk(conn.event(PARTIAL)))
    piece = chunk(COMMENT_LINE)
    while True:
        await conn.send(piece)


def gzip_bomb_parts(first: bytes) -> tuple[bytes, bytes]:
    """(gzip header + `first`, a block that inflates to 16 MiB of comment lines).

    After a full flush the compressor keeps no history, so the same block can be sent again
    and again: each ~16 KiB on the wire is 16 MiB decoded, without end.
    """
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    head = packer.compress(first) + packer.flush(zlib.Z_FULL_FLUSH)
    block = packer.compress(COMMENT_LINE * 256) + packer.flush(zlib.Z_FULL_FLUSH)
    return head, block


async def gzip_bomb(conn: Conn) -> None:
    """Content-Encoding: gzip; one delta, then gigabytes once inflated."""
    await conn.head(content_encoding="gzip")
    head, block = gzip_bomb_parts(conn.event(PARTIAL))
    await conn.send(head)
    while True:
        await conn.send(block)


async def error500(conn: Conn) -> None:
    """HTTP 500 whose body claims 5 GB and keeps coming."""
    await conn.head(500, content_length=HUGE_LENGTH)
    await conn.send(b'{"error": {"message": "boom ')
    junk = b"x" * 65536
    while True:
        await conn.send(junk)


async def redirect(conn: Conn) -> None:
    """307 to another host name (`localhost`, not `127.0.0.1`), same path under /steal."""
    rest = conn.request.path.split("/", 2)[2]
    location = f"http://localhost:{conn.port}/steal/{rest}"
    await conn.send(
        f"HTTP/1.1 307 X\r\nLocation: {location}\r\nContent-Length: 0\r\n"
        "Connection: close\r\n\r\n".encode()
    )


async def steal(conn: Conn) -> None:
    """Where the redirect points: recording the request is the point (see `seen`)."""
    await ok(conn)


async def malformed(conn: Conn) -> None:
    """One delta, then malformed JSON events (1 KiB each) forever."""
    await conn.head()
    if conn.provider == "ollama":
        bad = b'{"message": {"content": ' + b"x" * 1000 + b"\n"
    else:
        bad = b'data: {"choices": [' + b"x" * 1000 + b"\n\n"
    await conn.send(conn.event(PARTIAL))
    batch = bad * 64
    while True:
        await conn.send(batch)


async def endless_json(conn: Conn) -> None:
    """A model list that never ends: `{"data": [{"id": "m"}, ...` forever."""
    await conn.head(content_type="application/json")
    await conn.send(b'{"models": [' if conn.provider == "ollama" else b'{"data": [')
    item = (b'{"name": "m"},' if conn.provider == "ollama" else b'{"id": "m"},') * 4096
    while True:
        await conn.send(item)


Mode = Callable[[Conn], Awaitable[None]]
MODES: dict[str, Mode] = {
    m.__name__: m
    for m in (
        ok,
        flood,
        drip,
        endless,
        cut,
        cut_chunked,
        huge_length,
        chunked_endless,
        gzip_bomb,
        error500,
        redirect,
        steal,
        malformed,
        endless_json,
    )
}


# ---------------------------------------------------------------- the server


@dataclass
class HostileLLM:
    """The server in a background thread; `url(mode)` is a base URL for `llm.base_url`."""

    port: int = 0
    requests: list[Seen] = field(default_factory=list)
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _stop: asyncio.Event | None = None

    def url(self, mode: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/{mode}"

    def seen(self, mode: str) -> list[Seen]:
        return [r for r in list(self.requests) if r.path.startswith(f"/{mode}/")]

    def start(self) -> HostileLLM:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the hostile LLM server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    def _run(self, ready: threading.Event) -> None:
        asyncio.run(self._serve(ready))

    async def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await _read_request(reader)
            self.requests.append(request)
            mode = MODES.get(request.path.split("/")[1], ok)
            await mode(Conn(writer, request, self.port))
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client hung up: what a bounded client does
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def _read_request(reader: asyncio.StreamReader) -> Seen:
    """Request line, headers and (ignored) body."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    line, *rest = head.strip().split("\r\n")
    method, path, _ = line.split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in rest)}
    await reader.readexactly(int(headers.get("content-length", "0")))
    return Seen(method, path, headers)
