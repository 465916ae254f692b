"""Adjust step `lift_mentioned_paths`: files a question names (a traceback's paths, a dotted
module, `foo/bar.py`) lift all their chunks, as strongly as an exact symbol match; a named
test file also lifts the module it tests.

Measured (benchmarks/README.md, Round 3, "paths named with a prefix"): pasted reports name
files through tracebacks and links; the longest known suffix finds them.
"""

from __future__ import annotations

from codeask.core.search.query import QuerySignals
from codeask.core.search.rerank import subjects_of_test
from codeask.core.search.steps.demote import is_test_path
from codeask.core.search.steps.fuse import RRF_K
from codeask.core.search.steps.state import Ranking
from codeask.core.storage.protocol import IndexReader

#: Longer suffixes of a mentioned path are not tried: no workspace file is nested this deep, and
#: trying every suffix of a pasted 50,000-part dotted or slashed run took 15 s (quadratic).
MAX_PATH_PARTS = 64


def lift_mentioned_paths(ranking: Ranking) -> None:
    """Each chunk of a named file gains `symbol_weight × share / (RRF_K + 1)` (a name several
    files share gives each a share) and joins the candidates."""
    if not ranking.lexical:
        return
    folder, found = ranking.folder, ranking.found
    symbol_weight = folder.settings.retrieve.symbol_weight
    mentioned: list[int] = []
    for path, strength in path_matches(folder.storage, ranking.signals).items():
        record = folder.storage.file(path)
        for chunk_id in record.chunk_ids if record else []:
            bonus = symbol_weight * strength / (RRF_K + 1)
            if chunk_id not in found.fused:
                mentioned.append(chunk_id)
            found.fused[chunk_id] = found.fused.get(chunk_id, 0.0) + bonus
            if "path" not in found.found_by[chunk_id]:
                found.found_by[chunk_id].append("path")
    found.group(folder.storage, mentioned)


def path_matches(storage: IndexReader, signals: QuerySignals) -> dict[str, float]:
    """Files a question names, and the modules that named test files test; a name shared by
    several files gives each a share."""
    scores: dict[str, float] = {}
    for mention in signals.paths:
        candidates = longest_known_suffix(storage, mention)
        subjects = [s for c in candidates if is_test_path(c) for s in tested(storage, c)]
        for group in (candidates, subjects):
            for path in group:
                scores[path] = max(scores.get(path, 0.0), 1.0 / len(group))
    return scores


def tested(storage: IndexReader, test_path: str) -> list[str]:
    """The module a named test file tests (`tests/test_pycode_ast.py` → `sphinx/pycode/ast.py`):
    a question that points at a test ("add a test case here") is about that module."""
    return subjects_of_test(storage, test_path, is_test_path)


def longest_known_suffix(storage: IndexReader, mention: str) -> list[str]:
    """Files named by `mention` or by its longest suffix of two parts or more: a traceback's
    `/usr/lib/python3.9/site-packages/pkg/mod.py` names the workspace's `pkg/mod.py`."""
    found = storage.paths_named(mention)
    if found:
        return found
    parts = mention.split("/")
    for start in range(max(1, len(parts) - MAX_PATH_PARTS), len(parts) - 1):
        found = storage.paths_named("/".join(parts[start:]))
        if found:
            return found
    return []
