"""LLM clients against real loopback HTTP servers started by the tests.

`FakeServer` is a tiny HTTP/1.1 server on 127.0.0.1:0 (asyncio streams, chunked responses). On it
run an Ollama protocol fake (the documented /api/chat NDJSON stream and /api/tags) and an
OpenAI-compatible SSE server, plus misbehaving handlers: stalls, errors, garbage, early closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import logging
import socket
import ssl
import subprocess
import time
import traceback
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from codeask.config import LLMSettings
from codeask.core.llm import (
    DECODE_PIECE,
    AnswerCutShort,
    AnswerTooLong,
    AuthFailed,
    BadResponse,
    ChatUsage,
    ContextExceeded,
    DeadlineExceeded,
    EndpointTimeout,
    EndpointUnreachable,
    LLMError,
    ModelNotFound,
    ResponseTooLarge,
    StreamTruncated,
    _Inflater,
    chat_url,
    cut_short,
    fit_context,
    is_loopback,
    list_models,
    models_url,
    probe,
    server_context_tokens,
    stream_chat,
    transport,
    window,
)

MESSAGES = [{"role": "system", "content": "rules"}, {"role": "user", "content": "what is x?"}]
API_KEY = "sk-test-DO-NOT-LEAK-0123456789abcdef"


# ---------------------------------------------------------------- the loopback HTTP server


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Reply:
    """Writes one HTTP/1.1 response; streamed bodies use chunked encoding."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def start(self, status: int = 200, content_type: str = "application/json") -> None:
        head = (
            f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        self.writer.write(head.encode())
        await self.writer.drain()

    async def send(self, text: str) -> None:
        data = text.encode()
        self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await self.writer.drain()

    async def end(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()

    async def whole(self, status: int, body: str, content_type: str = "application/json") -> None:
        await self.start(status, content_type)
        if body:
            await self.send(body)
        await self.end()


Handler = Callable[[Request, Reply, asyncio.StreamReader], Awaitable[None]]


@dataclass
class FakeServer:
    """A loopback server recording requests and noticing when a client hangs up."""

    handler: Handler
    requests: list[Request] = field(default_factory=list)
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await read_request(reader)
            self.requests.append(request)
            await self.handler(request, Reply(writer), reader)
        except (ConnectionError, asyncio.IncompleteReadError):
            self.disconnected.set()
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> Request:
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    line, *header_lines = head.strip().split("\r\n")
    method, path, _ = line.split(" ")
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Request(method, path, headers, body)


async def wait_for_hangup(reader: asyncio.StreamReader, server: FakeServer) -> None:
    """Block until the client closes its side; record it."""
    with contextlib.suppress(ConnectionError):
        while await reader.read(1024):
            pass
    server.disconnected.set()


@contextlib.asynccontextmanager
async def running(handler: Handler) -> AsyncIterator[FakeServer]:
    fake = FakeServer(handler)
    server = await asyncio.start_server(fake.serve, "127.0.0.1", 0)
    fake.port = server.sockets[0].getsockname()[1]
    try:
        yield fake
    finally:
        server.close()
        # Python 3.12+ wait_closed waits for handlers; bound it so a stuck one cannot hang us.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server.wait_closed(), 2)


def settings(url: str, provider: str = "openai", **kw: Any) -> LLMSettings:
    base = {"model": "tiny", "connect_timeout": 2.0, "read_timeout": 5.0, "max_tokens": 24}
    return LLMSettings(provider=provider, base_url=url, **{**base, **kw})  # type: ignore[arg-type]


async def collect(s: LLMSettings, usage: ChatUsage | None = None) -> list[str]:
    return [d async for d in stream_chat(s, MESSAGES, usage=usage)]


# ---------------------------------------------------------------- Ollama protocol fake

OLLAMA_MODELS = ["tiny", "qwen2.5-coder:7b"]


def ollama_fake(words: list[str], *, garbage: bool = False) -> Handler:
    """The documented Ollama API: POST /api/chat streams NDJSON, GET /api/tags lists models."""

    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        if req.method == "GET" and req.path == "/api/tags":
            tags = {"models": [{"name": m, "model": m, "size": 1} for m in OLLAMA_MODELS]}
            await reply.whole(200, json.dumps(tags))
            return
        if req.path != "/api/chat":
            await reply.whole(404, "404 page not found", "text/plain")
            return
        body = req.json()
        if body["model"] not in OLLAMA_MODELS:
            err = {"error": f'model "{body["model"]}" not found, try pulling it first'}
            await reply.whole(404, json.dumps(err))
            return
        await reply.start(200, "application/x-ndjson")
        for word in words:
            msg = {"model": body["model"], "message": {"role": "assistant", "content": word}}
            await reply.send(json.dumps({**msg, "done": False}) + "\n")
            if garbage:
                await reply.send('this is not json\n{"half": \n')
        final = {
            "model": body["model"],
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 26,
            "eval_count": len(words),
        }
        await reply.send(json.dumps(final) + "\n")
        await reply.end()

    return handle


async def test_ollama_protocol_fake_streams_deltas_and_usage() -> None:
    async with running(ollama_fake(["The ", "answer ", "is ", "42."])) as srv:
        usage = ChatUsage()
        deltas = await collect(settings(srv.url, "ollama"), usage)
    assert deltas == ["The ", "answer ", "is ", "42."]
    assert (usage.prompt_tokens, usage.completion_tokens, usage.finish_reason) == (26, 4, "stop")


async def test_ollama_protocol_fake_request_body() -> None:
    async with running(ollama_fake(["ok"])) as srv:
        s = settings(srv.url, "ollama", temperature=0.3, max_tokens=77, context_tokens=4096)
        await collect(s)
    req = srv.requests[0]
    assert (req.method, req.path) == ("POST", "/api/chat")
    body = req.json()
    assert body["model"] == "tiny" and body["messages"] == MESSAGES and body["stream"] is True
    assert body["options"] == {"temperature": 0.3, "num_predict": 77, "num_ctx": 4096}
    assert "authorization" not in req.headers


async def test_ollama_protocol_fake_unknown_model() -> None:
    async with running(ollama_fake(["x"])) as srv:
        with pytest.raises(ModelNotFound) as err:
            await collect(settings(srv.url, "ollama", model="llama9:70b"))
    assert "'llama9:70b'" in err.value.message
    assert "ollama list" in err.value.message
    assert "\n" not in err.value.message


async def test_ollama_protocol_fake_list_models() -> None:
    async with running(ollama_fake([])) as srv:
        assert await list_models(settings(srv.url, "ollama")) == OLLAMA_MODELS
    assert srv.requests[0].path == "/api/tags"


async def test_ollama_protocol_fake_malformed_lines_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="codeask.core.llm")
    async with running(ollama_fake(["a", "b"], garbage=True)) as srv:
        assert await collect(settings(srv.url, "ollama")) == ["a", "b"]
    assert "malformed" in caplog.text


async def test_ollama_protocol_fake_base_url_with_v1_suffix_still_works() -> None:
    async with running(ollama_fake(["ok"])) as srv:
        assert await collect(settings(srv.url + "/v1/", "ollama")) == ["ok"]
    assert srv.requests[0].path == "/api/chat"


async def test_ollama_error_line_mid_stream_is_bad_response() -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.start(200, "application/x-ndjson")
        await reply.send(json.dumps({"message": {"content": "partial"}, "done": False}) + "\n")
        await reply.send(json.dumps({"error": "model runner has unexpectedly stopped"}) + "\n")
        await reply.end()

    async with running(handle) as srv:
        got: list[str] = []
        with pytest.raises(BadResponse) as err:
            async for d in stream_chat(settings(srv.url, "ollama"), MESSAGES):
                got.append(d)
    assert got == ["partial"]
    assert "unexpectedly stopped" in err.value.message


# ---------------------------------------------------------------- OpenAI-compatible SSE server


def sse(obj: dict[str, Any] | str) -> str:
    return f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n"


def chunk(content: str | None = None, finish: str | None = None, **delta: str) -> dict[str, Any]:
    d = dict(delta, **({"content": content} if content is not None else {}))
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": d, "finish_reason": finish}],
    }


