"""Reading a response body with bounded memory and time, whatever the provider or client.

A hostile or broken endpoint must not grow memory or hang us. Every body is read through
`decoded_pieces` (our own bounded gzip/deflate decoding: httpx would inflate a whole read at
once, so a gzip bomb's 64 KiB read would become 64 MiB, and a stacked `gzip, gzip` 1.8 KB would
become 1 GiB) and, for streams, `bounded_lines` (a line longer than `llm.max_line_bytes` is an
error, never buffered). Each read runs under a `Deadline`. The embedding client is synchronous:
`read_body_sync` is the same decoding and cap (`_CappedBody`) over httpx's blocking reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from codeask.core.llm.errors import (
    BadResponse,
    DeadlineExceeded,
    ResponseTooLarge,
    StreamTruncated,
    reason,
)

if TYPE_CHECKING:
    import httpx

#: Largest piece the bounded decoder inflates at once.
DECODE_PIECE = 64 * 1024


def size(n: int) -> str:
    """`1 MiB`, `64 KiB` or `1000 bytes`: a cap as people set it."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True)
class Deadline:
    """A point in event-loop time after which a call stops with one clear message."""

    at: float
    message: str

    @classmethod
    def after(cls, seconds: float, message: str) -> Deadline:
        """The deadline `seconds` from now (needs a running event loop)."""
        return cls(asyncio.get_running_loop().time() + seconds, message)

    @contextlib.asynccontextmanager
    async def guard(self) -> AsyncIterator[None]:
        """Run the block under the deadline: DeadlineExceeded when it passes.

        Wrap single awaits only, never a `yield` of an outer generator: the timeout cancels the
        task running the block, which is only right while the block is running.
        """
        try:
            async with asyncio.timeout_at(self.at):
                yield
        except TimeoutError:
            raise DeadlineExceeded(self.message) from None


