"""Adjust step `lift_file_prior`: a whole-file BM25 rank lifts every candidate of that file.

A file that matches the question as a whole (its name, its many mentions) is likely where the
answer lives even when no single chunk of it ranks high; the best-ranked files with no
candidate yet join with their first chunk (`retrieve.file_weight`).

Measured (benchmarks/README.md, Round 12 ablations): without it eval-search .8602 vs .8643.
"""

from __future__ import annotations

from codeask.core.search.steps.demote import demoted
from codeask.core.search.steps.fuse import RRF_K
from codeask.core.search.steps.state import Ranking

FILE_CANDIDATES = 100


def rank_files(ranking: Ranking) -> None:
    """`found.file_rank`: the whole-file BM25 list, each file's score demoted (tests, prose)."""
    if not ranking.lexical:
        return
    folder, found, signals = ranking.folder, ranking.found, ranking.signals
    files = folder.storage.lexical_files(signals.text, FILE_CANDIDATES)
    scored = [(path, score * demoted(folder, found, path, signals)) for path, score in files]
    scored.sort(key=lambda item: item[1], reverse=True)
    found.file_rank = {path: rank for rank, (path, _) in enumerate(scored)}


def lift_file_prior(ranking: Ranking) -> None:
    """Each candidate of a ranked file gains `file_weight / (RRF_K + rank)`; the top quarter's
    files that have no candidate join with their first chunk."""
    found, storage = ranking.found, ranking.folder.storage
    weight = ranking.folder.settings.retrieve.file_weight
    rank_files(ranking)
    found.group(storage)
    firsts: list[int] = []
    for path, rank in found.file_rank.items():
        if path in found.by_path or rank >= FILE_CANDIDATES // 4:
            continue
        record = storage.file(path)
        if record and record.chunk_ids:
            first = record.chunk_ids[0]
            firsts.append(first)
            found.fused[first] = 0.0
            found.found_by[first].append("file")
    found.group(storage, firsts)
    for path, rank in found.file_rank.items():
        bonus = weight / (RRF_K + rank + 1)
        for chunk in found.by_path.get(path, ()):
            found.fused[chunk.id] += bonus
