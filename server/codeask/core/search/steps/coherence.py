"""Adjust step `lift_coherent_files`: the file that matches in many places.

Each file's best candidate gains FILE_COHERENCE × the best score × the file's candidate score
summed, over the largest such sum: the file where the answer lives usually matches in many
places (a big module such as `SqlMapper.cs` or `_client.py`), which the per-file cap of a
result list and `rank_files`' three chunks no longer show. Not for a dense-only search: a
nearest-neighbour list asks for the closest chunks as they are.

Measured (benchmarks/README.md, Round 9, 20c6f98): see FILE_COHERENCE.
"""

from __future__ import annotations

from codeask.core.records import HISTORY_KINDS
from codeask.core.search.steps.state import Ranking

#: eval-search file NDCG@10 .859 → .864 and pasted reports R@5 .851 → .858 at 0.1; 0.2
#: (semble's) cost the reports' MRR .641 → .626, 0.5 cost both.
FILE_COHERENCE = 0.1


def lift_coherent_files(ranking: Ranking) -> None:
    """See the module's docstring."""
    fused = ranking.found.fused
    if not ranking.lexical or not fused:
        return
    top = max(fused.values())
    sums: dict[str, float] = {}
    best: dict[str, int] = {}
    for path, chunks in ranking.found.by_path.items():
        live = [c.id for c in chunks if c.kind not in HISTORY_KINDS and c.id in fused]
        if live:
            sums[path] = sum(fused[i] for i in live)
            best[path] = max(live, key=fused.__getitem__)
    if not sums:
        return
    largest = max(sums.values())
    for path, total in sums.items():
        fused[best[path]] += FILE_COHERENCE * top * total / largest