def openai_server(words: list[str], *, key: str = "", usage: bool = True) -> Handler:
    """An OpenAI-compatible server: SSE chat stream, /v1/models, optional bearer auth."""

    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        if key and req.headers.get("authorization") != f"Bearer {key}":
            got = req.headers.get("authorization", "")
            msg = {"error": {"message": f"Incorrect API key provided: {got}", "code": 401}}
            await reply.whole(401, json.dumps(msg))
            return
        if req.path == "/v1/models":
            await reply.whole(200, json.dumps({"object": "list", "data": [{"id": "tiny"}]}))
            return
        if req.path != "/v1/chat/completions":
            await reply.whole(404, json.dumps({"detail": "Not Found"}))
            return
        if req.json()["model"] != "tiny":
            msg = {"error": {"message": "The model `gpt-9` does not exist", "code": 404}}
            await reply.whole(404, json.dumps(msg))
            return
        await reply.start(200, "text/event-stream")
        await reply.send(": keep-alive comment\n\n")
        await reply.send(sse(chunk(role="assistant")))
        for word in words:
            await reply.send(sse(chunk(word)))
        await reply.send(sse(chunk(finish="length")))
        if usage:
            u = {"prompt_tokens": 31, "completion_tokens": len(words), "total_tokens": 0}
            await reply.send(sse({"id": "c1", "choices": [], "usage": u}))
        await reply.send(sse("[DONE]"))
        await reply.end()

    return handle


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
async def test_openai_sse_stream(suffix: str) -> None:
    async with running(openai_server(["Hel", "lo", " world"])) as srv:
        usage = ChatUsage()
        deltas = await collect(settings(srv.url + suffix), usage)
    assert deltas == ["Hel", "lo", " world"]
    assert (usage.prompt_tokens, usage.completion_tokens, usage.finish_reason) == (31, 3, "length")
    assert srv.requests[0].path == "/v1/chat/completions"


