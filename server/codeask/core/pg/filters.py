"""Retrieval filters (`retrieve.Filters`) for a query over published chunks: what SQL decides
exactly becomes conditions; what it cannot (a gitignore-style path glob, author and dates of
history) SQL narrows conservatively and Python checks on each row (core/pg/reader.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from codeask.core.records import HISTORY_KINDS, Chunk

if TYPE_CHECKING:
    import pathspec

    from codeask.core.retrieve import Filters

_GLOB_SPECIAL = re.compile(r"[*?\[\]\\!]")

#: The exact check of one row: (path, language, kind, meta) → kept.
RowCheck = Callable[[str, str, str, dict[str, str]], bool]


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def glob_prefilter(glob: str) -> str | None:
    """A LIKE pattern every path matching the gitignore-style `glob` also matches (None: no
    safe narrowing, e.g. a negation or a glob without literal text)."""
    if not glob or glob.startswith("!") or "\\" in glob:
        return None
    runs = [r.strip("/") for r in _GLOB_SPECIAL.split(glob)]
    longest = max(runs, key=len, default="")
    return f"%{_like_escape(longest)}%" if longest else None


def exact_in_sql(filters: Filters | None) -> bool:
    """Whether SQL decides `filters` entirely (no row needs the Python check)."""
    return filters is None or not (
        filters.path_glob or filters.author or filters.since or filters.until
    )


def sql_conditions(filters: Filters | None) -> tuple[list[str], list[Any]]:
    """SQL conditions and their parameters for what SQL can decide exactly (and the path
    glob's conservative LIKE)."""
    where: list[str] = []
    args: list[Any] = []
    if filters is None:  # the local search's default: Filters() = code only
        where.append("kind <> ALL(%s)")
        args.append(list(HISTORY_KINDS))
        return where, args
    if filters.scope == "code":
        where.append("kind <> ALL(%s)")
        args.append(list(HISTORY_KINDS))
    elif filters.scope == "history":
        where.append("kind = ANY(%s)")
        args.append(list(HISTORY_KINDS))
    if filters.language:
        where.append("language = %s")
        args.append(filters.language.lower())
    if filters.kind:
        where.append("kind = %s")
        args.append(filters.kind)
    like = glob_prefilter(filters.path_glob) if filters.path_glob else None
    if like:
        where.append("path ILIKE %s")
        args.append(like)
    if filters.author or filters.since or filters.until:
        where.append("kind = ANY(%s)")
        args.append(list(HISTORY_KINDS))
    return where, args


def row_check(filters: Filters | None) -> RowCheck:
    """The exact check of what SQL only narrowed (None-cheap when nothing is left)."""
    if filters is None or exact_in_sql(filters):
        return lambda path, language, kind, meta: True
    import pathspec

    glob: pathspec.PathSpec | None = (
        pathspec.GitIgnoreSpec.from_lines([filters.path_glob]) if filters.path_glob else None
    )
    exact = filters

    def check(path: str, language: str, kind: str, meta: dict[str, str]) -> bool:
        probe = Chunk(path=path, language=language, kind=kind, start_line=0, end_line=0, text="")
        probe.meta = meta
        return exact.accepts(probe, glob)

    return check
