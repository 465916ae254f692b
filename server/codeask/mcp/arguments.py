"""The tools' arguments: names, types, bounds and descriptions (a contract: docs/mcp.md).

Each is a `msgspec.Struct`: toolkit.py renders its JSON Schema for `tools/list` and validates
a call's arguments with it. Bounds come from the one limits table (core/source/limits.py);
text beyond a bound, or not well-formed, is still checked by the tools themselves (`check_text`)
with a message naming it.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct

from codeask.core.records import CODE_KINDS, TEXT_KINDS
from codeask.core.source.limits import (
    DEFAULT_MAX_TOKENS,
    MAX_K,
    MAX_MAX_TOKENS,
    LimitError,
    check_length,
    max_chars,
)
from codeask.core.source.names import bad_text

KINDS = (*CODE_KINDS, *TEXT_KINDS)
MAX_LINE = 10_000_000

K = Annotated[int, Meta(ge=1, le=MAX_K, description="number of results (1-50)")]
MaxTokens = Annotated[
    int,
    Meta(
        ge=200,
        le=MAX_MAX_TOKENS,
        description="cap on the answer's size in tokens: snippets are shortened, then hits "
        "dropped, to fit",
    ),
]
Line = Annotated[int, Meta(ge=1, le=MAX_LINE)]


# Text arguments: `Annotated[str, <bound>, <description>]`; optional ones put the bound on the
# string inside the union (msgspec bounds a type, not a union) and the description outside.
Query = Annotated[
    str,
    Meta(max_length=max_chars("mcp", "query")),
    Meta(description="what to find: words, identifiers, a question or a pasted error"),
]
Glob = Annotated[
    Annotated[str, Meta(max_length=max_chars("mcp", "path"))] | None,
    Meta(description="only paths matching this glob (gitignore syntax), e.g. 'src/**/*.py'"),
]
Language = Annotated[
    Annotated[str, Meta(max_length=max_chars("mcp", "language"))] | None,
    Meta(description="only this language, e.g. 'python', 'go'"),
]
Kind = Annotated[
    Annotated[str, Meta(max_length=max_chars("mcp", "kind"))] | None,
    Meta(description=f"only this kind of chunk: {', '.join(KINDS)}"),
]


class SearchCode(Struct):
    query: Query
    k: K = 10
    path: Glob = None
    language: Language = None
    kind: Kind = None
    max_tokens: MaxTokens = DEFAULT_MAX_TOKENS


class FindRelated(Struct):
    path: Annotated[
        str,
        Meta(max_length=max_chars("mcp", "path")),
        Meta(
            description="a file inside the workspace (absolute, or relative to the first "
            "workspace folder)"
        ),
    ]
    line: Annotated[int, Meta(ge=1, le=MAX_LINE, description="1-based line in that file")]
    k: Annotated[int, Meta(ge=1, le=20, description="number of results (1-20)")] = 8


class GetContext(Struct):
    question: Annotated[
        str,
        Meta(max_length=max_chars("mcp", "question")),
        Meta(description="the question to gather code context for"),
    ]
    k: Annotated[
        Annotated[int, Meta(ge=1, le=MAX_K)] | None,
        Meta(description="blocks offered to the prompt budget (default: retrieve.k)"),
    ] = None


class SearchHistory(Struct):
    query: Annotated[
        str,
        Meta(max_length=max_chars("mcp", "query")),
        Meta(
            description="what to find in commit messages and diffs ('' with path+line: blame only)"
        ),
    ] = ""
    k: K = 10
    author: Annotated[
        Annotated[str, Meta(max_length=max_chars("mcp", "author"))] | None,
        Meta(description="author name or email contains this"),
    ] = None
    since: Annotated[
        Annotated[str, Meta(max_length=max_chars("mcp", "since"))] | None,
        Meta(description="on or after this date (YYYY, YYYY-MM or YYYY-MM-DD)"),
    ] = None
    until: Annotated[
        Annotated[str, Meta(max_length=max_chars("mcp", "until"))] | None,
        Meta(description="on or before this date (YYYY, YYYY-MM or YYYY-MM-DD)"),
    ] = None
    path: Annotated[
        Annotated[str, Meta(max_length=max_chars("mcp", "path"))] | None,
        Meta(
            description="a workspace file: only its hunks; with `line`, also who last changed "
            "that line"
        ),
    ] = None
    line: Annotated[Line | None, Meta(description="1-based line of `path` to blame")] = None
    max_tokens: MaxTokens = DEFAULT_MAX_TOKENS


class IndexStatus(Struct):
    pass


class ArgumentError(LimitError):
    """An argument over its limit, not well-formed or refused; the message names it."""


def check_text(name: str, value: str | None, *, required: bool = False) -> str | None:
    """`value` within the limit of `name` and well-formed; blank is an error when required."""
    if value is None:
        if required:
            raise ArgumentError(f"`{name}` is required")
        return None
    check_length("mcp", name, value)
    problem = bad_text(value)
    if problem:
        raise ArgumentError(f"`{name}` {problem}")
    if required and not value.strip():
        raise ArgumentError(f"`{name}` is empty")
    return value