async def test_openai_request_body_and_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_LLM_KEY", API_KEY)
    async with running(openai_server(["ok"], key=API_KEY)) as srv:
        s = settings(srv.url, temperature=0.0, max_tokens=12, api_key_env="MY_LLM_KEY")
        assert await collect(s) == ["ok"]
    req = srv.requests[0]
    assert req.headers["authorization"] == f"Bearer {API_KEY}"
    body = req.json()
    assert body["model"] == "tiny" and body["messages"] == MESSAGES and body["stream"] is True
    assert body["max_tokens"] == 12 and body["temperature"] == 0.0


async def test_openai_without_usage_leaves_counts_unknown() -> None:
    async with running(openai_server(["a"], usage=False)) as srv:
        usage = ChatUsage()
        assert await collect(settings(srv.url), usage) == ["a"]
    assert usage.prompt_tokens is None and usage.finish_reason == "length"


async def test_openai_list_models() -> None:
    async with running(openai_server([])) as srv:
        assert await list_models(settings(srv.url + "/v1")) == ["tiny"]
    assert srv.requests[0].path == "/v1/models"


async def test_openai_unknown_model_names_model_and_models_endpoint() -> None:
    async with running(openai_server(["x"])) as srv:
        with pytest.raises(ModelNotFound) as err:
            await collect(settings(srv.url, model="gpt-9"))
    msg = err.value.message
    assert "'gpt-9'" in msg and f"GET {srv.url}/v1/models" in msg and "\n" not in msg


async def test_openai_malformed_lines_skipped() -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.start(200, "text/event-stream")
        await reply.send("data: {not json}\n\n")
        await reply.send(sse(chunk("one")))
        await reply.send('data: {"no_choices": true}\n\n')
        await reply.send("event: ping\n\n")
        await reply.send(sse(chunk("two")))
        await reply.send(sse("[DONE]"))
        await reply.end()

    async with running(handle) as srv:
        assert await collect(settings(srv.url)) == ["one", "two"]


@pytest.mark.parametrize("provider", ["openai", "ollama"])
async def test_stream_without_any_valid_line_is_bad_response(provider: str) -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.whole(200, "<html><body>Welcome to nginx!</body></html>\n", "text/html")

    async with running(handle) as srv:
        with pytest.raises(BadResponse) as err:
            await collect(settings(srv.url, provider))
    assert srv.url in err.value.message and "no valid" in err.value.message


async def test_server_error_gives_status_and_short_excerpt() -> None:
    body = "CUDA out of memory while loading model " + "x" * 5000

    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.whole(503, json.dumps({"error": {"message": body}}))

    async with running(handle) as srv:
        with pytest.raises(BadResponse) as err:
            await collect(settings(srv.url))
    msg = err.value.message
    assert "HTTP 503" in msg and "CUDA out of memory" in msg
    assert len(msg) < 400 and "\n" not in msg


async def test_connection_closed_mid_answer_is_bad_response() -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.start(200, "text/event-stream")
        await reply.send(sse(chunk("partial")))
        reply.writer.transport.abort()  # no terminating chunk

    async with running(handle) as srv:
        got: list[str] = []
        with pytest.raises(BadResponse) as err:
            async for d in stream_chat(settings(srv.url), MESSAGES):
                got.append(d)
    assert got == ["partial"] and srv.url in err.value.message


# ---------------------------------------------------------------- auth


