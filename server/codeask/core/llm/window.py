"""The context window the server really holds, so the prompt is budgeted to fit it.

`llm.context_tokens` says how large a prompt may be; a server started with a smaller window
(llama.cpp `-c 2048`, a model made for 4k) refuses the larger prompt with HTTP 400. When the
server says its window (llama.cpp's GET /props, Ollama's POST /api/show), the budget is the
smaller of the two. The request goes through the provider's bounded transport, at most
`WINDOW_SECONDS`, and is made once per endpoint and model for the life of the process; when it
fails, the setting is used and the server is asked again after `RETRY_AFTER` seconds.
"""

from __future__ import annotations

import logging
import math
import time

import msgspec

from codeask.config import LLMSettings
from codeask.core.llm.base import WINDOW_SECONDS
from codeask.core.llm.errors import LLMError
from codeask.core.llm.protocol import ChatProvider
from codeask.core.llm.urls import base_url

log = logging.getLogger(__name__)

#: Re-exported for callers that bound or measure the request.
PROBE_SECONDS = WINDOW_SECONDS
#: Seconds before a server that could not be asked is asked again (a server that answered,
#: with a size or without one, is not asked again).
RETRY_AFTER = 60.0

#: (provider, endpoint, model) → (the window, or None when the server does not say; until when
#: the answer holds, in `time.monotonic()` seconds).
_known: dict[tuple[str, str, str], tuple[int | None, float]] = {}


async def server_tokens(provider: ChatProvider, settings: LLMSettings) -> int | None:
    """The server's context window for `llm.model` (None when it does not say or cannot be
    asked), asked at most once per endpoint and model while the answer holds."""
    key = (provider.name, base_url(settings), settings.model)
    known = _known.get(key)
    if known is not None and time.monotonic() < known[1]:
        return known[0]
    try:
        size = await provider.context_window(settings)
    except LLMError as exc:
        log.info("context window of %s unknown (%s); using llm.context_tokens", key[1], exc)
        _known[key] = (None, time.monotonic() + RETRY_AFTER)
        return None
    _known[key] = (size, math.inf)
    if size is not None:
        log.info("%s holds %d tokens of context for %s", key[1], size, key[2])
    return size


async def fit(provider: ChatProvider, settings: LLMSettings) -> LLMSettings:
    """`settings` with `context_tokens` lowered to the server's window when that is smaller."""
    size = await server_tokens(provider, settings)
    if size is None or size >= settings.context_tokens:
        return settings
    return msgspec.structs.replace(settings, context_tokens=size)
