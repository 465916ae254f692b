"""`LineStreamProvider`: the whole `ChatProvider` for HTTP APIs that stream one event a line.

A provider module subclasses it and states only what its API does differently: the paths, the
request body, how one stream line reads, the shape of the model list and two hints for error
messages. Bounds, decoding, redirects, errors and the incomplete marking live in the shared
modules this one calls, written once.

Cancellation: the caller cancels the task iterating `stream_chat`; the `async with` blocks close
the HTTP response and the client, so the server sees the disconnect at once. Callers that stop
iterating early without cancelling should wrap the generator in `contextlib.aclosing`.
"""

from __future__ import annotations

import contextlib
import json
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator
from typing import Any

from codeask.config import LLMSettings
from codeask.core.llm.bounded import Deadline, bounded_lines, read_body
from codeask.core.llm.errors import BadResponse, LLMError
from codeask.core.llm.protocol import ChatUsage, Health, Message
from codeask.core.llm.stream import answer_deltas
from codeask.core.llm.transport import check_status, response_to
from codeask.core.llm.urls import base_url

#: Bytes of a model list read at most (a hosted service's list of hundreds of models is ~1 MB).
MODEL_LIST_BYTES = 8 * 1024 * 1024
#: Bytes of a context-window reply read at most (llama.cpp's /props is ~3 KiB with its chat
#: template; Ollama's /api/show, with the license and the tensor list of a large model, some
#: hundreds of KiB).
WINDOW_BYTES = 4 * 1024 * 1024
#: Seconds the context-window request may take in all (capped by connect + read timeout): it
#: runs before every first question to an endpoint, and without it the setting is used.
WINDOW_SECONDS = 2.0
#: Replies that mean "this server has no such request", not "try again later".
NOT_OFFERED = (404, 405, 501)