async def test_401_names_the_env_var_and_never_the_key(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MY_LLM_KEY", API_KEY)
    async with running(openai_server(["x"], key="the-right-key")) as srv:
        with pytest.raises(AuthFailed) as err:
            await collect(settings(srv.url, api_key_env="MY_LLM_KEY"))
    msg = err.value.message
    assert "MY_LLM_KEY" in msg and "HTTP 401" in msg
    assert API_KEY not in msg and API_KEY not in str(err.value) and API_KEY not in caplog.text
    assert API_KEY not in "".join(traceback.format_exception(err.value))


async def test_401_with_the_env_var_unset_says_to_set_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_LLM_KEY", raising=False)
    async with running(openai_server(["x"], key="k")) as srv:
        with pytest.raises(AuthFailed) as err:
            await collect(settings(srv.url, api_key_env="MY_LLM_KEY"))
    assert "set the environment variable MY_LLM_KEY" in err.value.message
    assert "authorization" not in srv.requests[0].headers


async def test_403_without_api_key_env_points_at_the_setting() -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.whole(403, '{"error": "forbidden"}')

    async with running(handle) as srv:
        with pytest.raises(AuthFailed) as err:
            await list_models(settings(srv.url))
    assert "llm.api_key_env" in err.value.message and "HTTP 403" in err.value.message


# ---------------------------------------------------------------- network failures


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("provider", ["openai", "ollama"])
async def test_refused_port_names_the_url_quickly(provider: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    began = time.monotonic()
    with pytest.raises(EndpointUnreachable) as err:
        await collect(settings(url, provider))
    assert time.monotonic() - began < 2.5
    assert url in err.value.message and "refused" in err.value.message
    assert "\n" not in err.value.message


async def test_refused_port_list_models() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EndpointUnreachable):
        await list_models(settings(url))


async def test_accept_then_stall_before_headers() -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await asyncio.sleep(30)

    async with running(handle) as srv:
        began = time.monotonic()
        with pytest.raises(EndpointTimeout) as err:
            await collect(settings(srv.url, read_timeout=0.3))
        elapsed = time.monotonic() - began
    assert 0.25 < elapsed < 3.0  # read_timeout 0.3 s; slack for a loaded machine
    assert err.value.message == f"no data from {chat_url(settings(srv.url))} for 0.3 s"


async def test_stall_mid_stream_after_some_deltas() -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.start(200, "application/x-ndjson")
        await reply.send(json.dumps({"message": {"content": "slow"}, "done": False}) + "\n")
        await asyncio.sleep(30)

    async with running(handle) as srv:
        got: list[str] = []
        with pytest.raises(EndpointTimeout) as err:
            async for d in stream_chat(settings(srv.url, "ollama", read_timeout=0.3), MESSAGES):
                got.append(d)
    assert got == ["slow"]
    assert "no data from" in err.value.message and srv.url in err.value.message


# ---------------------------------------------------------------- cancellation


def endless(reply_kind: str) -> Callable[[FakeServer], Handler]:
    """A server that sends one delta, then waits for the client to hang up."""

    def make(server: FakeServer) -> Handler:
        async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
            await reply.start(200)
            if reply_kind == "ollama":
                await reply.send(
                    json.dumps({"message": {"content": "first"}, "done": False}) + "\n"
                )
            else:
                await reply.send(sse(chunk("first")))
            await wait_for_hangup(reader, server)

        return handle

    return make


@contextlib.asynccontextmanager
async def running_self_aware(make: Callable[[FakeServer], Handler]) -> AsyncIterator[FakeServer]:
    holder: list[FakeServer] = []

    async def handler(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await make(holder[0])(req, reply, reader)

    async with running(handler) as srv:
        holder.append(srv)
        yield srv


@pytest.mark.parametrize("provider", ["openai", "ollama"])
async def test_cancelling_the_task_closes_the_connection(provider: str) -> None:
    async with running_self_aware(endless(provider)) as srv:
        first = asyncio.Event()

        async def consume() -> None:
            async for _ in stream_chat(settings(srv.url, provider), MESSAGES):
                first.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first.wait(), 5)
        assert not srv.disconnected.is_set()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(srv.disconnected.wait(), 2)


async def test_breaking_out_under_aclosing_closes_the_connection() -> None:
    async with running_self_aware(endless("openai")) as srv:
        async with contextlib.aclosing(stream_chat(settings(srv.url), MESSAGES)) as stream:
            async for delta in stream:
                assert delta == "first"
                break
        await asyncio.wait_for(srv.disconnected.wait(), 2)


# ---------------------------------------------------------------- loopback detection


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:11434", True),
        ("http://127.8.9.10", True),
        ("http://localhost:8080/v1", True),
        ("http://LOCALHOST.", True),
        ("http://api.localhost", True),
        ("http://[::1]:8000", True),
        ("http://[::ffff:127.0.0.1]:8000", True),
        ("http://0.0.0.0:8000", True),
        ("https://api.openai.com/v1", False),
        ("http://192.168.1.20:11434", False),
        ("http://localhost.evil.com", False),
        ("http://127.0.0.1.nip.io", False),
        ("not a url", False),
        ("http://[bad", False),
    ],
)
def test_is_loopback(url: str, expected: bool) -> None:
    assert is_loopback(url) is expected


