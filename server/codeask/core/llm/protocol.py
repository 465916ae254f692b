"""What codeask needs from a chat API: the `ChatProvider` protocol and the values it returns.

`ask`, the CLI and the language server talk to a provider only through this protocol (via the
registry), so adding an API never touches them: see docs/providers.md.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Protocol

from codeask.config import LLMSettings

#: One chat message: {"role": "system" | "user" | "assistant", "content": text}.
Message = dict[str, str]


@dataclass
class ChatUsage:
    """What the server reported about one answer (None when it did not say)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = ""
    """`stop`, `length` (hit max_tokens), ... as reported; '' if unknown."""


@dataclass(frozen=True)
class Health:
    """What a health probe found, for a status line: does the endpoint answer, and with what."""

    url: str
    """The address probed (the provider's model list)."""
    ok: bool
    """The endpoint answered with a model list."""
    detail: str
    """One line: how many models and whether `llm.model` is among them, or the failure."""
    models: tuple[str, ...] = ()


class ChatProvider(Protocol):
    """One chat API (Ollama's, OpenAI's, ...), registered under `name` in `registry`.

    Failures are `LLMError`s with a one-line message; every call is bounded by the `llm.*`
    limits. `LineStreamProvider` implements all of it for HTTP APIs that stream one event a
    line, so a provider module usually fills in only its wire format.
    """

    name: str
    """The `llm.provider` value that selects this provider."""
    default_base_url: str
    """Where the API listens unless `llm.base_url` says otherwise."""
    default_model: str
    """The model asked for unless `llm.model` says otherwise."""

    def chat_url(self, settings: LLMSettings) -> str:
        """The URL a chat request goes to."""
        ...

    def models_url(self, settings: LLMSettings) -> str:
        """The URL that lists the models (also what a health check probes)."""
        ...

    async def list_models(self, settings: LLMSettings) -> list[str]:
        """The model names the endpoint offers."""
        ...

    async def probe(self, settings: LLMSettings) -> Health:
        """Whether the endpoint answers and knows `llm.model`; never raises LLMError."""
        ...

    async def context_window(self, settings: LLMSettings) -> int | None:
        """The context window (tokens) the server reports for `llm.model`; None when it does
        not say. LLMError when it could not be asked (`window` then keeps the setting)."""
        ...

    def stream_chat(
        self, settings: LLMSettings, messages: list[Message], *, usage: ChatUsage | None = None
    ) -> AsyncGenerator[str, None]:
        """The answer's text deltas as they arrive; fills `usage` if given."""
        ...
