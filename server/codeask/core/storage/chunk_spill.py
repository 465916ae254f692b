"""Chunk records of a long pass, spilled to a temporary file in the index folder as they come.

A first pass used to hold every new `Chunk` in memory until its save (~1.8 GB on the Linux
kernel, issue 42). The chunk map now moves its delta here once it holds `SPILL_AT` chunks: each
record is encoded and appended to `spill-*.rec`, and only its id, offset, length, crc32 and
symbol hash stay in memory (typed arrays, ~32 bytes a chunk). The save that writes the next base
copies the records as they are (no decode), then the file is deleted.

The file is never named by a manifest, so a kill mid-pass leaves the previous generation loading
as it was; the writer deletes a dead pass's leftover file when it next spills (only the holder of
the writer lock writes an index folder, so no other live pass owns one).
"""

from __future__ import annotations

import contextlib
import os
import threading
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from codeask.core.records import Chunk
from codeask.core.storage import record_codec
from codeask.core.storage.chunk_file import (
    ChunkDamaged,
    ChunkFileWriter,
    RecordTable,
    symbol_hash,
    symbol_of,
)
from codeask.core.storage.record_copy import Records, copy_records

#: Chunks the map's in-memory delta may hold before it is spilled: ~1.4 KB a decoded chunk on
#: the kernel, so ~20 MB; a pass of fewer chunks (an edit, a branch switch) never spills.
SPILL_AT = 16_384
#: How the spill files of an index folder are named.
SPILL_PREFIX = "spill-"
SPILL_SUFFIX = ".rec"


def remove_leftovers(folder: Path) -> None:
    """Delete spill files a killed pass left in `folder` (the caller holds the writer lock)."""
    for entry in folder.glob(f"{SPILL_PREFIX}*{SPILL_SUFFIX}"):
        entry.unlink(missing_ok=True)


