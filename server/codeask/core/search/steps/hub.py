"""Adjust step `lift_hub`: the module the other candidates call into (core/search/central.py).

A question that names no file and no symbol ("how are requests dispatched") is about the
module the other candidates call into; one that names its file (`Flow`, "the lockfile") or a
symbol is answered by that, not by its callers' hub (`retrieve.central_weight`; typed
questions only).

Measured (benchmarks/README.md, Round 18 ranking): eval-search .8860 → .8912, R@5 .9478 →
.9503, no language below semble.
"""

from __future__ import annotations

from codeask.core.search.central import lift_central_files
from codeask.core.search.name_match import names_a_file, queried_symbols, question_words
from codeask.core.search.steps.state import Ranking

#: The files ranked first before the hub step: when one of them is named by the question's
#: words, the question names its file and no hub is lifted over it.
HUB_NAMED_LEADERS = 2


def lift_hub(ranking: Ranking) -> None:
    """The central candidate file's best chunk, lifted (see the module's docstring)."""
    found, signals = ranking.found, ranking.signals
    weight = ranking.folder.settings.retrieve.central_weight
    if not ranking.lexical or signals.report:
        return
    if weight <= 0 or queried_symbols(signals.text)[0]:
        return
    fused = found.fused
    best = {p: max(fused.get(c.id, 0.0) for c in cs) for p, cs in found.by_path.items() if cs}
    leaders = sorted(best, key=best.__getitem__, reverse=True)[:HUB_NAMED_LEADERS]
    if names_a_file(question_words(signals.text), leaders):
        return
    lift_central_files(found.by_path, found.fused, weight)
