"""The fusion step: every collected list joins the candidates by reciprocal rank (RRF).

Each list adds `weight / (RRF_K + rank)` to each chunk it holds, so a chunk found by several
retrievers outranks one found by a single list, without comparing their raw scores.

Measured (benchmarks/README.md, Round 12): RRF_K 30 lifted eval-search .8643 → .8681 but cost
pasted reports R@5 .858 → .831; 60 kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from codeask.core.search.steps.state import Ranked, Ranking

RRF_K = 60


def rrf(ranked: Sequence[int], weight: float, into: dict[int, float]) -> None:
    """Add one list's reciprocal-rank scores to `into`."""
    for rank, chunk_id in enumerate(ranked):
        into[chunk_id] = into.get(chunk_id, 0.0) + weight / (RRF_K + rank + 1)


def fuse(ranking: Ranking, lists: Sequence[Ranked]) -> None:
    """The lists, in the order collected, into `ranking.found` (scores and who found each)."""
    found = ranking.found
    for name, ranked, weight in lists:
        rrf(ranked, weight, found.fused)
        for chunk_id in ranked:
            found.found_by[chunk_id].append(name)