class ChunkSpill:
    """Encoded chunk records appended to a temporary file; read back one at a time by id."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        remove_leftovers(folder)
        import tempfile  # only a first pass past its spill size writes one: not on a search's path

        fd, name = tempfile.mkstemp(prefix=SPILL_PREFIX, suffix=SPILL_SUFFIX, dir=folder)
        self.path = Path(name)
        self._fd = fd
        self._at = 0
        self._table = RecordTable()
        #: Spilled ids removed since (a file indexed twice in one pass): read as absent.
        self.gone: set[int] = set()
        #: Whether ids were appended ascending (a pass's fresh ids are): then no sort is needed.
        self._ascending = True
        self._sorted: tuple[np.ndarray, np.ndarray | None] | None = None
        #: Held while the typed arrays grow or are copied: a copy exports their buffer, and an
        #: array exporting its buffer cannot grow (searches read while the pass writes).
        self._lock = threading.Lock()

    def add(self, chunks: Iterable[Chunk]) -> None:
        """Append the records of `chunks` (one write)."""
        with self._lock:
            self._add(chunks)

    def _add(self, chunks: Iterable[Chunk]) -> None:
        records: list[bytes] = []
        for chunk in chunks:
            if self._table.ids and chunk.id <= self._table.ids[-1]:
                self._ascending = False
            record = record_codec.encode(chunk)
            records.append(record)
            name = symbol_of(chunk)
            sym = symbol_hash(name) if name else None
            self._table.append(chunk.id, self._at, len(record), zlib.crc32(record), sym)
            self._at += len(record)
        data = memoryview(b"".join(records))
        while data:  # a write may take fewer bytes than asked
            data = data[os.write(self._fd, data) :]
        self._sorted = None

    def __len__(self) -> int:
        return len(self._table.ids) - len(self.gone)

    def _lookup(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(ids ascending, their rows or None when row = position): a copy, so the typed
        arrays can still grow (numpy's view of one would forbid it)."""
        with self._lock:
            return self._sorted or self._sort()

    def _sort(self) -> tuple[np.ndarray, np.ndarray | None]:
        if self._sorted is None:
            ids = np.array(self._table.ids, dtype=np.int64)
            if self._ascending:
                self._sorted = (ids, None)
            else:
                order = np.argsort(ids, kind="stable")
                self._sorted = (ids[order], order)
        return self._sorted

    def row(self, chunk_id: int) -> int:
        """The row of `chunk_id`, -1 when it is not here (or gone)."""
        if chunk_id in self.gone:
            return -1
        ids, order = self._lookup()
        at = int(np.searchsorted(ids, chunk_id))
        if at >= len(ids) or int(ids[at]) != chunk_id:
            return -1
        return at if order is None else int(order[at])

    def raw(self, row: int) -> bytes:
        """The checked bytes of the record at `row`."""
        data = os.pread(self._fd, self._table.lengths[row], self._table.offsets[row])
        if zlib.crc32(data) != self._table.crcs[row]:
            raise ChunkDamaged(f"{self.path.name}: chunk {self._table.ids[row]} fails its checksum")
        return data

    def decode(self, row: int) -> Chunk:
        """The chunk at `row`."""
        return record_codec.decode(self.raw(row))

    def live_rows(self) -> Iterator[int]:
        """Rows not gone, in the order they were spilled."""
        gone = self.gone
        return (row for row, i in enumerate(self._table.ids) if i not in gone)

    def live_ids(self) -> np.ndarray:
        """Ids not gone, in the order they were spilled."""
        with self._lock:
            ids = np.array(self._table.ids, dtype=np.int64)
        if not self.gone:
            return ids
        return ids[~np.isin(ids, np.fromiter(self.gone, np.int64, len(self.gone)))]

    def symbol_ids(self, name: str) -> list[int]:
        """Ids of the spilled chunks (not gone) defining `name`."""
        if not self._table.sym_hash:
            return []
        with self._lock:
            hashes = np.array(self._table.sym_hash, dtype=np.uint64)
            ids = np.array(self._table.sym_ids, dtype=np.int64)
        found = ids[hashes == np.uint64(symbol_hash(name))].tolist()
        return [i for i in found if i not in self.gone]

    def copy_to(self, writer: ChunkFileWriter) -> None:
        """Every record not gone into `writer`, as encoded (no decode), adjacent ones in runs
        (record_copy.py); a damaged record raises ChunkDamaged, as `raw` does."""
        with self._lock:  # copies: the typed arrays may grow again once this returns
            table = self._table
            ids = np.array(table.ids, dtype=np.int64)
            records = Records(
                ids,
                np.array(table.offsets, dtype=np.int64),
                np.array(table.lengths, dtype=np.int64),
                np.array(table.crcs, dtype=np.int64),
            )
            sym_hash = np.array(table.sym_hash, dtype=np.uint64)
            sym_ids = np.array(table.sym_ids, dtype=np.int64)
        if self.gone:
            gone = np.fromiter(self.gone, dtype=np.int64, count=len(self.gone))
            keep = np.flatnonzero(~np.isin(ids, gone))
            records = Records(*(part[keep] for part in vars(records).values()))
            kept = ~np.isin(sym_ids, gone)
            sym_hash, sym_ids = sym_hash[kept], sym_ids[kept]
        else:
            keep = np.arange(len(ids))

        def one(position: int) -> None:  # a run that failed a check: raises at the damage
            row = int(keep[position])
            writer.add_raw(int(ids[row]), self.raw(row), None, self._table.crcs[row])

        copy_records(writer, records, lambda start, size: os.pread(self._fd, size, start), one)
        writer.add_symbols(sym_hash, sym_ids)

    def discard(self) -> None:
        """Delete the file. Its descriptor stays open until this object goes, so a search
        still holding the map it belonged to reads on (the space is freed then)."""
        self.path.unlink(missing_ok=True)

    def __del__(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            os.close(self._fd)
