"""Atomic snapshots; damaged files are detected and lead to a clean rebuild, never a crash."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from codeask.core.records import Chunk, FileRecord
from codeask.core.storage import snapshot
from codeask.core.storage.catalog import COMPACT_MIN
from codeask.core.storage.store import IndexStore

DIM = 8


def unit_rows(n: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def window_chunks(ids: list[int]) -> list[Chunk]:
    """One-line window chunks of a.py, each with its id as text."""
    return [
        Chunk(
            id=i,
            path="a.py",
            language="python",
            kind="window",
            start_line=1,
            end_line=1,
            text=str(i),
        )
        for i in ids
    ]


def filled_store(folder: Path) -> IndexStore:
    store = IndexStore(folder, folder.parent, "model-a", DIM)
    ids = store.new_ids(3)
    chunks = [
        Chunk(
            id=i,
            path="a.py",
            language="python",
            kind="function",
            start_line=n * 10 + 1,
            end_line=n * 10 + 5,
            text=f"def f{n}(): pass",
            symbol=f"f{n}",
        )
        for n, i in enumerate(ids)
    ]
    store.replace_file(FileRecord(path="a.py", size=10, mtime_ns=1, sha256="x"), chunks)
    store.add_vectors(ids, unit_rows(3))
    store.save()
    return store


def test_snapshot_round_trip(tmp_path: Path) -> None:
    store = filled_store(tmp_path / "idx")
    loaded, reason = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert reason == ""
    assert loaded.chunks.keys() == store.chunks.keys()
    assert loaded.files["a.py"].chunk_ids == store.files["a.py"].chunk_ids
    assert loaded.vectors.live == store.vectors.live
    query = unit_rows(3)[1]
    assert loaded.vectors.query(query, 1)[0][0] == store.files["a.py"].chunk_ids[1]


def test_model_change_starts_clean_with_reason(tmp_path: Path) -> None:
    filled_store(tmp_path / "idx")
    loaded, reason = IndexStore.open(tmp_path / "idx", tmp_path, "model-b", DIM)
    assert "model-a" in reason and "model-b" in reason
    assert loaded.chunks == {}


@pytest.mark.parametrize("name", ["vectors.npz", "chunks.rec", "files.msgpack"])
def test_truncated_component_is_detected(tmp_path: Path, name: str) -> None:
    store = filled_store(tmp_path / "idx")
    live = tmp_path / "idx" / f"gen-{store.generation:06d}" / name
    data = live.read_bytes()
    live.unlink()  # break the hard link so only this snapshot's file changes
    live.write_bytes(data[: len(data) // 2])
    loaded, reason = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert name in reason and "truncated" in reason
    if name == "vectors.npz":  # only the vectors are lost: chunks stay, they embed again
        assert loaded.chunks.keys() == store.chunks.keys() and not loaded.vectors.live
    else:
        assert loaded.chunks == {}
    assert loaded.next_id == store.next_id  # ids continue: never reused after a rebuild


def test_corrupted_same_size_file_fails_checksum(tmp_path: Path) -> None:
    store = filled_store(tmp_path / "idx")
    live = tmp_path / "idx" / f"gen-{store.generation:06d}" / "chunks.rec"
    data = bytearray(live.read_bytes())
    data[len(data) // 2] ^= 0xFF
    live.unlink()
    live.write_bytes(bytes(data))
    _, reason = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert "checksum" in reason


def test_dangling_pointer_is_a_clean_start(tmp_path: Path) -> None:
    filled_store(tmp_path / "idx")
    (tmp_path / "idx" / "CURRENT").write_text("gen-999999")
    loaded, reason = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert "missing snapshot" in reason
    assert loaded.files == {}


def test_leftover_temp_snapshot_is_ignored(tmp_path: Path) -> None:
    """A kill during save leaves a gen-N.tmp folder; the previous snapshot stays live."""
    store = filled_store(tmp_path / "idx")
    partial = tmp_path / "idx" / f"gen-{store.generation + 1:06d}.tmp"
    partial.mkdir()
    (partial / "chunks.rec").write_bytes(b"\x00garbage")
    loaded, reason = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert reason == ""
    assert len(loaded.chunks) == 3
    loaded.save()
    assert not partial.exists()


def test_removed_vectors_stay_removed_after_reload(tmp_path: Path) -> None:
    store = filled_store(tmp_path / "idx")
    first = store.files["a.py"].chunk_ids[0]
    store.replace_file(FileRecord(path="a.py", size=1, mtime_ns=2, sha256="y"), [])
    store.save()
    loaded, _ = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert first not in loaded.vectors.live
    assert loaded.vectors.query(unit_rows(3)[0], 3) == []


def test_compaction_drops_marked_vectors(tmp_path: Path) -> None:
    store = IndexStore(tmp_path / "idx", tmp_path, "model-a", DIM)
    ids = store.new_ids(1000)
    store.replace_file(FileRecord(path="a.py", size=1, mtime_ns=1, sha256="x"), window_chunks(ids))
    store.add_vectors(ids, unit_rows(1000, seed=3))
    kept = store.new_ids(100)
    store.replace_file(FileRecord(path="a.py", size=2, mtime_ns=2, sha256="z"), window_chunks(kept))
    store.add_vectors(kept, unit_rows(100, seed=4))
    assert store.vectors.needs_compaction()
    store.save()
    assert store.vectors.deleted == 0
    assert store.vectors.live == set(kept)
    assert store.vectors.query(unit_rows(100, seed=4)[5], 1)[0][0] == kept[5]


def test_loaded_chunks_stay_on_disk_until_read(tmp_path: Path) -> None:
    """Chunks are mapped, not decoded at open (issue 42; issue 29 shared the strings of a
    decoded snapshot); file records share their path with their key."""
    store = IndexStore(tmp_path / "idx", tmp_path, "model-a", DIM)
    for name in ("a.py", "pkg/b.py"):
        ids = store.new_ids(4)
        chunks = [
            Chunk(
                id=i,
                path=name,
                language="python",
                kind="method",
                start_line=n + 1,
                end_line=n + 1,
                text=f"def m{n}(self): pass",
                symbol=f"m{n}",
                parent="Widget",
            )
            for n, i in enumerate(ids)
        ]
        store.replace_file(FileRecord(path=name, size=1, mtime_ns=1, sha256="x"), chunks)
    store.save()
    loaded, _ = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert loaded.chunks.added == {}  # nothing decoded at open: every chunk is in the base
    chunks = list(loaded.chunks.values())
    assert sorted(c.path for c in chunks) == ["a.py"] * 4 + ["pkg/b.py"] * 4
    assert all(r.path is p for p, r in loaded.files.items())


# ---- the chunk base and its delta (issue 42) ---------------------------------------------
def _component(store: IndexStore, name: str) -> Path:
    return store.folder / f"gen-{store.generation:06d}" / name


def test_one_file_edit_writes_only_the_chunk_delta(tmp_path: Path) -> None:
    store = filled_store(tmp_path / "idx")
    base = _component(store, "chunks.rec").stat()
    ids = store.new_ids(1)
    edited = window_chunks(ids)
    store.replace_file(FileRecord(path="a.py", size=11, mtime_ns=2, sha256="y"), edited)
    store.save()
    after = _component(store, "chunks.rec").stat()
    assert (after.st_ino, after.st_size) == (base.st_ino, base.st_size)  # linked, not rewritten
    assert _component(store, "chunks_delta.msgpack").stat().st_size < 200
    loaded, reason = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert reason == ""
    assert list(loaded.chunks.values()) == edited
    assert loaded.files["a.py"].chunk_ids == ids and len(loaded.chunks) == 1
    assert loaded.chunks.symbol_ids("f0") == []  # the removed chunks' names went with them


def test_symbol_ids_read_the_base_and_the_delta(tmp_path: Path) -> None:
    store = filled_store(tmp_path / "idx")
    first = store.files["a.py"].chunk_ids
    (new_id,) = store.new_ids(1)
    extra = Chunk(
        id=new_id, path="b.py", language="python", kind="function", start_line=1, end_line=2,
        text="def f0(): return 1", symbol="f0",
    )  # fmt: skip
    store.replace_file(FileRecord(path="b.py", size=1, mtime_ns=1, sha256="z"), [extra])
    assert store.chunks.symbol_ids("f0") == [first[0], new_id]
    store.save()
    loaded, _ = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert loaded.chunks.symbol_ids("f0") == [first[0], new_id]
    assert loaded.chunks.symbol_ids("f2") == [first[2]]
    assert loaded.chunks.symbol_ids("nothing") == []


def test_a_grown_delta_is_folded_into_a_new_base(tmp_path: Path) -> None:
    store = filled_store(tmp_path / "idx")
    base = _component(store, "chunks.rec").stat().st_ino
    ids = store.new_ids(COMPACT_MIN + 1)
    store.replace_file(FileRecord(path="w.py", size=1, mtime_ns=1, sha256="w"), window_chunks(ids))
    store.save()
    assert _component(store, "chunks.rec").stat().st_ino != base
    assert store.chunks.added == {} and len(store.chunks) == len(ids) + 3
    loaded, _ = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert loaded.chunks.added == {} and loaded.chunks.keys() == store.chunks.keys()
    assert loaded.chunks[ids[-1]].text == str(ids[-1])


def test_damaged_record_in_a_big_chunk_base_is_reported_on_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Past CHECK_AT_OPEN_BYTES (lowered here to 0) the base is not hashed at open: a damaged
    record is found when read, reported, read as absent, and its file is indexed again."""
    monkeypatch.setattr(snapshot, "CHECK_AT_OPEN_BYTES", 0)
    store = filled_store(tmp_path / "idx")
    damaged_id = store.files["a.py"].chunk_ids[1]
    path = _component(store, "chunks.rec")
    data = bytearray(path.read_bytes())
    data[data.index(b"def f1(): pass") + 4] ^= 0x01  # same size, still valid msgpack
    path.unlink()
    path.write_bytes(bytes(data))
    loaded, reason = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert reason == ""  # only the size was checked at open
    with caplog.at_level(logging.WARNING):
        assert loaded.chunks.get(damaged_id) is None
    assert any(
        "chunks.rec" in r.getMessage() and "checksum" in r.getMessage() for r in caplog.records
    )
    assert [c.symbol for c in loaded.chunks.values()] == ["f0", "f2"]  # never the damaged bytes
    assert loaded.files["a.py"].size == -1  # the next pass indexes the file again
    loaded.save()  # the new base leaves the damaged record out
    again, reason = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert reason == "" and damaged_id not in again.chunks and not again.chunks.damaged


