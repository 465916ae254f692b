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
    assert all(type(i) is int and type(s) is float for i, s in found)  # plain, not numpy


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


def test_a_loaded_tier_keeps_its_rows_in_the_file_not_in_memory(tmp_path: Path) -> None:
    """The rows are mapped from the snapshot file (issue 29: a language server held sphinx's
    23 + 15 MB of tiers for its whole life); reading them made an open hold one private copy,
    and before that ~4.5 at its peak."""
    import tracemalloc

    rows = _rows(20000, 256)
    index = VectorIndex(256)
    index.add(list(range(1, 20001)), rows)
    path = tmp_path / "vectors.npz"
    path.write_bytes(index.encode())
    matrix_bytes = 20000 * 256 * 4
    tracemalloc.start()
    try:
        loaded = VectorIndex.load(path, 256, 20000 + 1024, set(range(1, 20001)))
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the id maps and the load's passing lists, never a copy of the rows (which is 1.0)
    assert kept < 0.25 * matrix_bytes, kept / matrix_bytes
    assert peak < 0.5 * matrix_bytes, peak / matrix_bytes
    query = rows[123]
    assert loaded.query(query, 50) == index.query(query, 50)  # same ids and the same scores
    assert np.array_equal(loaded.vector(124), index.vector(124))


def _saved(tmp_path: Path, rows: np.ndarray, ids: list[int]) -> Path:
    index = VectorIndex(rows.shape[1])
    index.add(ids, rows)
    path = tmp_path / "vectors.npz"
    path.write_bytes(index.encode())
    return path


def test_a_mapped_tier_edited_answers_as_one_held_in_memory(tmp_path: Path) -> None:
    """Adds, replacements and removals after a load go to the tail or make holes in the
    mapped rows (never written): every query, vector and saved file matches an index that
    held everything in memory and had the same edits."""
    rows = _rows(3000, 24)
    ids = list(range(1, 3001))
    path = _saved(tmp_path, rows, ids)
    mapped = VectorIndex.load(path, 24, 4024, set(ids) - {5, 6})  # two dropped at load
    held = VectorIndex(24)
    held.add([i for i in ids if i not in (5, 6)], np.delete(rows, [4, 5], axis=0))
    for index in (mapped, held):
        index.add([10, 20, 4001, 4002], _rows(4, 24, seed=3))  # two replaced, two new
        index.remove([30, 4001, 999_999])
    assert mapped.live == held.live
    assert mapped.deleted > 0
    for seed in range(5):
        query = _rows(1, 24, seed=10 + seed)[0]
        assert mapped.query(query, 40) == held.query(query, 40)
    for chunk_id in (1, 10, 4002, 30, 5):
        got, want = mapped.vector(chunk_id), held.vector(chunk_id)
        assert (got is None and want is None) or np.array_equal(got, want), chunk_id
    again = tmp_path / "again.npz"
    again.write_bytes(mapped.encode())
    reloaded = VectorIndex.load(again, 24, 4024, mapped.live)
    query = _rows(1, 24, seed=42)[0]
    assert sorted(reloaded.query(query, 100)) == sorted(held.query(query, 100))
    compact = mapped.compacted()
    assert compact.live == held.live and compact.query(query, 30) == held.query(query, 30)


def test_mapped_rows_are_read_only(tmp_path: Path) -> None:
    path = _saved(tmp_path, _rows(50, 8), list(range(1, 51)))
    loaded = VectorIndex.load(path, 8, 100, set(range(1, 51)))
    assert loaded._base is not None
    with pytest.raises(ValueError):
        loaded._base.rows[0, 0] = 1.0  # the file's pages: nothing in this process writes them


def _forged(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert data.count(old) == 1, old
    path.write_bytes(data.replace(old, new))


def test_a_file_claiming_more_rows_than_it_holds_is_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path, _rows(50, 8), list(range(1, 51)))
    _forged(path, b"'shape': (50, 8)", b"'shape': (90, 8)")
    with pytest.raises(ValueError, match=r"\(90, 8\) vectors, expected \(50, 8\)"):
        VectorIndex.load(path, 8, 100, set(range(1, 51)))


def test_a_file_of_another_dtype_is_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path, _rows(50, 8), list(range(1, 51)))
    _forged(path, b"'descr': '<f4'", b"'descr': '>f4'")
    with pytest.raises(ValueError, match="expected C-order little-endian float32"):
        VectorIndex.load(path, 8, 100, set(range(1, 51)))


def test_a_member_running_past_the_end_of_the_file_is_refused(tmp_path: Path) -> None:
    """A local header whose extra field is forged longer: the rows would end past the file
    (mapped, reading them would crash the process with SIGBUS): refused before mapping rows."""
    import struct
    import zipfile

    path = _saved(tmp_path, _rows(50, 8), list(range(1, 51)))
    offset = zipfile.ZipFile(path).getinfo("rows.npy").header_offset
    data = bytearray(path.read_bytes())
    data[offset + 28 : offset + 30] = struct.pack("<H", 60_000)
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="past the end of the file"):
        VectorIndex.load(path, 8, 100, set(range(1, 51)))


