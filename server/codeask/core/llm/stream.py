"""From a provider's stream lines to the answer's text: written once for every provider.

A provider supplies only `parse` (one line → text delta and whether it was the last) and the
name of its end marker; here malformed lines are skipped, the answer is capped at
`llm.max_answer_chars`, and a stream that stops before its end marker is `StreamTruncated`, so
the caller keeps the partial answer marked incomplete. A stream that ends properly but says
its answer was cut (`cut_short`: the token cap, a content filter) is incomplete too.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

from codeask.config import LLMSettings
from codeask.core.llm.errors import (
    EXCERPT_CHARS,
    AnswerCutShort,
    AnswerTooLong,
    BadResponse,
    LLMError,
    StreamTruncated,
)
from codeask.core.llm.protocol import ChatUsage

log = logging.getLogger(__name__)

#: One line → (text delta, done), None for a line that carries no data; raises ValueError (or
#: AttributeError, TypeError) for a malformed line and LLMError for an error the server sent.
LineParser = Callable[[str, ChatUsage], tuple[str, bool] | None]


def int_or_none(value: Any) -> int | None:
    """A token count as reported, None when it is missing or not a whole number."""
    return value if isinstance(value, int) else None


async def answer_deltas(
    lines: AsyncGenerator[str, None],
    parse: LineParser,
    usage: ChatUsage,
    max_chars: int,
    url: str,
    end_marker: str,
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
    if not usage.finish_reason:  # a stream that said why it finished is complete
        raise _truncated(url, f"no {end_marker}", chars > 0)


def _parse(parse: LineParser, line: str, usage: ChatUsage, url: str) -> tuple[str, bool] | None:
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


def cut_short(usage: ChatUsage, settings: LLMSettings) -> AnswerCutShort | None:
    """Why a properly ended answer is still not whole, from the finish reason the server gave
    (OpenAI-compatible `finish_reason`, Ollama's `done_reason`); None for a whole answer.

    Not raised by the stream itself: every delta has arrived, and callers other than `ask`
    (tests, benchmarks) read the finish reason from `usage` as they please.
    """
    reason = usage.finish_reason
    if reason == "length":
        return AnswerCutShort(
            f'the model stopped at its token limit (finish reason "{reason}"): '
            f"raise llm.max_tokens (now {settings.max_tokens}) for longer answers"
        )
    if reason == "content_filter":
        return AnswerCutShort(
            f'the server\'s content filter stopped the answer (finish reason "{reason}")'
        )
    return None