def test_damaged_big_vector_tier_is_found_after_the_open_and_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A big tier is size-checked at open and hashed by a background thread: a damaged one is
    dropped with a logged reason (its vectors are computed again), the chunks stay."""
    store = _damaged_vectors(tmp_path, monkeypatch)
    with caplog.at_level(logging.WARNING):
        loaded, _ = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
        assert loaded.checks.verifier is not None  # the open read the size only
        loaded.checks.verifier.join()
    dropped = "vectors.npz fails its checksum (corrupted); dropped the vectors tier"
    assert any(dropped in r.getMessage() for r in caplog.records)
    assert not loaded.vectors.live and "vectors" in loaded.tiers.changed
    assert loaded.chunks.keys() == store.chunks.keys()
    assert sorted(loaded.pending_ids()) == sorted(store.chunks.keys())  # embedded again


@pytest.mark.parametrize("pad", range(8))
def test_a_chunk_base_bisects_an_aligned_id_table_wherever_its_records_end(
    tmp_path: Path, pad: int
) -> None:
    """The id and symbol tables follow variable-length records, so they start at any byte; numpy
    copies an unaligned table whole on every bisection (a search's ~400 chunk reads were 0.3-0.6 s
    through the daemon on 158,812 chunks, issue 42). Whatever the records' length, the tables a
    lookup bisects are aligned (written so, or copied once from a file written before), and
    every chunk and symbol is found."""
    from codeask.core.storage.chunk_file import ChunkFile, ChunkFileWriter

    chunks = [
        Chunk(
            id=3 * i + 1,
            path=f"m{i}.py",
            language="python",
            kind="function",
            start_line=1,
            end_line=2,
            text="def f():\n    pass" + "#" * (pad if i == 0 else 0),
            symbol=f"name{i}",
        )
        for i in range(40)
    ]
    path = tmp_path / "chunks.rec"
    with path.open("wb") as handle:
        writer = ChunkFileWriter(handle)
        for chunk in chunks:
            writer.add(chunk)
        writer.finish()
    assert ChunkFile(path).ids.flags.aligned, "a new file's tables are written aligned"
    for base in (ChunkFile(path), ChunkFile(_unpadded(path))):
        assert [base.get(c.id) for c in chunks] == chunks and base.get(2) is None
        assert [base.symbol_ids(c.symbol).tolist() for c in chunks] == [[c.id] for c in chunks]
        assert base._id_keys is not None and base._id_keys.flags.aligned
        assert base._sym_keys is not None and base._sym_keys.flags.aligned


def _unpadded(path: Path) -> Path:
    """The chunk file as written before its tables were aligned: right after the last record."""
    from codeask.core.storage.chunk_file import _FOOTER

    data = path.read_bytes()
    n, m, start, crc, magic = _FOOTER.unpack_from(data, len(data) - _FOOTER.size)
    offsets = np.frombuffer(data, "<i8", count=n, offset=start + 8 * n)
    lengths = np.frombuffer(data, "<u4", count=n, offset=start + 16 * n)
    end = int((offsets + lengths).max())
    tables = data[start : len(data) - _FOOTER.size]
    old = path.with_name("old-" + path.name)
    old.write_bytes(data[:end] + tables + _FOOTER.pack(n, m, end, crc, magic))
    return old


def _damaged_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> IndexStore:
    """A saved store whose big vector tier has one flipped bit in a row (it still loads)."""
    monkeypatch.setattr(snapshot, "CHECK_AT_OPEN_BYTES", 0)
    store = filled_store(tmp_path / "idx")
    path = _component(store, "vectors.npz")
    data = bytearray(path.read_bytes())
    data[data.index(unit_rows(3)[1].tobytes()) + 1] ^= 0x01
    path.unlink()
    path.write_bytes(bytes(data))
    return store


def test_a_writer_hashes_its_big_tiers_when_it_releases_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`hold_checks` (a writer's open): no hash runs until `release_checks` (after its first
    pass; on the kernel the hash is ~2 CPU-s racing the pass), then the damage is found."""
    _damaged_vectors(tmp_path, monkeypatch)
    loaded, reason = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM, hold_checks=True)
    assert reason == "" and loaded.checks.verifier is None and loaded.vectors.live
    with caplog.at_level(logging.WARNING):
        loaded.release_checks()
        assert loaded.checks.verifier is not None
        loaded.checks.verifier.join()
    assert any("vectors.npz fails its checksum" in r.getMessage() for r in caplog.records)
    assert not loaded.vectors.live and not loaded.checks.held
    loaded.release_checks()  # once: nothing is held any more


def test_a_save_folding_a_held_tier_hashes_it_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A save that rewrites a tier whose hash is still held checks it before: the damaged
    rows are dropped, never written into a new base under a fresh hash."""
    _damaged_vectors(tmp_path, monkeypatch)
    loaded, _ = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM, hold_checks=True)
    ids = loaded.new_ids(3)
    record = FileRecord(path="a.py", size=11, mtime_ns=2, sha256="y")
    loaded.replace_file(record, window_chunks(ids))  # three rows out, three in: the tier folds
    loaded.add_vectors(ids, unit_rows(3, seed=1))
    with caplog.at_level(logging.WARNING):
        loaded.save()
    assert any("vectors.npz fails its checksum" in r.getMessage() for r in caplog.records)
    again, reason = IndexStore.open(tmp_path / "idx", tmp_path, "model-a", DIM)
    assert reason == "" and again.checks.verifier is not None
    again.checks.verifier.join()
    assert not again.vectors.live and not again.recovered  # clean and empty: embedded again
    assert sorted(again.pending_ids()) == ids
