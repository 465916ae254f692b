"""Chat clients for Ollama (/api/chat, NDJSON) and OpenAI-compatible servers (SSE), streamed.

A leaf: imports nothing of ours except `config`. Every failure becomes an `LLMError` whose
`.message` is one line the editor can show as is. The API key is read from the environment
variable named by `settings.api_key_env` at request time: never logged, never kept, never put
into an error message.

Cancellation: the caller cancels the task iterating `stream_chat`; the `async with` blocks
below close the HTTP response and the client, so the server sees the disconnect at once.
Callers that stop iterating early without cancelling should wrap the generator in
`contextlib.aclosing` so it is closed promptly.

Bounds (a hostile or broken endpoint must not grow memory or hang us): every response body is
read through `decoded_pieces` (our own bounded gzip/deflate decoding: httpx would inflate a whole
read at once, so a gzip bomb's 64 KiB read would become 64 MiB) and, for streams, `bounded_lines`
(a line longer than `llm.max_line_bytes` is an error, never buffered). Each read also runs under
a `Deadline` (`llm.total_timeout` for an answer), the answer is capped at `llm.max_answer_chars`,
a stream that ends without its end marker is `StreamTruncated`, and redirects are not followed
(the Authorization header must not travel to another host).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import socket
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

import httpx

from codeask.config import LLMSettings

log = logging.getLogger(__name__)

#: Longest piece of an error body quoted in a message.
EXCERPT_CHARS = 200
#: Bytes of an error body read at most.
ERROR_BODY_BYTES = 4096
#: Bytes of a model list read at most (a hosted service's list of hundreds of models is ~1 MB).
MODEL_LIST_BYTES = 8 * 1024 * 1024
#: Largest piece the bounded decoder inflates at once.
DECODE_PIECE = 64 * 1024


class LLMError(Exception):
    """Any failure talking to the model; `.message` is one clear line for the editor."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class EndpointUnreachable(LLMError):
    """No connection: refused, DNS failure, or no answer within the connect timeout."""


class EndpointTimeout(LLMError):
    """Connected, but the server stopped sending for longer than the read timeout."""


class AuthFailed(LLMError):
    """HTTP 401/403: the API key is missing or rejected."""


class ModelNotFound(LLMError):
    """The endpoint does not know the configured model."""


class BadResponse(LLMError):
    """The server answered, but not with a usable stream (HTTP error, garbage, error event)."""


class ResponseTooLarge(BadResponse):
    """A line or a whole response went past its cap (`llm.max_line_bytes` and friends)."""


class AnswerTooLong(LLMError):
    """The answer went past `llm.max_answer_chars`; what arrived up to the cap was kept."""


class DeadlineExceeded(EndpointTimeout):
    """The whole call took longer than its deadline (`llm.total_timeout` for an answer)."""


class StreamTruncated(BadResponse):
    """The stream ended (or the connection closed) before the answer's end marker."""


