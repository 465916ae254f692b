"""Python's cyclic garbage collector, run less often while a bulk pass allocates.

A first pass makes millions of short-lived container objects (token lists, chunk records,
decoded frames); at CPython's default of a young collection every 700 of them, the indexing
process spent 7 % of its CPU in the collector (kernel,mm,lib,fs,net: 1.30 of 17.65 CPU-s, 1,484
collections). Almost none of those objects are in cycles: reference counting frees them, and a
collection that walks them finds nothing to do. `fewer_collections` raises the young threshold
for the length of a pass (collections still run, ~70x less often) and puts the previous
thresholds back when the last pass holding it ends; nested or concurrent passes (a daemon's
folders) share it. The same objects, the same results: only when unreachable cycles are found
changes, and a pass makes few.

A search holds it too (`retrieve.search`): a question makes ~1,000 tracked objects (its
candidates' chunks, lists and dicts), so at 700 a young collection ran inside nearly every
search and moved the live candidates to the older generations, and every ~20th question paid a
full collection of the process's heap (eval-search's p95). The search drops its candidates
before it leaves, so the collection the restored threshold starts walks only its hits.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Container allocations (net of frees) between two young collections during a pass (CPython's
#: default: 700); the older generations keep their default ratios.
BULK_YOUNG = 50_000

_lock = threading.Lock()
_holders = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Young collections every `BULK_YOUNG` allocations inside, the thresholds as they were
    after the last holder leaves (never lowered: a process that set more itself keeps it)."""
    global _holders, _saved
    with _lock:
        if _holders == 0:
            _saved = gc.get_threshold()
            young, middle, old = _saved
            gc.set_threshold(max(young, BULK_YOUNG), middle, old)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None
