"""Chat with the model that answers questions, through the provider `llm.provider` names.

A leaf of the engine: imports nothing of ours except `config`. Callers use the functions below
(or `get_provider(settings)` for the `ChatProvider` itself); each provider is one module
(`ollama`, `openai`) registered by name in `registry`, and what every provider shares is written
once: bounded reading and decoding (`bounded`), HTTP, redirects and error messages
(`transport`), the answer cap and the incomplete marking (`stream`), the server's own context
window (`window`). docs/providers.md says how to add one.

Every failure becomes an `LLMError` whose `.message` is one line the editor can show as is.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import msgspec

from codeask.config import LLMSettings
from codeask.core.llm import window
from codeask.core.llm.base import MODEL_LIST_BYTES, LineStreamProvider
from codeask.core.llm.bounded import (
    DECODE_PIECE,
    Deadline,
    bounded_lines,
    decoded_pieces,
    read_body_sync,
)
from codeask.core.llm.bounded import _Inflater as _Inflater  # the gzip-bomb unit tests use it
from codeask.core.llm.errors import (
    EXCERPT_CHARS,
    AnswerCutShort,
    AnswerTooLong,
    AuthFailed,
    BadResponse,
    ContextExceeded,
    DeadlineExceeded,
    EndpointTimeout,
    EndpointUnreachable,
    LLMError,
    ModelNotFound,
    ResponseTooLarge,
    StreamTruncated,
)
from codeask.core.llm.protocol import ChatProvider, ChatUsage, Health, Message
from codeask.core.llm.registry import choices as provider_choices
from codeask.core.llm.registry import get as _registered
from codeask.core.llm.registry import names as provider_names
from codeask.core.llm.stream import cut_short
from codeask.core.llm.transport import ERROR_BODY_BYTES
from codeask.core.llm.urls import is_loopback

__all__ = [
    "DECODE_PIECE",
    "ERROR_BODY_BYTES",
    "EXCERPT_CHARS",
    "MODEL_LIST_BYTES",
    "AnswerCutShort",
    "AnswerTooLong",
    "AuthFailed",
    "BadResponse",
    "ChatProvider",
    "ChatUsage",
    "ContextExceeded",
    "Deadline",
    "DeadlineExceeded",
    "EndpointTimeout",
    "EndpointUnreachable",
    "Health",
    "LLMError",
    "LineStreamProvider",
    "Message",
    "ModelNotFound",
    "ResponseTooLarge",
    "StreamTruncated",
    "bounded_lines",
    "chat_url",
    "cut_short",
    "decoded_pieces",
    "fit_context",
    "get_provider",
    "is_loopback",
    "list_models",
    "models_url",
    "probe",
    "provider_choices",
    "provider_names",
    "read_body_sync",
    "resolve",
    "server_context_tokens",
    "stream_chat",
    "transport",
    "urls",
    "window",
]


def get_provider(settings: LLMSettings) -> ChatProvider:
    """The provider `llm.provider` names."""
    return _registered(settings.provider)


def resolve(settings: LLMSettings) -> LLMSettings:
    """The settings with an empty `base_url` / `model` filled from the provider's defaults
    (they live in its module only); unchanged for an unknown provider (its calls fail later)."""
    if settings.base_url.strip() and settings.model.strip():
        return settings
    try:
        provider = get_provider(settings)
    except LLMError:
        return settings
    return msgspec.structs.replace(
        settings,
        base_url=settings.base_url.strip() or provider.default_base_url,
        model=settings.model.strip() or provider.default_model,
    )


def chat_url(settings: LLMSettings) -> str:
    """Where the configured provider sends a chat request."""
    return get_provider(settings).chat_url(resolve(settings))


def models_url(settings: LLMSettings) -> str:
    """Where the configured provider lists its models."""
    return get_provider(settings).models_url(resolve(settings))


def stream_chat(
    settings: LLMSettings, messages: list[Message], *, usage: ChatUsage | None = None
) -> AsyncGenerator[str, None]:
    """The answer's text deltas as they arrive, from the configured provider. Raises LLMError.

    An async generator: cancel the task iterating it, or wrap it in `contextlib.aclosing`, to
    close the HTTP stream promptly.
    """
    return get_provider(settings).stream_chat(resolve(settings), messages, usage=usage)


async def list_models(settings: LLMSettings) -> list[str]:
    """Model names the configured endpoint offers. Raises LLMError."""
    return await get_provider(settings).list_models(resolve(settings))


async def probe(settings: LLMSettings) -> Health:
    """Whether the configured endpoint answers and knows `llm.model`."""
    return await get_provider(settings).probe(resolve(settings))


async def server_context_tokens(settings: LLMSettings) -> int | None:
    """The context window the configured endpoint reports for `llm.model` (None when it does
    not say or cannot be asked); asked once per endpoint and model (`window`)."""
    return await window.server_tokens(get_provider(settings), resolve(settings))


async def fit_context(settings: LLMSettings) -> LLMSettings:
    """The resolved settings, `context_tokens` lowered to the server's window when smaller."""
    return await window.fit(get_provider(settings), resolve(settings))
