"""A search's answer as plain data: what `codeask search` shows, computed once, whether the
search ran in this process or in the per-user daemon (which sends it over its socket and the
client renders it: codeask/search_view.py).

The fields are those of `codeask search --json` (in its order), plus the one line on tiers the
human output ends with and the short previews: nothing else of a hit travels.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import msgspec

from codeask.core.indexer import FolderIndex
from codeask.core.operations.search import (
    Filters,
    Hit,
    Mode,
    search_folders,
    tier_counts,
    tiers_line,
)

__all__ = ["FoundHit", "SearchAnswer", "TierDone", "answer_search"]


class FoundHit(msgspec.Struct, kw_only=True):
    """One hit as `--json` shows it."""

    path: str
    relative_path: str
    start_line: int
    end_line: int
    symbol: str
    parent: str
    kind: str
    language: str
    score: float
    """Rounded to 6 places, as `--json` prints it (the human output reads `exact_score`)."""
    retrievers: list[str]
    preview: str
    """The first three non-blank lines (the human output shows two)."""
    meta: dict[str, str]
    uncommitted: bool
    exact_score: float = 0.0
    """The score unrounded, for the human output's four places."""


class TierDone(msgspec.Struct):
    """How many chunks one vector tier covers."""

    done: int
    total: int


class SearchAnswer(msgspec.Struct, kw_only=True):
    """A search's hits and how they were answered."""

    query: str
    warming: bool
    tiers_answered: list[str]
    vectors: dict[str, TierDone]
    seconds: float
    results: list[FoundHit]
    tiers: str = ""
    """`answered by ...` when a tier is incomplete or did not answer ('' when all did)."""


def answer_search(
    folders: Sequence[FolderIndex], query: str, *, k: int | None, filters: Filters, mode: Mode
) -> SearchAnswer:
    """`search_folders` over `folders`, timed, as plain data."""
    started = time.perf_counter()
    result = search_folders(folders, query, k=k, filters=filters, mode=mode)
    elapsed = time.perf_counter() - started
    coverage = tier_counts(folders)
    return SearchAnswer(
        query=query,
        warming=result.warming,
        tiers_answered=result.tiers,
        vectors={c.tier: TierDone(c.done, c.total) for c in coverage},
        seconds=elapsed,
        results=[_found(hit) for hit in result.hits],
        tiers=tiers_line(result.tiers, coverage),
    )


def _found(hit: Hit) -> FoundHit:
    chunk = hit.chunk
    return FoundHit(
        path=str(hit.abs_path),
        relative_path=chunk.path,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        symbol=chunk.symbol,
        parent=chunk.parent,
        kind=chunk.kind,
        language=chunk.language,
        score=round(hit.score, 6),
        retrievers=hit.retrievers,
        preview=hit.preview(),
        meta=chunk.meta,
        uncommitted=getattr(hit, "uncommitted", False),
        exact_score=hit.score,
    )
