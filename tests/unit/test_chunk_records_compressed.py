"""Issue 42, DISK: chunk records are stored zstd-compressed, one record at a time (the first
pass through `codeask index` and `codeask search`; format tests with codeask's own writer)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import msgspec
import pytest

from codeask.core.records import Chunk
from codeask.core.storage import record_codec
from codeask.core.storage.chunk_file import (
    _FOOTER,
    MAGIC,
    MAGIC_PLAIN,
    ChunkDamaged,
    ChunkFile,
    ChunkFileWriter,
)
from codeask.core.storage.chunk_map import ChunkMap
from support.search_cli import search_hits

FILES = 12


def module_text(n: int) -> str:
    """A module of a few functions, each body different (so it is not one repeated string)."""
    return "\n\n".join(
        f"def settle_account_{n}_{f}(ledger, amount):\n"
        f'    """Move {f} units of job {n} into the ledger and report the balance."""\n'
        f"    total = ledger.balance + amount * {f + 3} - {n}\n"
        f"    for entry in ledger.entries[{f}:]:\n"
        f"        total -= entry.fee_{f} if entry.kind == 'fee_{n}' else 0\n"
        f"    ledger.record('settled_{n}_{f}', total)\n"
        f"    return total\n"
        for f in range(5)
    )


def chunk_base(root: Path) -> Path:
    """The chunks.rec of the one index of `root`."""
    (found,) = list(root.glob(".codeask/gen-*/chunks.rec"))
    return found


def test_a_first_pass_stores_its_chunk_records_compressed_and_search_reads_them(
    tmp_path: Path,
) -> None:
    files = {f"ledger/m{n:02d}.py": module_text(n) for n in range(FILES)}
    hits = search_hits(tmp_path, files, "settled_7_3")  # `codeask index`, then a search
    assert hits and hits[0]["relative_path"] == "ledger/m07.py"
    assert "def settle_account_7_3(ledger, amount):" in json.dumps(hits[0])

    path = chunk_base(tmp_path / "repo")
    assert path.read_bytes()[: len(MAGIC)] == MAGIC
    base = ChunkFile(path)
    chunks = [base.decode(row) for row in range(len(base))]
    assert len(chunks) >= FILES * 5
    for chunk in chunks:  # every record reads back to the lines of its file
        lines = files[chunk.path].splitlines()
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    stored = sum(len(base.raw(row)) for row in range(len(base)))
    plain = sum(len(msgspec.msgpack.encode(chunk)) for chunk in chunks)
    assert stored < 0.8 * plain, (stored, plain)


def long_chunks(count: int) -> list[Chunk]:
    return [
        Chunk(
            id=i + 1,
            path=f"ledger/m{i}.py",
            language="python",
            kind="function",
            start_line=1,
            end_line=7,
            text=module_text(i).split("\n\n")[0],
            symbol=f"settle_account_{i}_0",
        )
        for i in range(count)
    ]


def write_chunk_file(path: Path, chunks: list[Chunk]) -> None:
    with path.open("wb") as handle:
        writer = ChunkFileWriter(handle)
        for chunk in chunks:
            writer.add(chunk)
        writer.finish()


def test_a_chunk_file_of_plain_records_from_before_reads_and_compacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CQCHUNK1 file (plain msgpack records, as every index had before) is read as it is, and
    a compaction copies its records into a CQCHUNK2 file that reads the same."""
    chunks = long_chunks(30)
    old = tmp_path / "old.rec"
    monkeypatch.setattr(record_codec, "COMPRESS_FROM", 1 << 30)  # the writer of before
    write_chunk_file(old, chunks)
    monkeypatch.undo()
    data = bytearray(old.read_bytes())
    data[: len(MAGIC)] = MAGIC_PLAIN
    data[-len(MAGIC) :] = MAGIC_PLAIN
    old.write_bytes(bytes(data))

    base = ChunkFile(old)
    assert [base.get(c.id) for c in chunks] == chunks
    assert base.read_ids([c.id for c in chunks]) == [(c.id, c) for c in chunks]
    chunk_map = ChunkMap(base)
    chunk_map[999] = msgspec.structs.replace(long_chunks(31)[-1], id=999)
    new = tmp_path / "new.rec"
    chunk_map.write_base(new)
    assert new.read_bytes()[: len(MAGIC)] == MAGIC
    again = ChunkFile(new)
    assert [again.get(c.id) for c in chunks] == chunks and again.get(999) is not None
    assert again.symbol_ids("settle_account_3_0").tolist() == [4]


def test_a_damaged_compressed_record_is_reported_and_never_misread(tmp_path: Path) -> None:
    """A changed byte inside a compressed record fails its crc32; a frame that is broken yet
    matches its stored crc32 (written so) is reported unreadable: ChunkDamaged both times."""
    chunks = long_chunks(3)
    path = tmp_path / "chunks.rec"
    write_chunk_file(path, chunks)
    base = ChunkFile(path)
    record = base.raw(1)
    assert record[:4] == record_codec.ZSTD_MAGIC
    at = bytes(path.read_bytes()).index(record)

    data = bytearray(path.read_bytes())
    data[at + len(record) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ChunkDamaged, match="checksum"):
        ChunkFile(path).decode(1)
    assert_batch_read(ChunkFile(path), chunks, damaged_row=1, why="fails its checksum")

    # a broken frame header with the record's crc32 rewritten to match: zstd refuses the frame
    data[at + len(record) // 2] ^= 0x01
    data[at + 5] ^= 0xFF
    n, m, start, _, magic = _FOOTER.unpack_from(data, len(data) - _FOOTER.size)
    crc_at = start + 20 * n + 4  # ids, offsets, lengths, then row 1's crc32
    data[crc_at : crc_at + 4] = zlib.crc32(bytes(data[at : at + len(record)])).to_bytes(4, "little")
    tables = bytes(data[start : start + n * 24 + m * 16])
    data[-_FOOTER.size :] = _FOOTER.pack(n, m, start, zlib.crc32(tables), magic)
    path.write_bytes(bytes(data))
    damaged = ChunkFile(path)
    with pytest.raises(ChunkDamaged, match="unreadable"):
        damaged.decode(1)
    assert damaged.decode(0) == chunks[0] and damaged.decode(2) == chunks[2]
    assert_batch_read(ChunkFile(path), chunks, damaged_row=1, why="is unreadable")


def assert_batch_read(base: ChunkFile, chunks: list[Chunk], damaged_row: int, why: str) -> None:
    """A batch read (`read_ids`, a search's path) reports the damaged record as `why` and
    reads the others as they were written."""
    read = dict(base.read_ids([c.id for c in chunks]))
    for row, chunk in enumerate(chunks):
        if row == damaged_row:
            assert isinstance(read[chunk.id], ChunkDamaged) and why in str(read[chunk.id])
        else:
            assert read[chunk.id] == chunk