def test_errors_carry_one_line_message() -> None:
    err = EndpointTimeout("no data from http://x for 3 s")
    assert isinstance(err, LLMError) and err.message == str(err)


# ---------------------------------------------------------------- bounds (issue 11, item 5)
# The hostile end-to-end cases (real CLI, peak memory) are in tests/hostile/test_llm_hostile.py.


def raw_stream(head: str, *parts: bytes, hang: bool = False) -> Handler:
    """A handler writing exact bytes: the status line and headers, then `parts`."""

    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        reply.writer.write(f"HTTP/1.1 {head}\r\nConnection: close\r\n\r\n".encode())
        for part in parts:
            reply.writer.write(part)
            await reply.writer.drain()
        if hang:
            await asyncio.sleep(30)

    return handle


def sse_bytes(obj: dict[str, Any] | str) -> bytes:
    return sse(obj).encode()


async def test_a_line_over_the_cap_is_an_error_and_the_partial_answer_stays() -> None:
    body = [sse_bytes(chunk("kept")), b"x" * 40_000, b"y" * 40_000]
    async with running(raw_stream("200 OK", *body, hang=True)) as srv:
        got: list[str] = []
        with pytest.raises(ResponseTooLarge) as err:
            async for d in stream_chat(settings(srv.url, max_line_bytes=65536), MESSAGES):
                got.append(d)
    assert got == ["kept"]
    assert err.value.message == (
        f"the endpoint {chat_url(settings(srv.url))} sent a line longer than 64 KiB; "
        "stopped (llm.max_line_bytes)"
    )


async def test_the_answer_is_cut_at_max_answer_chars() -> None:
    async with running(openai_server(["abcd", "efgh", "ijkl", "mnop"])) as srv:
        got: list[str] = []
        with pytest.raises(AnswerTooLong) as err:
            async for d in stream_chat(settings(srv.url, max_answer_chars=10), MESSAGES):
                got.append(d)
    assert "".join(got) == "abcdefghij"
    assert err.value.message == "the answer exceeded llm.max_answer_chars=10; stopped"


async def test_an_answer_exactly_at_the_cap_is_complete() -> None:
    async with running(openai_server(["abcd", "efgh"])) as srv:
        assert await collect(settings(srv.url, max_answer_chars=8)) == ["abcd", "efgh"]


@pytest.mark.parametrize(("provider", "marker"), [("openai", "[DONE]"), ("ollama", "done:true")])
async def test_a_stream_ending_without_its_end_marker_is_truncated(
    provider: str, marker: str
) -> None:
    if provider == "ollama":
        event = json.dumps({"message": {"content": "half"}, "done": False}).encode() + b"\n"
    else:
        event = sse_bytes(chunk("half"))
    async with running(raw_stream("200 OK", event, event[:20])) as srv:
        got: list[str] = []
        with pytest.raises(StreamTruncated) as err:
            async for d in stream_chat(settings(srv.url, provider), MESSAGES):
                got.append(d)
    assert got == ["half"]
    assert err.value.message == (
        f"the stream from {chat_url(settings(srv.url, provider))} ended before the answer was "
        f"complete (no {marker}); the partial answer is kept and marked incomplete"
    )


async def test_an_openai_stream_that_gave_its_finish_reason_needs_no_done() -> None:
    body = [sse_bytes(chunk("all")), sse_bytes(chunk(finish="stop"))]
    async with running(raw_stream("200 OK", *body)) as srv:
        assert await collect(settings(srv.url)) == ["all"]


async def test_total_timeout_stops_a_drip_that_read_timeout_cannot() -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.start(200, "text/event-stream")
        await reply.send(sse(chunk("slow")))
        while True:
            await reply.send(": .\n")
            await asyncio.sleep(0.1)

    async with running(handle) as srv:
        s = settings(srv.url, read_timeout=0.5, total_timeout=0.8)
        began = time.monotonic()
        got: list[str] = []
        with pytest.raises(DeadlineExceeded) as err:
            async for d in stream_chat(s, MESSAGES):
                got.append(d)
        elapsed = time.monotonic() - began
    assert got == ["slow"] and 0.7 < elapsed < 3.0
    assert err.value.message == (
        f"no answer from {chat_url(s)} within llm.total_timeout=0.8 s; stopped"
    )
    assert isinstance(err.value, EndpointTimeout)


async def test_a_redirect_is_reported_and_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_LLM_KEY", API_KEY)
    head = (
        "302 Found\r\nLocation: http://elsewhere.invalid/v1/chat/completions\r\nContent-Length: 0"
    )
    async with running(raw_stream(head)) as srv:
        with pytest.raises(BadResponse) as err:
            await collect(settings(srv.url, api_key_env="MY_LLM_KEY"))
    assert len(srv.requests) == 1
    assert err.value.message == (
        f"{chat_url(settings(srv.url))} answered HTTP 302, a redirect to "
        "http://elsewhere.invalid/v1/chat/completions; redirects are not followed (the API key "
        "must not go elsewhere): set llm.base_url to the final address"
    )


