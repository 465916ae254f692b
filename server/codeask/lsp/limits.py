"""Size limits of request parameters, checked before any work (docs/protocol.md, "Limits").

Every string a client can send into a custom request, command or search filter has a declared
maximum here; the message types (messages.py) and the handlers take their bounds from this
one table, so a 10 MB glob or question is a -32602 naming the field and the limit instead of
a minute of CPU. Text must also be well-formed: a NUL or an unpaired surrogate is rejected
(they break tokenizers, tree-sitter and UTF-8 encoding further down).
"""

from __future__ import annotations

from typing import Any

from codeask.core.source.names import bad_text as bad_text

#: Field (as the client spells it) → maximum length in characters.
MAX_CHARS: dict[str, int] = {
    "query": 20_000,  # workspace/semanticSearch, codeask.search
    "question": 50_000,  # workspace/askCode
    "selection": 200_000,  # text of askCode's `range` in its document
    "uri": 4_096,  # askCode, codeask.related, codeask.reindex
    "pathGlob": 1_000,  # matched by RE2 (core/source/globs.py): linear in the path
    "language": 64,
    "author": 256,
    "since": 64,
    "until": 64,
    "streamToken": 256,
    "symbolQuery": 1_000,  # workspace/symbol
}

#: Hover, related code and askCode's selection work on at most this much of a document
#: around the cursor (and never chunk or split more than this per request).
WINDOW_LINES = 200
WINDOW_CHARS = 256 * 1024
#: An unopened document is read from disk (inside a workspace folder only) up to this size.
MAX_DISK_READ = 2 * 1024 * 1024
#: Code lenses computed per document at most (each one is a related-code search).
MAX_LENSES = 200


class LimitError(ValueError):
    """A parameter over its limit or not well-formed text; the message names the field."""


def check_length(field: str, value: str) -> None:
    """`value` fits the declared limit of `field`."""
    limit = MAX_CHARS[field]
    if len(value) > limit:
        raise LimitError(f"`{field}` is {len(value)} characters; the maximum is {limit}")


def check_text(value: Any, where: str = "params") -> None:
    """Every string inside decoded JSON `value` is well-formed text (called after length checks)."""
    if isinstance(value, str):
        problem = bad_text(value)
        if problem:
            raise LimitError(f"`{where}` {problem}")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_text(item, f"{where}.{key}" if where != "params" else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_text(item, f"{where}[{index}]")
