"""Issue 44, LAT: a search reads its ~300 candidates' chunks in one batch (`ChunkMap.get_many`):
one bisection of the id table and one indexing of each record table for the lot, then each
record checked and decoded. It must read exactly what one `get` per id reads: the base, the
in-memory delta, the spill file, removed and unknown ids, and a damaged record (reported once,
read as absent, its neighbours still read)."""

from __future__ import annotations

from pathlib import Path

import msgspec
from tests.unit.test_chunk_records_compressed import long_chunks

from codeask.core.records import Chunk
from codeask.core.storage.chunk_file import ChunkFile, ChunkFileWriter
from codeask.core.storage.chunk_map import ChunkMap


def chunk(n: int) -> Chunk:
    """Chunk `n`: a function long enough that its record is stored compressed."""
    return msgspec.structs.replace(long_chunks(n)[-1], id=n)


def base_file(path: Path, ids: list[int]) -> ChunkFile:
    with path.open("wb") as handle:
        writer = ChunkFileWriter(handle)
        for n in ids:
            writer.add(chunk(n))
        writer.finish()
    return ChunkFile(path)


def damage_record(path: Path, base: ChunkFile, row: int) -> None:
    """Flip one byte in the middle of the record at `row` (its crc32 no longer matches)."""
    record = base.raw(row)
    data = bytearray(path.read_bytes())
    at = bytes(data).index(record)
    data[at + len(record) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_batch_reads_what_one_get_per_id_reads(tmp_path: Path) -> None:
    base = base_file(tmp_path / "chunks.rec", list(range(10, 60, 2)))
    chunks = ChunkMap(base)
    chunks.spill_dir = tmp_path
    chunks.spill_at = 4
    for n in (101, 102, 103, 104):  # spilled to disk at the fourth
        chunks[n] = chunk(n)
    chunks[105] = chunk(105)  # in memory
    chunks[20] = msgspec.structs.replace(chunk(20), text="def settle_20(): return 0")  # replaced
    chunks.pop(30)  # removed from the base
    assert chunks.spill is not None and len(chunks.spill) == 4
    asked = [58, 11, 20, 30, 101, 105, 10, 9999, 104, 44, 20, -1, 0]

    batch = chunks.get_many(asked)

    one_by_one = {i: c for i in asked if (c := chunks.get(i)) is not None}
    assert batch == one_by_one
    assert list(batch) == [58, 20, 101, 105, 10, 104, 44]  # the order asked, absent ones left out
    assert batch[20].text == "def settle_20(): return 0"
    assert chunks.get_many([]) == {}


def test_a_damaged_record_in_a_batch_is_reported_once_and_its_neighbours_still_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chunks.rec"
    ids = list(range(1, 21))
    damage_record(path, base_file(path, ids), 6)  # chunk 7
    chunks = ChunkMap(ChunkFile(path))
    reported: list[int] = []
    chunks.on_damage = reported.append

    first = chunks.get_many(ids)
    again = chunks.get_many(ids)

    assert list(first) == [i for i in ids if i != 7]
    assert first == again == {i: chunk(i) for i in ids if i != 7}
    assert reported == [7] and set(chunks.damaged) == {7}
    assert chunks.get(7) is None


def test_an_empty_base_reads_nothing(tmp_path: Path) -> None:
    chunks = ChunkMap(base_file(tmp_path / "chunks.rec", []))
    chunks[3] = chunk(3)
    assert chunks.get_many([1, 3, 2]) == {3: chunk(3)}