async def test_gzip_and_deflate_bodies_are_decoded() -> None:
    text = sse_bytes(chunk("zipped")) + sse_bytes("[DONE]")
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    bodies = {
        "gzip": gzip.compress(text),
        "deflate": zlib.compress(text),
        "deflate ": raw_deflate.compress(text) + raw_deflate.flush(),  # raw, as servers do
    }
    for encoding, body in bodies.items():
        head = f"200 OK\r\nContent-Encoding: {encoding}\r\nContent-Length: {len(body)}"
        async with running(raw_stream(head, body)) as srv:
            assert await collect(settings(srv.url)) == ["zipped"], encoding


def test_a_gzip_bomb_inflates_in_bounded_pieces() -> None:
    bomb = gzip.compress(b"\n" * (64 << 20), compresslevel=9)  # 64 MiB in ~64 KiB
    pieces = list(_Inflater("gzip", "http://x").feed(bomb))
    assert max(len(p) for p in pieces) <= DECODE_PIECE
    assert sum(len(p) for p in pieces) == 64 << 20


def test_an_unknown_content_encoding_is_a_clear_error() -> None:
    with pytest.raises(BadResponse, match="Content-Encoding 'br'"):
        _Inflater("br", "http://x")


async def test_a_model_list_that_never_ends_is_capped() -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.start(200)
        await reply.send('{"data": [')
        while True:
            await reply.send('{"id": "m"},' * 4096)

    async with running(handle) as srv:
        with pytest.raises(ResponseTooLarge) as err:
            await list_models(settings(srv.url))
    assert err.value.message == f"{srv.url}/v1/models sent more than 8 MiB; stopped"


async def test_a_model_list_drip_stops_at_connect_plus_read_timeout() -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.start(200)
        while True:
            await reply.send(" ")
            await asyncio.sleep(0.1)

    async with running(handle) as srv:
        with pytest.raises(DeadlineExceeded) as err:
            await list_models(settings(srv.url, connect_timeout=0.3, read_timeout=0.5))
    assert err.value.message == f"no model list from {srv.url}/v1/models within 0.8 s; stopped"


# ---------------------------------------------------------------- health probe (ChatProvider.probe)


@pytest.mark.parametrize(("provider", "known"), [("ollama", True), ("openai", False)])
async def test_probe_reports_the_model_list_and_whether_the_model_is_on_it(
    provider: str, known: bool
) -> None:
    fake = ollama_fake([]) if provider == "ollama" else openai_server([])
    async with running(fake) as srv:
        s = settings(srv.url, provider, model="qwen2.5-coder:7b")
        health = await probe(s)
    assert health.ok and health.url == models_url(s)
    assert health.models == (tuple(OLLAMA_MODELS) if provider == "ollama" else ("tiny",))
    among = "among them" if known else "not among them"
    assert health.detail == f"{len(health.models)} model(s); 'qwen2.5-coder:7b' {among}"


async def test_probe_of_a_refused_port_is_not_ok_and_says_why() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    health = await probe(settings(url, "ollama"))
    assert not health.ok and health.models == ()
    assert health.detail.startswith(f"cannot connect to {url}/api/tags: connection refused")
    assert health.detail.endswith("(start it with `ollama serve`)")


# ---------------------------------------------------------------- the server's context window
# Issue 26 item 13: a server that holds fewer tokens than `llm.context_tokens` refused the
# first ask with HTTP 400. The window it reports (llama.cpp's GET /props, Ollama's POST
# /api/show) now bounds the budget. No Ollama runs here: its /api/show is a loopback fake of
# the documented reply; llama.cpp's real /props is read in tests/llm/test_llm_real.py.


def ollama_show_fake(reply: dict[str, Any] | None, status: int = 200) -> Handler:
    """A fake Ollama endpoint: POST /api/show answers `reply` (as Ollama 0.5+ shapes it)."""

    async def handle(req: Request, reply_to: Reply, reader: asyncio.StreamReader) -> None:
        if (req.method, req.path) != ("POST", "/api/show"):
            await reply_to.whole(404, "404 page not found", "text/plain")
            return
        await reply_to.whole(status, json.dumps(reply if status == 200 else {"error": "nope"}))

    return handle