class _Inflater:
    """Content-Encoding decoding whose output comes in pieces of at most DECODE_PIECE bytes.

    httpx's own decoder inflates each network read whole (a gzip bomb's 64 KiB read becomes
    64 MiB at once), so bodies are read raw and inflated here with `max_length`.
    """

    def __init__(self, encoding: str, url: str) -> None:
        name = encoding.strip().lower()
        self.url = url
        self.raw_fallback = name == "deflate"  # servers send raw deflate as often as zlib
        self.wbits = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS}.get(
            name, zlib.MAX_WBITS
        )
        if name not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise BadResponse(f"{url} sent Content-Encoding '{name[:40]}', which is not decoded")
        self.z = zlib.decompressobj(self.wbits) if name not in ("", "identity") else None

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of one raw read."""
        if self.z is None:
            if data:
                yield data
            return
        try:
            yield from self._inflate(self.z, data)
        except zlib.error as exc:
            raise BadResponse(f"{self.url} sent a body that does not decode ({exc})") from None

    def _inflate(self, z: Any, pending: bytes) -> Iterator[bytes]:
        """Inflate `pending` DECODE_PIECE bytes at a time (output may be pending without input)."""
        while True:
            before = pending
            try:
                out = z.decompress(pending, DECODE_PIECE)
            except zlib.error:
                if not self.raw_fallback:
                    raise
                self.raw_fallback = False
                self.wbits = -zlib.MAX_WBITS
                z = self.z = zlib.decompressobj(self.wbits)
                continue
            self.raw_fallback = False
            pending = z.unconsumed_tail
            if z.eof and z.unused_data:  # a next gzip member follows
                pending = z.unused_data
                z = self.z = zlib.decompressobj(self.wbits)
            if out:
                yield out
            if len(out) < DECODE_PIECE and (not pending or pending == before):
                return


async def _read(raw: AsyncIterator[bytes], deadline: Deadline, url: str) -> bytes | None:
    """The next raw piece (None at the end) under the deadline; a broken body is StreamTruncated."""
    import httpx  # loaded already: a response is being read

    try:
        async with deadline.guard():
            return await anext(raw, None)
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise StreamTruncated(f"{url} closed the connection mid-body ({reason(exc)})") from None


class _CappedBody:
    """One body's decoded pieces, counted against its cap: the part both clients share."""

    def __init__(self, response: httpx.Response, max_total_bytes: int, setting: str) -> None:
        self.url = str(response.url)
        self.inflater = _Inflater(response.headers.get("content-encoding", ""), self.url)
        self.max_total_bytes = max_total_bytes
        self.setting = setting
        self.total = 0

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of one raw read; ResponseTooLarge past the cap."""
        for piece in self.inflater.feed(data):
            self.total += len(piece)
            if self.total > self.max_total_bytes:
                named = f" ({self.setting})" if self.setting else ""
                raise ResponseTooLarge(
                    f"{self.url} sent more than {size(self.max_total_bytes)}{named}; stopped"
                )
            yield piece


async def decoded_pieces(
    response: httpx.Response, deadline: Deadline, max_total_bytes: int, setting: str = ""
) -> AsyncGenerator[bytes, None]:
    """The body, decoded, in pieces of at most 64 KiB, each read under `deadline`.

    ResponseTooLarge past `max_total_bytes` decoded bytes (`setting` names the cap to raise).
    """
    body = _CappedBody(response, max_total_bytes, setting)
    raw = cast(AsyncGenerator[bytes, None], response.aiter_raw())
    async with contextlib.aclosing(raw):
        while (data := await _read(raw, deadline, body.url)) is not None:
            for piece in body.feed(data):
                yield piece


def read_body_sync(
    response: httpx.Response, deadline: float, max_total_bytes: int, setting: str = ""
) -> bytes:
    """The whole decoded body of a blocking response, under the same decoding and cap as
    `decoded_pieces`; `deadline` is a `time.monotonic()` instant checked at every read (each
    read is bounded by the client's read timeout), so a trickle is stopped too.

    ResponseTooLarge past the cap, DeadlineExceeded past the deadline, StreamTruncated when the
    connection breaks mid-body, BadResponse for an encoding that is not decoded."""
    import httpx  # loaded already: a response is being read

    capped = _CappedBody(response, max_total_bytes, setting)
    pieces: list[bytes] = []
    try:
        for data in response.iter_raw():
            if time.monotonic() > deadline:
                raise DeadlineExceeded(f"{capped.url} was still sending its answer at the limit")
            pieces.extend(capped.feed(data))
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise StreamTruncated(
            f"{capped.url} closed the connection mid-body ({reason(exc)})"
        ) from None
    return b"".join(pieces)


async def read_body(response: httpx.Response, deadline: Deadline, max_total_bytes: int) -> bytes:
    """The whole decoded body (a model list, say), under the same caps as a stream."""
    body = bytearray()
    pieces = decoded_pieces(response, deadline, max_total_bytes)
    async with contextlib.aclosing(pieces):
        async for piece in pieces:
            body += piece
    return bytes(body)


async def bounded_lines(
    response: httpx.Response, max_line_bytes: int, max_total_bytes: int, deadline: Deadline
) -> AsyncGenerator[str, None]:
    """The body's non-blank lines, for NDJSON and SSE alike, memory bounded.

    A line longer than `max_line_bytes` raises ResponseTooLarge before it is buffered whole;
    the body as a whole is capped at `max_total_bytes` decoded bytes; every read is under
    `deadline`. Blank lines are dropped (neither parser gives them meaning; a flood of them
    costs one C-level split per piece). A last line without a newline is still yielded.
    """
    url = str(response.url)
    line = bytearray()
    pieces = decoded_pieces(response, deadline, max_total_bytes, "llm.max_response_bytes")
    async with contextlib.aclosing(pieces):
        async for piece in pieces:
            first, *middle_and_last = piece.split(b"\n")
            _extend(line, first, max_line_bytes, url)
            if not middle_and_last:
                continue
            whole = [bytes(line), *middle_and_last[:-1]]
            line.clear()
            for text in whole:
                if len(text) > max_line_bytes:
                    _extend(bytearray(), text, max_line_bytes, url)  # raises
                if text.strip():
                    yield text.decode("utf-8", errors="replace")
            _extend(line, middle_and_last[-1], max_line_bytes, url)
    if line.strip():
        yield line.decode("utf-8", errors="replace")


def _extend(line: bytearray, more: bytes, max_line_bytes: int, url: str) -> None:
    """Add to the line being read, or ResponseTooLarge when it would pass the cap."""
    if len(line) + len(more) > max_line_bytes:
        raise ResponseTooLarge(
            f"the endpoint {url} sent a line longer than {size(max_line_bytes)}; "
            "stopped (llm.max_line_bytes)"
        )
    line += more