@dataclass
class ChatUsage:
    """What the server reported about one answer (None when it did not say)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = ""
    """`stop`, `length` (hit max_tokens), ... as reported; '' if unknown."""


# ---------------------------------------------------------------- URLs


def is_loopback(url: str) -> bool:
    """Whether the URL's host is this machine (localhost, 127/8, ::1); unparsable → False."""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def _base(settings: LLMSettings) -> str:
    """The base URL without a trailing slash or an API suffix the user may have pasted."""
    base = settings.base_url.strip().rstrip("/")
    for suffix in ("/v1", "/api"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def chat_url(settings: LLMSettings) -> str:
    """`/api/chat` for Ollama, `/v1/chat/completions` otherwise (base with or without /v1)."""
    path = "/api/chat" if settings.provider == "ollama" else "/v1/chat/completions"
    return _base(settings) + path


def models_url(settings: LLMSettings) -> str:
    """`/api/tags` for Ollama, `/v1/models` otherwise."""
    path = "/api/tags" if settings.provider == "ollama" else "/v1/models"
    return _base(settings) + path


def _list_hint(settings: LLMSettings) -> str:
    """How the user finds the model names the endpoint knows."""
    if settings.provider == "ollama":
        return f"list models with `ollama list` (or `ollama pull {settings.model}`)"
    return f"list models with GET {models_url(settings)}"


# ---------------------------------------------------------------- HTTP plumbing


def _api_key(settings: LLMSettings) -> str:
    """The key from the named environment variable, '' if none (read per request, never kept)."""
    return os.environ.get(settings.api_key_env, "").strip() if settings.api_key_env else ""


def _headers(settings: LLMSettings) -> dict[str, str]:
    """JSON headers, plus the bearer token when an API key is configured."""
    headers = {"Accept": "application/json, text/event-stream, application/x-ndjson"}
    key = _api_key(settings)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def _client(settings: LLMSettings) -> httpx.AsyncClient:
    """A short-lived client: connect/read timeouts from settings, proxies only for remote hosts."""
    timeout = httpx.Timeout(
        connect=settings.connect_timeout,
        read=settings.read_timeout,
        write=settings.read_timeout,
        pool=settings.connect_timeout,
    )
    return httpx.AsyncClient(
        timeout=timeout,
        headers=_headers(settings),
        trust_env=not is_loopback(settings.base_url),
        follow_redirects=False,  # a redirect must not carry the Authorization header elsewhere
    )


def _transport_error(exc: httpx.HTTPError, url: str, settings: LLMSettings) -> LLMError:
    """One clear line for a network-level failure."""
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return EndpointUnreachable(
            f"no connection to {url} within {settings.connect_timeout:g} s; is the server up?"
        )
    if isinstance(exc, httpx.TimeoutException):
        return EndpointTimeout(f"no data from {url} for {settings.read_timeout:g} s")
    if isinstance(exc, httpx.ConnectError):
        local_ollama = settings.provider == "ollama" and is_loopback(url)
        hint = " (start it with `ollama serve`)" if local_ollama else ""
        return EndpointUnreachable(f"cannot connect to {url}: {_reason(exc)}{hint}")
    if isinstance(exc, httpx.RemoteProtocolError):
        return BadResponse(f"{url} closed the connection mid-answer ({_reason(exc)})")
    return BadResponse(f"request to {url} failed: {_reason(exc)}")


def _reason(exc: Exception) -> str:
    """The root cause on one line: the OS error's name ('connection refused', ...) when known."""
    cause: BaseException = exc
    for _ in range(8):  # bounded: exception chains can be long
        if isinstance(cause, socket.gaierror):
            return f"cannot resolve host ({cause.strerror or cause})"
        if isinstance(cause, OSError) and cause.errno:
            return os.strerror(cause.errno).lower()
        inner = cause.__cause__ or cause.__context__
        if inner is None:
            break
        cause = inner
    text = str(cause) or str(exc) or type(exc).__name__
    return " ".join(text.split())[:EXCERPT_CHARS]


async def _error_body(response: httpx.Response, deadline: Deadline) -> str:
    """Up to ERROR_BODY_BYTES of the body, decoded leniently; the rest is never read."""
    data = bytearray()
    pieces = decoded_pieces(response, deadline, ERROR_BODY_BYTES + DECODE_PIECE)
    with contextlib.suppress(LLMError):  # a broken or odd error body: quote what arrived
        async with contextlib.aclosing(pieces):
            async for piece in pieces:
                data += piece
                if len(data) >= ERROR_BODY_BYTES:
                    break
    return bytes(data[:ERROR_BODY_BYTES]).decode("utf-8", errors="replace")


async def _check_status(
    response: httpx.Response, url: str, settings: LLMSettings, deadline: Deadline
) -> None:
    """A clear LLMError for a redirect or an HTTP error status; nothing for a success."""
    status = response.status_code
    if 300 <= status < 400:
        raise _redirect_error(response, url, settings)
    if status >= 400:
        body = await _error_body(response, deadline)
        raise _status_error(status, body, url, settings)


def _redirect_error(response: httpx.Response, url: str, settings: LLMSettings) -> LLMError:
    """Redirects are reported, never followed: the bearer token must not go to another host."""
    location = _scrub(response.headers.get("location", ""), settings)[:EXCERPT_CHARS]
    return BadResponse(
        f"{url} answered HTTP {response.status_code}, a redirect to {location or '(nowhere)'}; "
        "redirects are not followed (the API key must not go elsewhere): "
        "set llm.base_url to the final address"
    )


def _scrub(text: str, settings: LLMSettings) -> str:
    """One line, with the API key replaced should the server echo it."""
    key = _api_key(settings)
    if key:
        text = text.replace(key, "[REDACTED]")
    return " ".join(text.split())


def _excerpt(body: str, settings: LLMSettings) -> str:
    """A short one-line excerpt of an error body; the API key is scrubbed should it be echoed."""
    try:
        data = json.loads(body)
        err = data.get("error", data) if isinstance(data, dict) else data
        text = err.get("message", str(err)) if isinstance(err, dict) else str(err)
    except (ValueError, AttributeError):
        text = body
    text = _scrub(text, settings)
    return text[:EXCERPT_CHARS] + ("…" if len(text) > EXCERPT_CHARS else "") or "(empty body)"


def _status_error(status: int, body: str, url: str, settings: LLMSettings) -> LLMError:
    """One clear line for an HTTP error status."""
    excerpt = _excerpt(body, settings)
    if status in (401, 403):
        return AuthFailed(_auth_message(status, url, settings))
    low = excerpt.lower()
    model_missing = "model" in low and any(
        w in low for w in ("not found", "does not exist", "not exist", "unknown", "no such")
    )
    if status == 404 or (status in (400, 422) and model_missing):
        said = f": {excerpt[:80]}" if body.strip() else ""
        return ModelNotFound(
            f"model '{settings.model}' not found at {url} (HTTP {status}{said}); "
            + _list_hint(settings)
        )
    return BadResponse(f"{url} answered HTTP {status}: {excerpt}")


def _auth_message(status: int, url: str, settings: LLMSettings) -> str:
    """Which environment variable to set; never the key itself."""
    env = settings.api_key_env
    if not env:
        return (
            f"{url} requires an API key (HTTP {status}): put it in an environment variable "
            "and set llm.api_key_env to that variable's name"
        )
    if not _api_key(settings):
        return f"{url} requires an API key (HTTP {status}): set the environment variable {env}"
    return f"{url} rejected the API key from ${env} (HTTP {status}); check the value of {env}"


# ---------------------------------------------------------------- bounded reading


def _size(n: int) -> str:
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
    try:
        async with deadline.guard():
            return await anext(raw, None)
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise StreamTruncated(f"{url} closed the connection mid-body ({_reason(exc)})") from None


async def decoded_pieces(
    response: httpx.Response, deadline: Deadline, max_total_bytes: int, setting: str = ""
) -> AsyncGenerator[bytes, None]:
    """The body, decoded, in pieces of at most 64 KiB, each read under `deadline`.

    ResponseTooLarge past `max_total_bytes` decoded bytes (`setting` names the cap to raise).
    """
    url = str(response.url)
    inflater = _Inflater(response.headers.get("content-encoding", ""), url)
    total = 0
    raw = cast(AsyncGenerator[bytes, None], response.aiter_raw())
    async with contextlib.aclosing(raw):
        while (data := await _read(raw, deadline, url)) is not None:
            for piece in inflater.feed(data):
                total += len(piece)
                if total > max_total_bytes:
                    named = f" ({setting})" if setting else ""
                    raise ResponseTooLarge(
                        f"{url} sent more than {_size(max_total_bytes)}{named}; stopped"
                    )
                yield piece


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
            f"the endpoint {url} sent a line longer than {_size(max_line_bytes)}; "
            "stopped (llm.max_line_bytes)"
        )
    line += more


