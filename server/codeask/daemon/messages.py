"""The protocol's messages as typed structs (msgspec validates what the daemon reads).

A request names an operation (`search`, `status`, `ask` with `--prompt-only`, `index`), a session
(`mcp`, `serve`) or a daemon command (`ping`, `stop`); an operation's `args` convert to its
call struct below, and its reply carries the operation's answer as data (core/operations'
result structs), which the client renders as it renders an answer of its own process. The
client builds and reads the same objects as plain JSON (`protocol`), to stay light."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Status = Literal["ok", "user_error", "refused", "failed"]


class Request(msgspec.Struct, kw_only=True):
    protocol: int
    version: str
    command: str
    """`search`, `status`, `ask`, `index` (operations), `mcp`, `serve` (sessions), `ping` or
    `stop`."""
    args: dict[str, Any] = {}
    """The operation's arguments (its call struct's fields; others are ignored: the CLI
    sends its parsed arguments as they are)."""
    cwd: str = ""
    """The client's working directory: relative folders are read from it (the daemon never
    changes its own)."""
    environment: dict[str, str] = {}
    """`protocol.environment()` of the client."""


class _Filtered(msgspec.Struct, kw_only=True):
    """The folders, the number of hits and the filters `search` and `ask` share
    (cli/parser.py's names)."""

    root: list[str] | None = None
    k: int | None = None
    scope: Literal["code", "history", "all"] = "code"
    language: str | None = None
    path_glob: str | None = None
    kind: str | None = None
    author: str | None = None
    since: str | None = None
    until: str | None = None


class SearchCall(_Filtered, kw_only=True):
    """`codeask search`'s arguments."""

    query: str
    mode: Literal["hybrid", "lexical", "dense"] = "hybrid"


class AskCall(_Filtered, kw_only=True):
    """`codeask ask --prompt-only`'s arguments (the daemon calls no model)."""

    question: str
    prompt_only: Literal[True]


class StatusCall(msgspec.Struct, kw_only=True):
    """`codeask status`'s arguments."""

    root: list[str] | None = None


class IndexCall(msgspec.Struct, kw_only=True):
    """`codeask index`'s arguments (publishing and `--allow-broad-root` run in the client)."""

    paths: list[str] | None = None
    rebuild: bool = False
    full: bool = False
    lexical_only: bool = False
    verbose: int = 0


class Reply(msgspec.Struct, kw_only=True):
    protocol: int
    version: str
    status: Status
    answer: Any = None
    """An operation's answer (ok): its result struct as data."""
    notes: str = ""
    """Lines for the client's stderr before the answer or the user error (settings warnings,
    a folder that is not a git repository), as its own process would have written them."""
    code: int = 0
    """A user error's exit code."""
    message: str = ""
    """Why a request was refused or failed, or the user error's line."""
    info: dict[str, Any] = {}
    """`ping`: pid, uptime, requests served, folders held."""
