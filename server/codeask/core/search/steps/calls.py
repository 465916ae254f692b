"""Adjust step `propagate_calls`: a report's best candidates lift the functions they call.

A report describes what the user called, and the fault is often one call further down (a
directive that renders wrongly, the parser it calls). Reports only: a typed search names the
thing itself ("how are chunks embedded" wants `embed_chunks`, not what it calls). Only names
with at most CALLEE_DEFINITIONS definitions count: `get` or `run` would lift half the project
(`retrieve.call_weight`).

Measured (benchmarks/README.md, Round 4, 70 pasted reports): R@5 .857 with it, .843 without
(MRR .686 vs .694).
"""

from __future__ import annotations

from codeask.core.search.steps.demote import demoted
from codeask.core.search.steps.state import Ranking

#: Call propagation: the callers considered, calls read per caller, definitions per name.
CALLERS = 20
CALLS_PER_CHUNK = 30
CALLEE_DEFINITIONS = 2


def propagate_calls(ranking: Ranking) -> None:
    """Each callee of the CALLERS best candidates gains `call_weight × its caller's score`
    (the best caller's), demoted as its own file is."""
    folder, found, signals = ranking.folder, ranking.found, ranking.signals
    weight = folder.settings.retrieve.call_weight
    if not ranking.lexical or weight <= 0 or not signals.report:
        return
    storage = folder.storage
    best = sorted(found.fused.items(), key=lambda item: item[1], reverse=True)[:CALLERS]
    lift: dict[int, float] = {}
    read = found.chunks(storage)
    for chunk_id, score in best:
        chunk = read.get(chunk_id)
        for name in chunk.calls[:CALLS_PER_CHUNK] if chunk is not None else []:
            callees = storage.symbol_ids(name.rsplit(".", 1)[-1])
            if len(callees) > CALLEE_DEFINITIONS:
                continue
            for callee in callees:
                if callee != chunk_id:
                    lift[callee] = max(lift.get(callee, 0.0), weight * score)
    read = found.chunks(storage, lift)
    for callee, bonus in lift.items():
        chunk = read.get(callee)
        if chunk is None:
            continue
        factor = demoted(folder, found, chunk.path, signals)
        found.fused[callee] = found.fused.get(callee, 0.0) + bonus * factor
        found.found_by[callee].append("calls")