# ---------------------------------------------------------------- stream parsing


def _ollama_line(line: str, usage: ChatUsage) -> tuple[str, bool]:
    """(text delta, done) from one NDJSON line; ValueError if it is not a chat chunk."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("not an object")
    if "error" in data:
        raise LLMError(str(data["error"]))
    message = data.get("message")
    if message is None and "done" not in data:
        raise ValueError("neither message nor done")
    content = message.get("content", "") if isinstance(message, dict) else ""
    if data.get("done"):
        usage.prompt_tokens = _int_or_none(data.get("prompt_eval_count"))
        usage.completion_tokens = _int_or_none(data.get("eval_count"))
        usage.finish_reason = str(data.get("done_reason") or "stop")
        return str(content or ""), True
    return str(content or ""), False


def _openai_line(line: str, usage: ChatUsage) -> tuple[str, bool] | None:
    """(text delta, done) from one SSE line; None for non-data lines; ValueError if malformed."""
    if not line.startswith("data:"):
        return None  # blank keep-alives, comments (':'), event:/id:/retry: fields
    payload = line[5:].strip()
    if payload == "[DONE]":
        return "", True
    data = json.loads(payload)
    if not isinstance(data, dict):
        raise ValueError("not an object")
    if "error" in data:
        err = data["error"]
        raise LLMError(str(err.get("message", err) if isinstance(err, dict) else err))
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise ValueError("no choices")
    _openai_usage(data.get("usage"), usage)
    text = ""
    for choice in choices:
        delta = choice.get("delta") or {}
        text += str(delta.get("content") or "")
        if choice.get("finish_reason"):
            usage.finish_reason = str(choice["finish_reason"])
    return text, False


def _openai_usage(raw: Any, usage: ChatUsage) -> None:
    """Copy the token counts when the chunk carries them (final chunk with include_usage)."""
    if isinstance(raw, dict):
        usage.prompt_tokens = _int_or_none(raw.get("prompt_tokens"))
        usage.completion_tokens = _int_or_none(raw.get("completion_tokens"))


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) else None


# ---------------------------------------------------------------- public API


def _request_body(settings: LLMSettings, messages: list[dict[str, str]]) -> dict[str, Any]:
    """The provider's streaming chat request."""
    if settings.provider == "ollama":
        options = {
            "temperature": settings.temperature,
            "num_predict": settings.max_tokens,
            # Ollama's default window is small and it silently cuts longer prompts.
            "num_ctx": settings.context_tokens,
        }
        return {"model": settings.model, "messages": messages, "stream": True, "options": options}
    return {
        "model": settings.model,
        "messages": messages,
        "stream": True,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "stream_options": {"include_usage": True},
    }


