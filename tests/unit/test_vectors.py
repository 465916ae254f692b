"""The exact vector index: the true nearest neighbours, holes, compaction, and its file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from codeask.core.storage.vectors import VectorIndex


def _rows(n: int, dim: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


def _truth(rows: np.ndarray, ids: list[int], query: np.ndarray, k: int) -> list[int]:
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    scores = unit @ (query / np.linalg.norm(query))
    return [ids[i] for i in np.argsort(-scores)[:k]]


def test_query_returns_the_exact_nearest_with_cosine_scores() -> None:
    rows = _rows(3000, 32)
    ids = list(range(10, 3010))
    index = VectorIndex(32, capacity=16)  # grows past its first capacity
    for start in range(0, 3000, 700):
        index.add(ids[start : start + 700], rows[start : start + 700])
    query = _rows(1, 32, seed=1)[0]
    found = index.query(query, 25)
    assert [i for i, _ in found] == _truth(rows, ids, query, 25)
    best = rows[ids.index(found[0][0])]
    cosine = float(best @ query / np.linalg.norm(best) / np.linalg.norm(query))
    assert found[0][1] == pytest.approx(cosine, abs=1e-5)
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)


def test_removed_vectors_are_never_returned_and_replaced_ones_move() -> None:
    rows = _rows(400, 16)
    index = VectorIndex(16)
    index.add(list(range(400)), rows)
    index.remove(range(0, 400, 2))
    assert index.live == set(range(1, 400, 2)) and index.deleted == 200
    everything = index.query(rows[0], 1000)
    assert len(everything) == 200 and all(i % 2 for i, _ in everything)
    index.add([7], rows[0:1])  # a changed chunk: same id, new vector
    assert index.query(rows[0], 1)[0][0] == 7
    assert index.vector(8) is None
    assert np.allclose(index.vector(7), rows[0] / np.linalg.norm(rows[0]), atol=1e-6)


def test_compaction_keeps_exactly_the_live_vectors() -> None:
    rows = _rows(2000, 8)
    index = VectorIndex(8)
    index.add(list(range(2000)), rows)
    index.remove(range(1000))
    assert index.needs_compaction()
    fresh = index.compacted()
    assert fresh.live == index.live and fresh.deleted == 0 and not fresh.needs_compaction()
    query = rows[1500]
    assert fresh.query(query, 10) == index.query(query, 10)


def test_the_file_round_trips_and_drops_chunks_the_store_no_longer_knows(tmp_path: Path) -> None:
    rows = _rows(300, 12)
    index = VectorIndex(12)
    index.add(list(range(300)), rows)
    index.remove([5])
    path = tmp_path / "vectors.npz"
    path.write_bytes(index.encode())
    known = set(range(0, 300)) - {5, 6}
    loaded = VectorIndex.load(path, 12, 1024, known)
    assert loaded.live == known and loaded.deleted == 1  # 6 was in the file, 5 was not
    query = rows[42]
    assert [i for i, _ in loaded.query(query, 20)] == [
        i for i, _ in index.query(query, 22) if i in known
    ][:20]


@pytest.mark.parametrize("damage", [b"", b"not a zip file at all", b"PK\x03\x04broken"])
def test_a_damaged_file_is_a_value_error(tmp_path: Path, damage: bytes) -> None:
    path = tmp_path / "vectors.npz"
    path.write_bytes(damage)
    with pytest.raises(ValueError):
        VectorIndex.load(path, 12, 1024, {1})


def test_a_file_of_another_dimension_is_a_value_error(tmp_path: Path) -> None:
    index = VectorIndex(12)
    index.add([1], _rows(1, 12))
    path = tmp_path / "vectors.npz"
    path.write_bytes(index.encode())
    with pytest.raises(ValueError, match="expected"):
        VectorIndex.load(path, 16, 1024, {1})


def test_an_empty_index_answers_nothing() -> None:
    assert VectorIndex(4).query(np.ones(4, dtype=np.float32), 5) == []


def test_loading_a_tier_holds_about_one_copy_of_its_rows(tmp_path: Path) -> None:
    """The file is read into the matrix itself (issue 29): reading it whole, then unpacking and
    copying it, made the open's peak ~4.5 copies of every tier (sphinx: 23 + 15 MB each)."""
    import tracemalloc

    rows = _rows(20000, 256)
    index = VectorIndex(256)
    index.add(list(range(1, 20001)), rows)
    path = tmp_path / "vectors.npz"
    path.write_bytes(index.encode())
    matrix_bytes = (20000 + 1024) * 256 * 4
    tracemalloc.start()
    try:
        loaded = VectorIndex.load(path, 256, 20000 + 1024, set(range(1, 20001)))
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept > matrix_bytes  # the matrix and its id maps stay
    assert peak - kept < 0.25 * matrix_bytes, (peak - kept) / matrix_bytes
    query = rows[123]
    assert loaded.query(query, 50) == index.query(query, 50)
    assert np.array_equal(loaded.vector(124), index.vector(124))