def show_reply(context_length: int | None, num_ctx: int | None = None) -> dict[str, Any]:
    """/api/show's reply: model_info keyed by the architecture, Modelfile parameters as text."""
    info: dict[str, Any] = {"general.architecture": "qwen2", "qwen2.block_count": 28}
    if context_length is not None:
        info["qwen2.context_length"] = context_length
    params = 'stop                           "<|im_end|>"\ntemperature                    0.7'
    if num_ctx is not None:
        params = f"num_ctx                        {num_ctx}\n{params}"
    return {
        "modelfile": "# Modelfile",
        "parameters": params,
        "template": "{{ .Prompt }}",
        "details": {"family": "qwen2"},
        "model_info": info,
    }


async def test_fake_ollama_endpoint_api_show_bounds_the_context_to_the_models_length() -> None:
    async with running(ollama_show_fake(show_reply(4096))) as srv:
        s = settings(srv.url, "ollama", context_tokens=8192)
        assert await server_context_tokens(s) == 4096
        assert (await fit_context(s)).context_tokens == 4096  # min(configured, server's)
        roomy = settings(srv.url, "ollama", model="other", context_tokens=2048)
        assert (await fit_context(roomy)).context_tokens == 2048  # a smaller setting wins
    assert [(r.method, r.path, r.json()) for r in srv.requests] == [
        ("POST", "/api/show", {"model": "tiny"}),
        ("POST", "/api/show", {"model": "other"}),
    ]


async def test_fake_ollama_endpoint_num_ctx_parameter_when_model_info_lacks_the_length() -> None:
    async with running(ollama_show_fake(show_reply(None, num_ctx=3072))) as srv:
        assert await server_context_tokens(settings(srv.url, "ollama")) == 3072


@pytest.mark.parametrize(
    "reply",
    [
        show_reply(None),  # says nothing about its window
        {"model_info": {"general.architecture": "qwen2", "qwen2.context_length": "big"}},
        {"model_info": {"general.architecture": "qwen2", "qwen2.context_length": -5}},
        {"model_info": ["not", "a", "dict"]},
    ],
)
async def test_fake_ollama_endpoint_without_a_usable_length_keeps_the_setting(
    reply: dict[str, Any],
) -> None:
    async with running(ollama_show_fake(reply)) as srv:
        s = settings(srv.url, "ollama", context_tokens=8192)
        assert await server_context_tokens(s) is None
        assert (await fit_context(s)).context_tokens == 8192


async def test_the_window_is_asked_once_per_endpoint_and_model() -> None:
    async with running(ollama_show_fake(show_reply(4096))) as srv:
        for _ in range(3):
            assert await server_context_tokens(settings(srv.url + "/api/", "ollama")) == 4096
        unknown = settings(srv.url, "ollama", model="missing")
        async with running(ollama_show_fake(None, status=404)) as gone:
            missing = settings(gone.url, "ollama", model="missing")
            assert await server_context_tokens(missing) is None
            assert await server_context_tokens(missing) is None
        assert len(gone.requests) == 1  # a definite "not here" is remembered too
        assert await server_context_tokens(unknown) == 4096
    assert len(srv.requests) == 2


async def test_an_unreachable_window_probe_keeps_the_setting_and_is_asked_again_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(window, "RETRY_AFTER", 0.0)  # a failure is not remembered for good
    port = free_port()
    s = settings(f"http://127.0.0.1:{port}", "ollama", context_tokens=8192)
    began = time.monotonic()
    assert (await fit_context(s)).context_tokens == 8192
    assert time.monotonic() - began < 1.0
    fake = FakeServer(ollama_show_fake(show_reply(2048)))
    server = await asyncio.start_server(fake.serve, "127.0.0.1", port)
    async with server:
        assert (await fit_context(s)).context_tokens == 2048