async def stream_chat(
    settings: LLMSettings,
    messages: list[dict[str, str]],
    *,
    usage: ChatUsage | None = None,
) -> AsyncIterator[str]:
    """Yield the answer's text deltas as they arrive; fill `usage` if given. Raises LLMError.

    Bounded: `llm.total_timeout` for the whole call, `llm.max_line_bytes` per line,
    `llm.max_response_bytes` per body, `llm.max_answer_chars` per answer (see the module doc).
    """
    url = chat_url(settings)
    report = usage if usage is not None else ChatUsage()
    parse = _ollama_line if settings.provider == "ollama" else _openai_line
    deadline = Deadline.after(
        settings.total_timeout,
        f"no answer from {url} within llm.total_timeout={settings.total_timeout:g} s; stopped",
    )
    try:
        async with _client(settings) as client:
            request = client.build_request("POST", url, json=_request_body(settings, messages))
            async with deadline.guard():
                response = await client.send(request, stream=True)
            try:
                await _check_status(response, url, settings, deadline)
                lines = bounded_lines(
                    response, settings.max_line_bytes, settings.max_response_bytes, deadline
                )
                deltas = _deltas(lines, parse, report, settings.max_answer_chars, url)
                async with contextlib.aclosing(deltas):
                    async for delta in deltas:
                        yield delta
            finally:
                await response.aclose()
    except httpx.HTTPError as exc:
        raise _transport_error(exc, url, settings) from None


