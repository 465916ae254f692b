"""The one table of request limits for every face (docs/protocol.md "Limits", docs/mcp.md).

Every string an editor or an agent can send (a custom request's field, a command argument, an
MCP tool argument) has a declared maximum here, checked before any work: a 10 MB glob or
question is an error naming the field and the limit, not a minute of CPU. The language server
and the MCP server read their bounds from this one table; where a face takes less than the
table, `NARROWER` says so, with the reason. Plain data and one check: importing it loads
this module only (the MCP wire reads its line limit from here before anything else loads).
"""

from __future__ import annotations

from typing import Literal

Face = Literal["lsp", "mcp"]

#: Field (as the client spells it) → maximum length in characters.
MAX_CHARS: dict[str, int] = {
    "query": 20_000,  # semanticSearch, codeask.search; search_code, search_history
    "question": 50_000,  # askCode; get_context
    "selection": 200_000,  # text of askCode's `range` in its document
    "uri": 4_096,  # askCode, codeask.related, codeask.reindex
    "path": 4_096,  # MCP: a workspace file, or search_code's glob (globs.py then caps it at 1,024)
    "pathGlob": 1_000,  # the language server's glob filter, matched by RE2 (linear in the path)
    "language": 64,
    "kind": 32,  # MCP's kind filter (the language server's is a Literal)
    "author": 256,
    "since": 64,  # the language server passes git's date words on ("2 weeks ago")
    "until": 64,
    "streamToken": 256,
    "symbolQuery": 1_000,  # workspace/symbol
}

#: (face, field) → (its smaller maximum, why): the differences between faces, as data.
NARROWER: dict[tuple[Face, str], tuple[int, str]] = {
    ("mcp", "since"): (10, "a date only: YYYY, YYYY-MM or YYYY-MM-DD (mcp/tools.py checks it)"),
    ("mcp", "until"): (10, "a date only: YYYY, YYYY-MM or YYYY-MM-DD (mcp/tools.py checks it)"),
}

#: Hover, related code and askCode's selection work on at most this much of a document
#: around the cursor (and never chunk or split more than this per request).
WINDOW_LINES = 200
WINDOW_CHARS = 256 * 1024
#: A file read from disk for a request (an unopened document, `find_related` on a file not
#: indexed yet) at most; only through the path guard (core/operations/paths.py).
MAX_DISK_READ = 2 * 1024 * 1024
#: Code lenses computed per document at most (each one is a related-code search).
MAX_LENSES = 200
#: Results per MCP call at most (`k`).
MAX_K = 50
#: An MCP tool answer's default and largest size, in tokens (characters / 4: results.tokens).
DEFAULT_MAX_TOKENS = 6_000
MAX_MAX_TOKENS = 30_000
#: One JSON-RPC line from an agent at most: a 1 MB query still reaches the tool (which names
#: the limit it breaks); a runaway line is refused before it is parsed.
MAX_LINE_BYTES = 8 * 1024 * 1024


class LimitError(ValueError):
    """A parameter over its limit or not well-formed text; the message names the field."""


def max_chars(face: Face, field: str) -> int:
    """The maximum length of `field` as `face` accepts it."""
    narrower = NARROWER.get((face, field))
    return narrower[0] if narrower else MAX_CHARS[field]


def check_length(face: Face, field: str, value: str) -> None:
    """`value` fits the limit of `field` on `face`, else LimitError naming both."""
    limit = max_chars(face, field)
    if len(value) > limit:
        raise LimitError(f"`{field}` is {len(value):,} characters; the maximum is {limit:,}")