async def test_the_window_probe_is_bounded_in_time_and_size() -> None:
    async def drip(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.start(200)
        while True:
            await reply.send(" ")
            await asyncio.sleep(0.1)

    async def flood(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.start(200)
        await reply.send('{"model_info": {"x": "')
        while True:
            await reply.send("y" * 65536)

    for handler in (drip, flood):
        async with running(handler) as srv:
            s = settings(srv.url, "ollama", context_tokens=8192, read_timeout=30.0)
            began = time.monotonic()
            assert (await fit_context(s)).context_tokens == 8192
            assert time.monotonic() - began < window.PROBE_SECONDS + 1.0, handler.__name__


async def test_the_window_probe_refuses_a_redirect_and_sends_the_key_only_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_LLM_KEY", API_KEY)
    head = "307 Temporary Redirect\r\nLocation: http://elsewhere.invalid/props\r\nContent-Length: 0"
    async with running(raw_stream(head)) as srv:
        s = settings(srv.url, api_key_env="MY_LLM_KEY", context_tokens=8192)
        assert (await fit_context(s)).context_tokens == 8192
    assert [(r.method, r.path) for r in srv.requests] == [("GET", "/props")]
    assert srv.requests[0].headers["authorization"] == f"Bearer {API_KEY}"


async def test_llama_cpp_props_shape_gives_n_ctx() -> None:
    props = {"default_generation_settings": {"n_ctx": 2048, "params": {}}, "total_slots": 1}

    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.whole(200, json.dumps(props))

    async with running(handle) as srv:
        assert await server_context_tokens(settings(srv.url + "/v1")) == 2048
    assert srv.requests[0].path == "/props"


# ---------------------------------------------------------------- a prompt the server refused


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (  # llama.cpp (b6000+): the sizes in fields and in the text
            {
                "error": {
                    "code": 400,
                    "type": "exceed_context_size_error",
                    "n_ctx": 2048,
                    "n_prompt_tokens": 3031,
                    "message": "request (3031 tokens) exceeds the "
                    "available context size (2048 tokens), try increasing it",
                }
            },
            2048,
        ),
        (  # OpenAI, vLLM
            {
                "error": {
                    "code": "context_length_exceeded",
                    "message": "This model's maximum "
                    "context length is 4096 tokens. However, your messages resulted in "
                    "5000 tokens. Please reduce the length of the messages.",
                }
            },
            4096,
        ),
        ({"error": {"message": "prompt is too long: context length exceeded"}}, None),
    ],
)
async def test_a_prompt_over_the_servers_window_names_the_setting_to_change(
    body: dict[str, Any], said: int | None
) -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.whole(400, json.dumps(body))

    async with running(handle) as srv:
        with pytest.raises(ContextExceeded) as err:
            await collect(settings(srv.url, context_tokens=8192))
    msg = err.value.message
    assert "HTTP 400" in msg and "llm.context_tokens" in msg and "\n" not in msg
    if said is None:
        assert "(now 8192)" in msg
    else:
        assert f"set llm.context_tokens to {said}" in msg


async def test_an_unrelated_400_is_not_called_a_context_overflow() -> None:
    async def handle(req: Request, reply: Reply, reader: asyncio.StreamReader) -> None:
        await reply.whole(400, json.dumps({"error": {"message": "temperature must be <= 2"}}))

    async with running(handle) as srv:
        with pytest.raises(BadResponse) as err:
            await collect(settings(srv.url))
    assert not isinstance(err.value, ContextExceeded)
    assert "llm.context_tokens" not in err.value.message


# ---------------------------------------------------------------- answers the server cut short


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("stop", None),
        ("", None),
        ("length", "the model stopped at its token limit"),
        ("content_filter", "the server's content filter stopped the answer"),
    ],
)
def test_length_and_content_filter_endings_are_cut_short(reason: str, expected: str | None) -> None:
    failure = cut_short(ChatUsage(finish_reason=reason), LLMSettings(max_tokens=77))
    if expected is None:
        assert failure is None
    else:
        assert isinstance(failure, AnswerCutShort) and failure.message.startswith(expected)
        assert f'"{reason}"' in failure.message
    if reason == "length":
        assert failure is not None and "llm.max_tokens (now 77)" in failure.message


# ---------------------------------------------------------------- TLS: one verifying context


@pytest.fixture
def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (the openssl CLI)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


async def test_the_shared_tls_context_still_refuses_an_unknown_certificate(
    self_signed: tuple[Path, Path],
) -> None:
    """The TLS context is made once per process (it was made per request: 100+ ms each on a
    loaded machine); it must verify as before. An https endpoint with a certificate no CA
    signed is refused, for the chat and for the context-window request alike."""
    assert transport.ssl_context(False) is transport.ssl_context(False)
    for trusted in (False, True):
        made = transport.ssl_context(trusted)
        assert made.verify_mode == ssl.CERT_REQUIRED and made.check_hostname
    cert, key = self_signed
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    fake = FakeServer(openai_server(["secret answer"]))
    server = await asyncio.start_server(fake.serve, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    async with server:
        s = settings(f"https://127.0.0.1:{port}", context_tokens=8192)
        with pytest.raises(LLMError) as err:
            await collect(s)
        assert err.value.message == (
            f"cannot connect to {chat_url(s)}: certificate not trusted (self-signed certificate)"
        )
        assert (await fit_context(s)).context_tokens == 8192
    assert fake.requests == []  # nothing was sent over the unverified connection


def test_a_trusted_environment_may_name_its_own_ca_file(
    self_signed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, _ = self_signed
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    own = transport.ssl_context(True)
    assert any(c.get("subject") == ((("commonName", "127.0.0.1"),),) for c in own.get_ca_certs())
    loopback = transport.ssl_context(False)  # a loopback endpoint ignores the environment
    assert not any(
        c.get("subject") == ((("commonName", "127.0.0.1"),),) for c in loopback.get_ca_certs()
    )
