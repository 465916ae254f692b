"""Bounds on what an agent may send and receive, checked before any work.

A tool's arguments come from a model that may have read hostile text (a pasted log, a web
page, a file in the repository): every string has a declared maximum here, and must be
well-formed text (no NUL, no unpaired surrogate: they break tokenizers, tree-sitter and UTF-8
further down). A breach is a tool error that names the argument and the limit, never a crash.
"""

from __future__ import annotations

from codeask.core.source.names import bad_text as bad_text

#: Argument → maximum length in characters (as the language server's limits, lsp/limits.py).
MAX_CHARS: dict[str, int] = {
    "query": 20_000,
    "question": 50_000,
    "path": 4_096,
    "language": 64,
    "kind": 32,
    "author": 256,
    "since": 10,
    "until": 10,
}
#: Results per call at most (`k`).
MAX_K = 50
#: A tool answer's default and largest size, in tokens (characters / 4: results.tokens).
DEFAULT_MAX_TOKENS = 6_000
MAX_MAX_TOKENS = 30_000
#: A file read from disk for `find_related` (a file not indexed yet) at most.
MAX_DISK_READ = 2 * 1024 * 1024
#: One JSON-RPC line from the agent at most: a 1 MB query still reaches the tool (which names
#: the limit it breaks); a runaway line is refused before it is parsed.
MAX_LINE_BYTES = 8 * 1024 * 1024


class ArgumentError(ValueError):
    """An argument over its limit or not well-formed text; the message names it."""


def check_text(name: str, value: str | None, *, required: bool = False) -> str | None:
    """`value` within the limit of `name` and well-formed; blank is an error when required."""
    if value is None:
        if required:
            raise ArgumentError(f"`{name}` is required")
        return None
    limit = MAX_CHARS[name]
    if len(value) > limit:
        raise ArgumentError(f"`{name}` is {len(value):,} characters; the maximum is {limit:,}")
    problem = bad_text(value)
    if problem:
        raise ArgumentError(f"`{name}` {problem}")
    if required and not value.strip():
        raise ArgumentError(f"`{name}` is empty")
    return value