def test_a_compressed_tier_is_read_not_mapped(tmp_path: Path) -> None:
    import zipfile

    rows = _rows(60, 8)
    plain = _saved(tmp_path, rows, list(range(1, 61)))
    packed = tmp_path / "packed.npz"
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as dst:
        for name in src.namelist():
            dst.writestr(name, src.read(name))
    loaded = VectorIndex.load(packed, 8, 100, set(range(1, 61)))
    mapped = VectorIndex.load(plain, 8, 100, set(range(1, 61)))
    assert loaded._base is None and mapped._base is not None
    query = rows[7]
    assert loaded.query(query, 20) == mapped.query(query, 20)


def _rss_file_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1]) / 1024
    pytest.skip("no RssFile in /proc/self/status")


def test_a_scanned_tier_gives_its_pages_back_once_idle(tmp_path: Path) -> None:
    """Mapped rows are in the process only while queries scan them: once the tier has been
    idle for IDLE_SECONDS its pages go (they stay in the page cache for the next scan)."""
    import time

    from codeask.core.storage import mapped_rows

    rows = _rows(20000, 384)  # 30 MB
    path = _saved(tmp_path, rows, list(range(1, 20001)))
    loaded = VectorIndex.load(path, 384, 21024, set(range(1, 20001)))
    assert loaded._base is not None
    before = _rss_file_mb()
    hits = loaded.query(rows[5], 10)
    scanned = _rss_file_mb()
    assert hits[0][0] == 6 and scanned - before > 20, (before, scanned)
    assert not loaded._base.release_if_idle(time.monotonic())  # just scanned: kept
    later = time.monotonic() + mapped_rows.IDLE_SECONDS + 1
    assert loaded._base.release_if_idle(later)
    assert scanned - _rss_file_mb() > 20, (scanned, _rss_file_mb())
    assert loaded.query(rows[5], 10) == hits  # faulted back in from the page cache


def _loaded_quantized(tmp_path: Path, count: int, dim: int) -> tuple[VectorIndex, np.ndarray]:
    rows = _rows(count, dim)
    index = VectorIndex(dim, quantized=True)
    index.add(list(range(1, count + 1)), rows)
    path = tmp_path / "static.npz"
    path.write_bytes(index.encode())
    loaded = VectorIndex.load(path, dim, count + 1024, set(range(1, count + 1)), quantized=True)
    assert loaded._base is not None and loaded._base.scales is not None
    return loaded, rows


def test_a_small_tier_in_use_is_scanned_from_a_float32_copy_with_the_same_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42: a long-lived process scans a small int8 tier from a float32 copy of its rows,
    kept until the tier is idle; every query scores exactly as the block-by-block scan a
    one-shot process makes (same ids, same float32 scores)."""
    import time

    from codeask.core.runtime import resident
    from codeask.core.storage import mapped_rows

    loaded, rows = _loaded_quantized(tmp_path, 5000, 64)
    base = loaded._base
    assert base is not None
    queries = [rows[7], rows[4000], _rows(1, 64, seed=9)[0]]
    monkeypatch.setattr(resident, "_one_shot", True)
    block_by_block = [loaded.query(q, 50) for q in queries]
    assert base.wide() is None  # a one-shot process keeps no copy
    monkeypatch.setattr(resident, "_one_shot", False)

    from_copy = [loaded.query(q, 50) for q in queries]

    assert from_copy == block_by_block
    wide = base.wide()
    assert wide is not None and wide.dtype == np.float32 and wide.shape == (5000, 64)
    assert base.release_if_idle(time.monotonic() + mapped_rows.IDLE_SECONDS + 1)
    assert base._wide is None  # dropped with the pages; the next scan copies again
    assert loaded.query(queries[0], 50) == block_by_block[0]


def test_float32_rows_keep_no_copy(tmp_path: Path) -> None:
    rows = _rows(500, 16)
    loaded = VectorIndex.load(
        _saved(tmp_path, rows, list(range(1, 501))), 16, 1524, set(range(1, 501))
    )
    assert loaded.query(rows[9], 3)[0][0] == 10
    assert loaded._base is not None and loaded._base.wide() is None


def test_a_tier_past_the_copy_size_is_scanned_block_by_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codeask.core.storage import mapped_rows

    loaded, rows = _loaded_quantized(tmp_path, 2000, 32)
    monkeypatch.setattr(mapped_rows, "WIDE_BYTES", 2000 * 32 * 4 - 1)
    assert loaded.query(rows[3], 5)[0][0] == 4
    assert loaded._base is not None and loaded._base.wide() is None
