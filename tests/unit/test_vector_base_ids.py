"""A mapped vector base is opened without a Python object per row (issue 42): its ids are
looked up by bisection in numpy arrays, with the same answers as the dict and set they replace."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np

from codeask.core.storage.vector_file import Stored, write_base
from codeask.core.storage.vectors import VectorIndex

DIM = 8


def _base(path: Path, ids: np.ndarray, seed: int = 0) -> np.ndarray:
    """A float32 base file holding `ids` in this row order; returns its unit rows."""
    rows = np.random.default_rng(seed).standard_normal((len(ids), DIM)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    write_base(path, len(ids), DIM, np.dtype(np.float32), [Stored(ids, rows, None)])
    return rows


def test_opening_a_big_base_builds_no_python_object_per_row(tmp_path: Path) -> None:
    """200k rows: the id dict and live set built row by row took ~40 MB (and seconds on the
    kernel's 1.3M rows); the arrays that replace them take a few MB."""
    count = 200_000
    ids = np.arange(1, count + 1, dtype=np.int64)
    path = tmp_path / "static.npz"
    _base(path, ids)
    known = ids[ids % 1000 != 0]  # some rows belong to chunks the store no longer has
    tracemalloc.start()
    try:
        index = VectorIndex.load(path, DIM, len(known) + 1024, known)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12 * 2**20, f"{peak / 2**20:.1f} MB traced while opening"
    assert len(index.live) == len(known) and index.deleted == count - len(known)
    assert 999 in index.live and 1000 not in index.live and count + 1 not in index.live


def test_an_unsorted_base_with_a_repeated_id_keeps_its_last_row(tmp_path: Path) -> None:
    """Row order is whatever a save wrote; an id written twice (an old file) answers with its
    later row, and the earlier one is a hole, as before."""
    ids = np.array([30, 10, 20, 10, 40], dtype=np.int64)
    path = tmp_path / "static.npz"
    rows = _base(path, ids)
    index = VectorIndex.load(path, DIM, 0, [10, 20, 30])
    assert index.live == {10, 20, 30} and index.deleted == 2  # 40 unknown, 10's first row
    vector = index.vector(10)
    assert vector is not None and np.allclose(vector, rows[3])
    assert [i for i, _ in index.query(rows[1], 3)].count(10) == 1
    index.remove([10])
    assert index.live == {20, 30} and index.vector(10) is None
    index.add([20], rows[4:5])  # a new vector for a base id goes to the tail
    assert index.live == {20, 30} and np.allclose(index.vector(20), rows[4])
    assert index.live.intersection([5, 20, 30, 40]) == {20, 30}


def test_lookups_agree_with_a_dict_over_random_bases() -> None:
    from codeask.core.storage.base_ids import BaseIds  # new in issue 42

    rng = np.random.default_rng(7)
    for _ in range(50):
        ids = rng.integers(1, 60, size=int(rng.integers(0, 40))).astype(np.int64)
        keep = rng.random(len(ids)) < 0.8
        expected: dict[int, int] = {}
        for row, chunk_id in enumerate(ids.tolist()):
            if keep[row]:
                expected[chunk_id] = row  # the later row wins
        base = BaseIds(ids, keep)
        probe = np.arange(0, 62, dtype=np.int64)
        assert {i: base.row(i) for i in probe.tolist() if base.row(i) >= 0} == expected
        assert base.rows(probe).tolist() == [expected.get(i, -1) for i in probe.tolist()]
        assert base.count == len(expected) and sorted(base.live().tolist()) == sorted(expected)


def test_live_ids_answer_for_the_base_and_the_tail_at_once(tmp_path: Path) -> None:
    """`contains` (what a search that fills one tier's gaps from the other asks of every hit)
    agrees with one lookup at a time, over a base with holes and a tail."""
    path = tmp_path / "static.npz"
    rows = _base(path, np.arange(1, 101, dtype=np.int64))
    index = VectorIndex.load(path, DIM, 0, np.arange(1, 91, dtype=np.int64))  # 91-100 gone
    index.remove([5, 6])
    index.add([200, 7], rows[:2])  # a new chunk, and a base chunk's new vector
    probe = np.arange(0, 210, dtype=np.int64)
    expected = [int(i) in index.live for i in probe.tolist()]
    assert index.live.contains(probe).tolist() == expected
    assert sum(expected) == len(index.live) == 89
    assert sorted(index.live) == sorted({*range(1, 91), 200} - {5, 6})


class _CountingTail(dict[int, int]):
    """A tail that counts how often it is walked whole."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        type(self).walks += 1
        return super().__iter__()


def test_a_few_ids_against_a_long_tail_never_walk_the_tail() -> None:
    """A first pass asks the tiers about each file's few removed ids while the tail holds every
    row so far: copying the whole tail per question made the kernel's pass quadratic (main
    process 1,692 CPU-s, 65 % in LiveIds.contains). The answers are those of the whole-tail path."""
    from codeask.core.storage.base_ids import TAIL_LOOKUP_RATIO, LiveIds

    tail = _CountingTail({chunk_id: slot for slot, chunk_id in enumerate(range(0, 20_000, 2))})
    live = LiveIds(None, tail)
    asked = np.array([4, 5, 18_000, 19_999, 7], dtype=np.int64)
    assert live.contains(asked).tolist() == [True, False, True, False, False]
    assert live.intersection([4, 5, 6]) == {4, 6}
    assert live.contains(np.array([], dtype=np.int64)).tolist() == []
    assert _CountingTail.walks == 0
    many = np.arange(0, len(tail) // TAIL_LOOKUP_RATIO + 10, dtype=np.int64)
    assert live.contains(many).tolist() == [i % 2 == 0 for i in many.tolist()]
    assert _CountingTail.walks == 1  # many ids: one vectorised isin over a copy of the tail


def test_many_ids_are_tested_in_one_table_and_agree_with_bisection() -> None:
    """A pass tests every chunk id against the static tier (1.28M on the kernel, ~0.1-0.2 s of
    bisection on a fresh daemon's first edit): many ids take one `np.isin` table over the part's
    live ids instead, a few still bisect; both answer as one lookup at a time, holes, repeated
    ids and an unsorted base included."""
    from codeask.core.storage.base_ids import TABLE_LOOKUP_RATIO, BaseIds, LiveIds

    class Counting(BaseIds):
        bisections = 0

        def rows(self, chunk_ids: np.ndarray) -> np.ndarray:
            type(self).bisections += 1
            return super().rows(chunk_ids)

    rng = np.random.default_rng(11)
    for _ in range(40):
        ids = rng.permutation(rng.integers(1, 400, size=300)).astype(np.int64)
        base = Counting(ids, rng.random(len(ids)) < 0.9)
        for row in rng.integers(0, len(ids), size=5).tolist():
            base.punch(row)
        live = LiveIds(base, {int(i): n for n, i in enumerate(rng.integers(380, 420, size=6))})
        expected = set(base.live().tolist()) | set(live._tail)
        many = rng.integers(0, 430, size=base.count).astype(np.int64)
        few = many[: max(1, base.count // TABLE_LOOKUP_RATIO - 1)]
        Counting.bisections = 0
        assert live.contains(many).tolist() == [int(i) in expected for i in many.tolist()]
        assert Counting.bisections == 0, "many ids: one table, no bisection"
        assert live.contains(few).tolist() == [int(i) in expected for i in few.tolist()]
        assert Counting.bisections == 1
