"""Issue 42, TAIL: a long pass's vector tail spills to a file instead of doubling in memory.

The unit half: a tier whose tail is spilled answers every read (ids, vectors, queries, the base
and delta it writes) exactly as one held in memory, and its memory stays one block however many
rows it takes. The real-process half (a first pass, a SIGKILL mid-pass) is
tests/unit/test_vector_spill_pass.py.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from codeask.core.storage.vectors import VectorIndex


def _rows(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    return rng.standard_normal((count, dim)).astype(np.float32)


def _fill(index: VectorIndex, seed: int, dim: int) -> None:
    """The same edits for every index: files of 1-40 rows with fresh ascending ids, a few
    replaced and removed (a file indexed twice in one pass, a deleted file)."""
    rng = np.random.default_rng(seed)
    next_id = 1
    for batch in range(120):
        count = int(rng.integers(1, 40))
        index.add(list(range(next_id, next_id + count)), _rows(rng, count, dim))
        next_id += count
        if batch % 17 == 5:  # replaced: an older row (spilled by now) gets a new vector
            index.add([3, next_id - 1], _rows(rng, 2, dim))
        if batch % 23 == 7:
            index.remove([next_id - 2, 10 + batch])


@pytest.mark.parametrize("quantized", [True, False])
def test_a_spilled_tier_reads_and_writes_as_one_held_in_memory(
    tmp_path: Path, quantized: bool
) -> None:
    dim = 16
    kept = VectorIndex(dim, quantized=quantized)
    spilled = VectorIndex(dim, quantized=quantized)
    spilled.spill_dir, spilled.spill_rows = tmp_path, 64
    _fill(kept, 7, dim)
    _fill(spilled, 7, dim)
    tail = spilled._tail
    assert tail.spill is not None and len(tail.spill) > 1000  # most rows are on disk
    assert tail.used <= 64 and tail.capacity() <= 1024  # in memory: one block at most
    assert list(tmp_path.iterdir()) == []  # the spill file is unlinked: nothing to leave behind
    assert spilled.live == kept.live and len(spilled.live) == len(kept.live)
    ids = kept.live.array()
    assert np.array_equal(np.sort(spilled.live.array()), np.sort(ids))
    probe = np.array([1, 3, 10, 17, 999, 2500, 10**6], dtype=np.int64)
    assert np.array_equal(spilled.live.contains(probe), kept.live.contains(probe))
    for chunk_id in [3, 12, 500, int(ids[-1]), 10**6]:
        ours, theirs = spilled.vector(chunk_id), kept.vector(chunk_id)
        assert (ours is None) == (theirs is None)
        assert ours is None or np.array_equal(ours, theirs)
    rng = np.random.default_rng(1)
    for query in _rows(rng, 5, dim):
        assert spilled.query(query, 25) == kept.query(query, 25)
    # what a save writes: the base byte for byte, and the delta (no base: everything)
    assert spilled.encode() == kept.encode()
    ours_delta, theirs_delta = spilled.delta(), kept.delta()
    assert np.array_equal(ours_delta.ids, theirs_delta.ids)
    assert np.array_equal(ours_delta.rows, theirs_delta.rows)
    assert spilled.needs_fold() and kept.needs_fold()


def _traced_peak(rows: int, *, spill_dir: Path | None) -> int:
    """Peak bytes numpy and Python allocated while a static tier took `rows` rows, 32 a file."""
    index = VectorIndex(256, quantized=True)
    index.spill_dir = spill_dir
    rng = np.random.default_rng(0)
    block = _rows(rng, 32, 256)
    tracemalloc.start()
    try:
        for first in range(1, rows + 1, 32):
            index.add(list(range(first, first + 32)), block)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_spilled_tail_holds_one_block_whatever_the_rows(tmp_path: Path) -> None:
    """Held in memory the tail grew ~270 bytes a row plus a dict entry, and doubled (256k rows:
    119 MB traced); spilled it keeps one block (16,384 rows) and, per row, its id and scale
    (and the id again in the lookup): measured 64k rows 11.4 MB, 256k rows 14.1 MB."""
    small = _traced_peak(64_000, spill_dir=tmp_path)
    large = _traced_peak(256_000, spill_dir=tmp_path)
    assert small < 14_000_000 and large < 18_000_000
    assert large - small < 24 * (256_000 - 64_000)  # what still grows: ids and scales


def test_a_mapped_base_with_a_spilled_tail_saves_as_one_held_in_memory(tmp_path: Path) -> None:
    """A long pass over a loaded index (a branch switch): base rows replaced and removed, the
    tail spilled; the delta a save writes, the base it folds and a reload answer the same."""
    dim, base_rows = 16, 900
    rng = np.random.default_rng(5)
    seed_index = VectorIndex(dim, quantized=True)
    seed_index.add(list(range(1, base_rows + 1)), _rows(rng, base_rows, dim))
    path = tmp_path / "static.npz"
    path.write_bytes(seed_index.encode())
    known = set(range(1, base_rows + 1))
    kept = VectorIndex.load(path, dim, 0, known, quantized=True)
    spilled = VectorIndex.load(path, dim, 0, known, quantized=True)
    spilled.spill_dir, spilled.spill_rows = tmp_path / "spill", 50
    for index in (kept, spilled):
        _fill_after(index, dim)
    assert spilled._tail.spill is not None and kept._tail.spill is None
    assert spilled.live == kept.live and spilled.deleted == kept.deleted
    ours, theirs = spilled.delta(), kept.delta()
    for field in ("ids", "rows", "scales", "removed"):
        assert np.array_equal(getattr(ours, field), getattr(theirs, field)), field
    assert ours.base_rows == theirs.base_rows == base_rows
    assert spilled.needs_fold() == kept.needs_fold()
    assert spilled.encode() == kept.encode()
    query = _rows(rng, 1, dim)[0]
    assert spilled.query(query, 40) == kept.query(query, 40)


def _fill_after(index: VectorIndex, dim: int) -> None:
    rng = np.random.default_rng(11)
    index.add(list(range(1, 200)), _rows(rng, 199, dim))  # base rows replaced: holes there
    index.add(list(range(2000, 2400)), _rows(rng, 400, dim))
    index.remove([5, 250, 2001, 2399])
    index.add([2002, 2003], _rows(rng, 2, dim))  # spilled rows replaced in place