async def _deltas(
    lines: AsyncGenerator[str, None],
    parse: Callable[[str, ChatUsage], tuple[str, bool] | None],
    usage: ChatUsage,
    max_chars: int,
    url: str,
) -> AsyncGenerator[str, None]:
    """Parse the stream line by line; skip malformed lines; cap the answer; insist on an end."""
    valid = chars = 0
    try:
        async with contextlib.aclosing(lines):
            async for line in lines:
                parsed = _parse(parse, line.strip(), usage, url)
                if parsed is None:
                    continue
                valid += 1
                text, done = parsed
                kept = text[: max(max_chars - chars, 0)]
                chars += len(kept)
                if kept:
                    yield kept
                if len(kept) < len(text):
                    raise AnswerTooLong(
                        f"the answer exceeded llm.max_answer_chars={max_chars}; stopped"
                    )
                if done:
                    return
    except StreamTruncated:
        raise _truncated(url, "the connection closed mid-body", chars > 0) from None
    if not valid:
        raise BadResponse(f"{url} sent no valid chat stream (is the provider setting right?)")
    if not usage.finish_reason:  # an OpenAI stream that said why it finished is complete
        raise _truncated(url, "no [DONE]" if parse is _openai_line else "no done:true", chars > 0)


def _parse(
    parse: Callable[[str, ChatUsage], tuple[str, bool] | None],
    line: str,
    usage: ChatUsage,
    url: str,
) -> tuple[str, bool] | None:
    """One line through the provider's parser; None for blank, malformed and non-data lines."""
    if not line:
        return None
    try:
        return parse(line, usage)
    except LLMError as exc:
        raise BadResponse(f"{url} reported an error: {exc.message[:EXCERPT_CHARS]}") from None
    except (ValueError, AttributeError, TypeError) as exc:
        log.debug("skipping malformed line from %s (%s): %.120s", url, exc, line)
        return None


def _truncated(url: str, why: str, partial: bool) -> StreamTruncated:
    """The stream ended before the answer's end marker."""
    kept = "; the partial answer is kept and marked incomplete" if partial else ""
    return StreamTruncated(
        f"the stream from {url} ended before the answer was complete ({why}){kept}"
    )


async def list_models(settings: LLMSettings) -> list[str]:
    """Model names the endpoint offers (Ollama /api/tags, OpenAI /v1/models). Raises LLMError.

    Bounded like an answer: connect + read timeout for the whole call, MODEL_LIST_BYTES of body.
    """
    url = models_url(settings)
    seconds = settings.connect_timeout + settings.read_timeout
    deadline = Deadline.after(seconds, f"no model list from {url} within {seconds:g} s; stopped")
    try:
        async with _client(settings) as client:
            async with deadline.guard():
                response = await client.send(client.build_request("GET", url), stream=True)
            try:
                return await _model_list(response, url, settings, deadline)
            finally:
                await response.aclose()
    except httpx.HTTPError as exc:
        raise _transport_error(exc, url, settings) from None


async def _model_list(
    response: httpx.Response, url: str, settings: LLMSettings, deadline: Deadline
) -> list[str]:
    """The names from a model-list response, read under its caps."""
    if response.status_code == 404:
        raise BadResponse(f"{url} not found (HTTP 404); is llm.provider right?")
    await _check_status(response, url, settings, deadline)
    body = bytearray()
    pieces = decoded_pieces(response, deadline, MODEL_LIST_BYTES)
    async with contextlib.aclosing(pieces):
        async for piece in pieces:
            body += piece
    return _model_names(bytes(body), url, settings)


def _model_names(body: bytes, url: str, settings: LLMSettings) -> list[str]:
    """Names from `{"models": [{"name"}]}` (Ollama) or `{"data": [{"id"}]}` (OpenAI)."""
    field, key = ("models", "name") if settings.provider == "ollama" else ("data", "id")
    try:
        items = json.loads(body)[field]
        return [str(item[key]) for item in items]
    except (ValueError, KeyError, TypeError) as exc:
        raise BadResponse(f"{url} sent an unexpected model list ({exc})") from None
