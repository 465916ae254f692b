"""Issue 42, TAIL: a BM25 query scores a common term's postings a block at a time, so its
temporary memory does not grow with the tree, and every score is bit for bit what scoring the
term whole gave (the same float64 expression per posting; a term holds a row once)."""

from __future__ import annotations

import random
import tracemalloc

import pytest

from codeask.core.storage.lexical import bm25
from codeask.core.storage.lexical.bm25 import CHUNK_WEIGHTS, LiveTable, Postings

WORDS = [f"w{i}" for i in range(40)] + ["parse", "request", "cookie", "session"]


def _table(rows: int) -> LiveTable:
    """`rows` chunks that all say "kfree", a base and a later write (a second segment, and masked
    rows in the base): the shapes a search meets."""
    rng = random.Random(3)

    def row(key: int) -> tuple[object, ...]:
        words = " ".join(["kfree", *rng.sample(WORDS, 3), *(["kfree"] * (key % 3))])
        return (key, words, f"sym{key % 97}", f"pkg/m{key % 50}.c")

    table = LiveTable(Postings.build([row(i) for i in range(rows)], CHUNK_WEIGHTS), CHUNK_WEIGHTS)
    table.apply([row(i) for i in range(rows, rows + 700)], removed=[5, 77, 1_000])
    table.settle()
    return table


def test_blocked_scores_are_the_whole_term_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(20_000)
    assert len(table.segments) == 2 and table.segments[0].masked is not None
    queries = [["kfree", "parse"], ["request", "kfree", "w7"], ["cookie"], ["sym12", "kfree"]]
    monkeypatch.setattr(bm25, "SCORE_BLOCK", 10**9)  # every term in one block: the old way
    whole = [table.search(q, 50) for q in queries]
    monkeypatch.setattr(bm25, "SCORE_BLOCK", 1_000)
    blocked = [table.search(q, 50) for q in queries]
    assert blocked == whole and all(whole)  # the same keys, in order, with equal floats


def _peak(table: LiveTable) -> int:
    tracemalloc.start()
    try:
        table.search(["kfree", "parse"], 20)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_common_terms_temporaries_stay_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """300k postings of "kfree": scored whole and cut over the whole row space, 20.4 MB traced at
    once; in blocks, the row space's score array (8 bytes a row: 2.4 MB), the term's live
    postings as read (rows and float64 tf, per segment) and one block's temporaries: 9.2 MB."""
    table = _table(300_000)
    blocked = _peak(table)
    monkeypatch.setattr(bm25, "SCORE_BLOCK", 10**9)
    whole = _peak(table)
    assert whole > 15_000_000
    assert blocked < 10_000_000


def test_the_matching_rows_are_the_touched_rows_that_scored() -> None:
    """`_best` finds a block's rows in the byte-a-row `touched` map, not in the float64
    scores: the same rows and scores as every row scoring > 0, a touched row that scored 0 (a
    posting weighted 0) left out as before, in every block of a row space past one."""
    import numpy as np

    rng = np.random.default_rng(7)
    size = 3 * bm25.SCORE_BLOCK + 11
    scores = np.zeros(size, dtype=np.float64)
    touched = np.zeros(size, dtype=bool)
    rows = rng.choice(size, 5_000, replace=False)
    scores[rows] = rng.random(len(rows)) + 1e-3
    touched[rows] = True
    zero = rng.choice(np.setdiff1d(np.arange(size), rows), 50, replace=False)
    touched[zero] = True  # scored, but by 0
    for limit in (1, 10, 400, 10_000):
        for first in range(0, size, bm25.SCORE_BLOCK):
            got_rows, got_scores = bm25._matching(scores, touched, first, limit)
            block = scores[first : first + bm25.SCORE_BLOCK]
            want_rows = np.flatnonzero(block) + first
            want_rows, want_scores = bm25._cut(want_rows, scores[want_rows], limit)
            assert np.array_equal(got_rows, want_rows) and np.array_equal(got_scores, want_scores)
            assert not set(got_rows.tolist()) & set(zero.tolist())
