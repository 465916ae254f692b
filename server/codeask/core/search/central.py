"""Which candidate file the others call into: a ranking step for typed questions.

A question about how something works ("how are requests dispatched through the adapter") is
answered by the module the rest of the answer leans on (`dispatchRequest.js`, which the
candidates around it call), while leaf files that merely mention the words (each adapter)
match as well or better. Among the candidates of one question, a file whose definitions are
called from more of the other candidate files is lifted by a share of the best score.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from codeask.core.records import HISTORY_KINDS, Chunk

#: Calls read per chunk (as `steps/calls.propagate_calls`): long chunks call everything.
CALLS_PER_CHUNK = 30
#: A name defined in more candidate files than this is too common to point at one module.
MAX_DEFINERS = 2


def callers_by_file(by_path: Mapping[str, Sequence[Chunk]]) -> dict[str, set[str]]:
    """For each candidate file, the other candidate files whose chunks call a name it defines."""
    definers: dict[str, set[str]] = defaultdict(set)
    for path, chunks in by_path.items():
        for chunk in chunks:
            if chunk.symbol and chunk.kind not in HISTORY_KINDS:
                definers[chunk.symbol].add(path)
    callers: dict[str, set[str]] = defaultdict(set)
    for path, chunks in by_path.items():
        called = {
            name.rsplit(".", 1)[-1]
            for chunk in chunks
            if chunk.kind not in HISTORY_KINDS
            for name in chunk.calls[:CALLS_PER_CHUNK]
        }
        for name in called:
            targets = definers.get(name, ())
            if len(targets) <= MAX_DEFINERS:
                for target in targets:
                    if target != path:
                        callers[target].add(path)
    return dict(callers)


def lift_central_files(
    by_path: Mapping[str, Sequence[Chunk]], fused: dict[int, float], weight: float
) -> None:
    """Each file's best candidate gains `weight` × the best score × its callers over the most
    any candidate file has (one caller: a coincidence, so two at least)."""
    callers = callers_by_file(by_path)
    most = max((len(who) for who in callers.values()), default=0)
    if most < 2 or not fused:
        return
    top = max(fused.values())
    for path, who in callers.items():
        live = [c.id for c in by_path[path] if c.id in fused and c.kind not in HISTORY_KINDS]
        if live and len(who) >= 2:
            best = max(live, key=fused.__getitem__)
            fused[best] += weight * top * len(who) / most
