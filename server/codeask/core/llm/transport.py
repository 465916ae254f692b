"""HTTP for every provider: the client, the API key, and one clear line per failure.

The API key is read from the environment variable named by `settings.api_key_env` at request
time: never logged, never kept, never put into an error message. Redirects are refused, not
followed: the Authorization header must not travel to another host.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from codeask.config import LLMSettings
from codeask.core.llm.bounded import DECODE_PIECE, Deadline, decoded_pieces
from codeask.core.llm.errors import (
    EXCERPT_CHARS,
    AuthFailed,
    BadResponse,
    ContextExceeded,
    EndpointTimeout,
    EndpointUnreachable,
    LLMError,
    ModelNotFound,
    reason,
)
from codeask.core.llm.urls import is_loopback

if TYPE_CHECKING:  # imported by the calls that send: the prompt alone needs neither (issue 29)
    import ssl

    import httpx

#: Bytes of an error body read at most.
ERROR_BODY_BYTES = 4096
#: An error body about the context window (llama.cpp `exceed_context_size_error`, OpenAI and
#: vLLM "maximum context length", "context length exceeded") ...
_CONTEXT_WORDS = re.compile(r"\bn_ctx\b|context[ _-]?(size|length|window)|maximum context", re.I)
#: ... that says the prompt went past it (both must match: a 400 is not blamed on the window
#: because it names it).
_OVER_WORDS = re.compile(r"exceed|too (long|large|many)|maximum|greater than|more than", re.I)
#: The window's size in the text: "context size (2048 tokens)", "context length is 4096".
_WINDOW_SIZE = re.compile(r"context[ _-]?(?:size|length|window)(?: is| of)?\s*\(?(\d{1,9})\b", re.I)


def api_key(settings: LLMSettings) -> str:
    """The key from the named environment variable, '' if none (read per request, never kept)."""
    return os.environ.get(settings.api_key_env, "").strip() if settings.api_key_env else ""


def _headers(settings: LLMSettings) -> dict[str, str]:
    """JSON headers, plus the bearer token when an API key is configured."""
    headers = {"Accept": "application/json, text/event-stream, application/x-ndjson"}
    key = api_key(settings)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


_ssl_contexts: dict[tuple[bool, str, str], ssl.SSLContext] = {}
_ssl_lock = threading.Lock()


def ssl_context(trust_env: bool) -> ssl.SSLContext:
    """httpx's own verifying TLS context (certifi, or SSL_CERT_FILE / SSL_CERT_DIR when the
    environment is trusted), made once per process and CA choice: making one loads the CA
    bundle, ~15 ms idle and 100+ ms on a loaded machine, for every request otherwise."""
    key = (
        trust_env,
        os.environ.get("SSL_CERT_FILE", "") if trust_env else "",
        os.environ.get("SSL_CERT_DIR", "") if trust_env else "",
    )
    import httpx

    with _ssl_lock:
        made = _ssl_contexts.get(key)
        if made is None:
            made = _ssl_contexts[key] = httpx.create_ssl_context(trust_env=trust_env)
        return made


def client(settings: LLMSettings) -> httpx.AsyncClient:
    """A short-lived client: connect/read timeouts from settings, proxies only for remote hosts,
    certificates verified (one shared context: `ssl_context`)."""
    import httpx

    trust_env = not is_loopback(settings.base_url)
    timeout = httpx.Timeout(
        connect=settings.connect_timeout,
        read=settings.read_timeout,
        write=settings.read_timeout,
        pool=settings.connect_timeout,
    )
    return httpx.AsyncClient(
        timeout=timeout,
        headers=_headers(settings),
        trust_env=trust_env,
        verify=ssl_context(trust_env),
        follow_redirects=False,  # a redirect must not carry the Authorization header elsewhere
    )


@contextlib.asynccontextmanager
async def response_to(
    settings: LLMSettings,
    method: str,
    url: str,
    deadline: Deadline,
    *,
    body: dict[str, Any] | None = None,
    start_hint: str = "",
) -> AsyncIterator[httpx.Response]:
    """The streamed response to one request, closed on exit; network failures as LLMError.

    Sending waits under `deadline`; a network failure while the block reads the body becomes
    an LLMError too (`start_hint` says how to start a local server that refused us).
    """
    import httpx

    try:
        async with client(settings) as http:
            request = http.build_request(method, url, json=body)
            async with deadline.guard():
                response = await http.send(request, stream=True)
            try:
                yield response
            finally:
                await response.aclose()
    except httpx.HTTPError as exc:
        raise transport_error(exc, url, settings, start_hint) from None


def transport_error(
    exc: httpx.HTTPError, url: str, settings: LLMSettings, start_hint: str = ""
) -> LLMError:
    """One clear line for a network-level failure; `start_hint` says how to start the server."""
    import httpx

    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return EndpointUnreachable(
            f"no connection to {url} within {settings.connect_timeout:g} s; is the server up?"
        )
    if isinstance(exc, httpx.TimeoutException):
        return EndpointTimeout(f"no data from {url} for {settings.read_timeout:g} s")
    if isinstance(exc, httpx.ConnectError):
        return EndpointUnreachable(f"cannot connect to {url}: {reason(exc)}{start_hint}")
    if isinstance(exc, httpx.RemoteProtocolError):
        return BadResponse(f"{url} closed the connection mid-answer ({reason(exc)})")
    return BadResponse(f"request to {url} failed: {reason(exc)}")


async def check_status(
    response: httpx.Response, url: str, settings: LLMSettings, deadline: Deadline, list_hint: str
) -> None:
    """A clear LLMError for a redirect or an HTTP error status; nothing for a success.

    `list_hint` tells how to list the endpoint's models, for a model it does not know.
    """
    status = response.status_code
    if 300 <= status < 400:
        raise _redirect_error(response, url, settings)
    if status >= 400:
        body = await _error_body(response, deadline)
        raise _status_error(status, body, url, settings, list_hint)


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
    key = api_key(settings)
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


def _status_error(
    status: int, body: str, url: str, settings: LLMSettings, list_hint: str
) -> LLMError:
    """One clear line for an HTTP error status."""
    excerpt = _excerpt(body, settings)
    if status in (401, 403):
        return AuthFailed(_auth_message(status, url, settings))
    if status in (400, 413, 422) and _CONTEXT_WORDS.search(body) and _OVER_WORDS.search(body):
        return ContextExceeded(_context_message(status, body, excerpt, url, settings))
    low = excerpt.lower()
    model_missing = "model" in low and any(
        w in low for w in ("not found", "does not exist", "not exist", "unknown", "no such")
    )
    if status == 404 or (status in (400, 422) and model_missing):
        said = f": {excerpt[:80]}" if body.strip() else ""
        return ModelNotFound(
            f"model '{settings.model}' not found at {url} (HTTP {status}{said}); {list_hint}"
        )
    return BadResponse(f"{url} answered HTTP {status}: {excerpt}")


def _context_message(status: int, body: str, excerpt: str, url: str, settings: LLMSettings) -> str:
    """The server refused the prompt as too long for its window: which setting to change,
    and to what when the server said its size (llama.cpp's `n_ctx`, or in the text)."""
    said = _window_said(body)
    now = settings.context_tokens
    if said is None:
        fix = f"set llm.context_tokens to the server's context size (now {now})"
    elif said < now:
        fix = f"set llm.context_tokens to {said} (now {now})"
    else:  # the budget already fit its window: our estimate fell short of its tokenizer
        fix = f"lower llm.context_tokens below {now} (the server holds {said})"
    return f"{url} answered HTTP {status}: {excerpt}; the prompt is larger than its window: {fix}"


def _window_said(body: str) -> int | None:
    """The context size an error body reports, if it does."""
    try:
        data = json.loads(body)
        err = data.get("error", data) if isinstance(data, dict) else None
        n_ctx = err.get("n_ctx") if isinstance(err, dict) else None
    except ValueError:
        n_ctx = None
    if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0:
        return n_ctx
    found = _WINDOW_SIZE.search(body)
    return int(found.group(1)) if found else None


def _auth_message(status: int, url: str, settings: LLMSettings) -> str:
    """Which environment variable to set; never the key itself."""
    env = settings.api_key_env
    if not env:
        return (
            f"{url} requires an API key (HTTP {status}): put it in an environment variable "
            "and set llm.api_key_env to that variable's name"
        )
    if not api_key(settings):
        return f"{url} requires an API key (HTTP {status}): set the environment variable {env}"
    return f"{url} rejected the API key from ${env} (HTTP {status}); check the value of {env}"
