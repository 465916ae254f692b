"""Issue 42, SAVES: a save copies the spill's and the old base's chunk records in runs of
adjacent records (record_copy.py), and the file it writes is byte for byte the one the
record-at-a-time copy wrote; a damaged record still costs only itself."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
from tests.unit.test_chunk_spill import chunk as spill_chunk

from codeask.core.records import Chunk
from codeask.core.storage.chunk_file import ChunkFile, ChunkFileWriter, symbol_hash, symbol_of
from codeask.core.storage.chunk_map import ChunkMap
from codeask.core.storage.record_copy import runs


def chunk(chunk_id: int, version: int = 0) -> Chunk:
    """test_chunk_spill's chunk, its text longer and `version` in its name (a re-indexed file);
    every third one defines no symbol."""
    made = spill_chunk(chunk_id)
    text = f"def f{chunk_id}_{version}():\n    return {chunk_id * (version + 1)}\n" * 3
    return msgspec.structs.replace(made, text=text, symbol=made.symbol if chunk_id % 3 else "")


def one_at_a_time(chunks: ChunkMap, path: Path) -> None:
    """The copy as saves made it before record_copy.py: a read, a check and a write a record."""
    with path.open("wb") as handle:
        writer = ChunkFileWriter(handle)
        if chunks.base is not None:
            base = chunks.base
            for row in chunks.base_rows().tolist():
                writer.add_raw(int(base.ids[row]), base.raw(row), None, base.crc(row))
            gone = np.fromiter(chunks.removed, dtype=np.int64, count=len(chunks.removed))
            writer.add_symbols(*base.symbols_without(gone))
        spill = chunks.spill
        if spill is not None:
            for row in spill.live_rows():
                record = spill.decode(row)
                name = symbol_of(record)
                sym = symbol_hash(name) if name else None
                writer.add_raw(int(record.id or 0), spill.raw(row), sym)
        for each in chunks.added.values():
            writer.add(each)
        writer.finish()


def grown(tmp_path: Path, base: Path | None, ids: range, dropped: list[int]) -> ChunkMap:
    """A map over `base` that spills (a long pass) with `ids` written and `dropped` popped."""
    chunks = ChunkMap(ChunkFile(base) if base is not None else None)
    chunks.spill_dir, chunks.spill_at = tmp_path, 64
    for chunk_id in ids:
        chunks[chunk_id] = chunk(chunk_id, 1 if base is not None and chunk_id < 400 else 0)
    for chunk_id in dropped:  # a file indexed again in the same pass, or removed
        chunks.pop(chunk_id)
    return chunks


def test_a_save_copies_records_in_runs_byte_for_byte_as_one_at_a_time(tmp_path: Path) -> None:
    first = grown(tmp_path, None, range(1, 1201), [5, 70, 71, 72, 1199])
    assert first.spill is not None and first.added  # spilled and in memory both
    first.write_base(tmp_path / "gen1.rec")
    one_at_a_time(first, tmp_path / "gen1-old.rec")
    assert (tmp_path / "gen1.rec").read_bytes() == (tmp_path / "gen1-old.rec").read_bytes()
    first.close()
    # the next save copies the first base (some of its chunks replaced) and a new spill
    second = grown(tmp_path, tmp_path / "gen1.rec", range(300, 2501), [301, 2000, 2001])
    second.write_base(tmp_path / "gen2.rec")
    one_at_a_time(second, tmp_path / "gen2-old.rec")
    assert (tmp_path / "gen2.rec").read_bytes() == (tmp_path / "gen2-old.rec").read_bytes()
    saved = ChunkFile(tmp_path / "gen2.rec")
    assert len(saved) == 2500 - 3 - 4  # 5, 70, 71, 72 dropped by the first pass
    assert saved.decode(int(saved.positions(np.array([350]))[0])) == chunk(350, 1)
    second.close()


def test_a_damaged_base_record_costs_only_itself_when_copied_in_runs(tmp_path: Path) -> None:
    first = ChunkMap()
    for chunk_id in range(1, 501):
        first[chunk_id] = chunk(chunk_id)
    first.write_base(tmp_path / "base.rec")
    base = ChunkFile(tmp_path / "base.rec")
    row = int(base.positions(np.array([250]))[0])
    at = int(base._offsets[row]) + 3
    del base
    data = bytearray((tmp_path / "base.rec").read_bytes())
    data[at] ^= 0xFF  # one record of a run damaged on disk
    (tmp_path / "base.rec").write_bytes(bytes(data))
    damaged: list[int] = []
    chunks = ChunkMap(ChunkFile(tmp_path / "base.rec"))
    chunks.on_damage = damaged.append
    chunks[501] = chunk(501)
    chunks.write_base(tmp_path / "next.rec")
    saved = ChunkFile(tmp_path / "next.rec")
    assert damaged == [250]
    assert saved.ids.tolist() == [i for i in range(1, 502) if i != 250]
    assert all(saved.decode(r).id == int(saved.ids[r]) for r in range(len(saved)))
    chunks.close()


def test_runs_group_adjacent_records_and_cut_at_gaps_and_the_size_bound() -> None:
    offsets = np.array([8, 18, 31, 100, 110, 120, 130], dtype=np.int64)
    lengths = np.array([10, 12, 5, 10, 10, 10, 10], dtype=np.int64)
    assert runs(offsets, lengths) == [(0, 2), (2, 3), (3, 7)]
    assert runs(offsets, lengths, limit=20) == [(0, 2), (2, 3), (3, 5), (5, 7)]
    assert runs(offsets[:0], lengths[:0]) == []