class LineStreamProvider(ABC):
    """Shared implementation of `ChatProvider`; subclasses fill in the class attributes and the
    abstract methods (their wire format), nothing else."""

    name: str
    default_base_url: str
    default_model: str
    chat_path: str
    """Appended to the base URL for a chat request (`/api/chat`)."""
    models_path: str
    """Appended to the base URL to list the models (`/api/tags`)."""
    end_marker: str
    """The stream's last event as people know it (`[DONE]`), named when a stream lacks it."""

    @abstractmethod
    def request_body(self, settings: LLMSettings, messages: list[Message]) -> dict[str, Any]:
        """The JSON of a streaming chat request."""

    @abstractmethod
    def parse_line(self, line: str, usage: ChatUsage) -> tuple[str, bool] | None:
        """(text delta, done) from one stream line, None for a line without data; fills
        `usage` from the lines that carry it. ValueError for a malformed line (skipped),
        LLMError for an error the server sent mid-stream."""

    @abstractmethod
    def model_names(self, data: Any) -> list[str]:
        """The names in a parsed model-list body; KeyError or TypeError when it is not one."""

    @abstractmethod
    def list_hint(self, settings: LLMSettings) -> str:
        """How the user lists the models the endpoint knows (ends a 'model not found')."""

    def start_hint(self, url: str) -> str:
        """How to start the server at `url` when it refuses the connection ('' by default)."""
        return ""

    def window_request(self, settings: LLMSettings) -> tuple[str, str, Any] | None:
        """(method, URL, JSON body or None) of the request whose reply tells the server's
        context window for `llm.model`; None (the default) when the API has none."""
        return None

    def window_in(self, data: Any) -> Any:
        """The context size in the parsed reply to `window_request` (KeyError, TypeError or
        ValueError when the reply does not say)."""
        raise KeyError("no context size")

    def chat_url(self, settings: LLMSettings) -> str:
        """The base URL (with or without a pasted API suffix) plus `chat_path`."""
        return base_url(settings) + self.chat_path

    def models_url(self, settings: LLMSettings) -> str:
        """The base URL plus `models_path`."""
        return base_url(settings) + self.models_path

    async def stream_chat(
        self, settings: LLMSettings, messages: list[Message], *, usage: ChatUsage | None = None
    ) -> AsyncGenerator[str, None]:
        """Yield the answer's text deltas as they arrive; fill `usage` if given. Raises LLMError.

        Bounded: `llm.total_timeout` for the whole call, `llm.max_line_bytes` per line,
        `llm.max_response_bytes` per body, `llm.max_answer_chars` per answer.
        """
        url = self.chat_url(settings)
        report = usage if usage is not None else ChatUsage()
        deadline = Deadline.after(
            settings.total_timeout,
            f"no answer from {url} within llm.total_timeout={settings.total_timeout:g} s; stopped",
        )
        body = self.request_body(settings, messages)
        async with response_to(
            settings, "POST", url, deadline, body=body, start_hint=self.start_hint(url)
        ) as response:
            await check_status(response, url, settings, deadline, self.list_hint(settings))
            lines = bounded_lines(
                response, settings.max_line_bytes, settings.max_response_bytes, deadline
            )
            deltas = answer_deltas(
                lines, self.parse_line, report, settings.max_answer_chars, url, self.end_marker
            )
            async with contextlib.aclosing(deltas):
                async for delta in deltas:
                    yield delta

    async def list_models(self, settings: LLMSettings) -> list[str]:
        """Model names the endpoint offers. Raises LLMError.

        Bounded like an answer: connect + read timeout for the whole call, MODEL_LIST_BYTES.
        """
        url = self.models_url(settings)
        seconds = settings.connect_timeout + settings.read_timeout
        deadline = Deadline.after(
            seconds, f"no model list from {url} within {seconds:g} s; stopped"
        )
        async with response_to(
            settings, "GET", url, deadline, start_hint=self.start_hint(url)
        ) as response:
            if response.status_code == 404:
                raise BadResponse(f"{url} not found (HTTP 404); is llm.provider right?")
            await check_status(response, url, settings, deadline, self.list_hint(settings))
            body = await read_body(response, deadline, MODEL_LIST_BYTES)
        try:
            return self.model_names(json.loads(body))
        except (ValueError, KeyError, TypeError) as exc:
            raise BadResponse(f"{url} sent an unexpected model list ({exc})") from None

    async def context_window(self, settings: LLMSettings) -> int | None:
        """The context window the server reports for `llm.model`; None when it has no such
        request or its reply does not say. Raises LLMError when it could not be asked (down,
        slow, an HTTP error): the caller may ask again later.

        Bounded like every call: the same client (timeouts, no redirects, the API key only to
        this host), WINDOW_SECONDS in all, WINDOW_BYTES of reply.
        """
        request = self.window_request(settings)
        if request is None:
            return None
        method, url, body = request
        seconds = min(WINDOW_SECONDS, settings.connect_timeout + settings.read_timeout)
        deadline = Deadline.after(seconds, f"no context size from {url} within {seconds:g} s")
        async with response_to(settings, method, url, deadline, body=body) as response:
            if response.status_code in NOT_OFFERED:
                return None
            await check_status(response, url, settings, deadline, self.list_hint(settings))
            raw = await read_body(response, deadline, WINDOW_BYTES)
        try:
            size = self.window_in(json.loads(raw))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        return size if isinstance(size, int) and not isinstance(size, bool) and size > 0 else None

    async def probe(self, settings: LLMSettings) -> Health:
        """The model list as a health check: reachable, and is `llm.model` among the models?"""
        url = self.models_url(settings)
        try:
            models = await self.list_models(settings)
        except LLMError as exc:
            return Health(url, ok=False, detail=exc.message)
        known = "among them" if settings.model in models else "not among them"
        detail = f"{len(models)} model(s); '{settings.model}' {known}"
        return Health(url, ok=True, detail=detail, models=tuple(models))
