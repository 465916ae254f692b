"""Chat clients for Ollama (/api/chat, NDJSON) and OpenAI-compatible servers (SSE), streamed.

A leaf: imports nothing of ours except `config`. Every failure becomes an `LLMError` whose
`.message` is one line the editor can show as is. The API key is read from the environment
variable named by `settings.api_key_env` at request time: never logged, never kept, never put
into an error message.

Cancellation: the caller cancels the task iterating `stream_chat`; the `async with` blocks
below close the HTTP response and the client, so the server sees the disconnect at once.
Callers that stop iterating early without cancelling should wrap the generator in
`contextlib.aclosing` so it is closed promptly.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from codeask.config import LLMSettings

log = logging.getLogger(__name__)

#: Longest piece of an error body quoted in a message.
EXCERPT_CHARS = 200
#: Bytes of an error body read at most.
ERROR_BODY_BYTES = 4096


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
        timeout=timeout, headers=_headers(settings), trust_env=not is_loopback(settings.base_url)
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


async def _error_body(response: httpx.Response) -> str:
    """Up to ERROR_BODY_BYTES of the body, decoded leniently."""
    data = b""
    async for piece in response.aiter_bytes():
        data += piece
        if len(data) >= ERROR_BODY_BYTES:
            break
    return data[:ERROR_BODY_BYTES].decode("utf-8", errors="replace")


def _excerpt(body: str, settings: LLMSettings) -> str:
    """A short one-line excerpt of an error body; the API key is scrubbed should it be echoed."""
    try:
        data = json.loads(body)
        err = data.get("error", data) if isinstance(data, dict) else data
        text = err.get("message", str(err)) if isinstance(err, dict) else str(err)
    except (ValueError, AttributeError):
        text = body
    key = _api_key(settings)
    if key:
        text = text.replace(key, "[REDACTED]")
    text = " ".join(text.split())
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
    """Yield the answer's text deltas as they arrive; fill `usage` if given. Raises LLMError."""
    url = chat_url(settings)
    report = usage if usage is not None else ChatUsage()
    parse = _ollama_line if settings.provider == "ollama" else _openai_line
    try:
        async with (
            _client(settings) as client,
            client.stream("POST", url, json=_request_body(settings, messages)) as response,
        ):
            if response.status_code >= 400:
                body = await _error_body(response)
                raise _status_error(response.status_code, body, url, settings)
            async for delta in _deltas(response, parse, report, url):
                yield delta
    except httpx.HTTPError as exc:
        raise _transport_error(exc, url, settings) from None


async def _deltas(
    response: httpx.Response,
    parse: Callable[[str, ChatUsage], tuple[str, bool] | None],
    usage: ChatUsage,
    url: str,
) -> AsyncIterator[str]:
    """Parse the stream line by line; skip malformed lines; BadResponse if none was valid."""
    valid = 0
    async for line in response.aiter_lines():
        line = line.strip()
        if not line:
            continue
        try:
            parsed = parse(line, usage)
        except LLMError as exc:
            raise BadResponse(f"{url} reported an error: {exc.message[:EXCERPT_CHARS]}") from None
        except (ValueError, AttributeError, TypeError) as exc:
            log.debug("skipping malformed line from %s (%s): %.120s", url, exc, line)
            continue
        if parsed is None:
            continue
        valid += 1
        text, done = parsed
        if text:
            yield text
        if done:
            return
    if not valid:
        raise BadResponse(f"{url} sent no valid chat stream (is the provider setting right?)")
    log.debug("stream from %s ended without a done marker", url)


async def list_models(settings: LLMSettings) -> list[str]:
    """Model names the endpoint offers (Ollama /api/tags, OpenAI /v1/models). Raises LLMError."""
    url = models_url(settings)
    try:
        async with _client(settings) as client:
            response = await client.get(url)
    except httpx.HTTPError as exc:
        raise _transport_error(exc, url, settings) from None
    if response.status_code >= 400:
        if response.status_code == 404:
            raise BadResponse(f"{url} not found (HTTP 404); is llm.provider right?")
        raise _status_error(response.status_code, response.text, url, settings)
    return _model_names(response, url, settings)


def _model_names(response: httpx.Response, url: str, settings: LLMSettings) -> list[str]:
    """Names from `{"models": [{"name"}]}` (Ollama) or `{"data": [{"id"}]}` (OpenAI)."""
    field, key = ("models", "name") if settings.provider == "ollama" else ("data", "id")
    try:
        items = response.json()[field]
        return [str(item[key]) for item in items]
    except (ValueError, KeyError, TypeError) as exc:
        raise BadResponse(f"{url} sent an unexpected model list ({exc})") from None
