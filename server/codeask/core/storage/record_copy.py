"""Chunk records copied from one chunk file to another in runs of adjacent records.

Why (issue 42): the save that ends a first pass copies every record of the pass's spill and of
the previous base into the new `chunks.rec`, and it did so one record at a time (a read, a
crc32, a write and five array appends: ~3.4 us a record, 1.5 of the 6.2 CPU-s of a 444k-chunk
pass's final save). Records that lie end to end are now read and written as one run of bytes,
each record's crc32 still checked, their table entries appended in bulk: the file written is
byte for byte the one the record-at-a-time copy wrote. A run that fails a check is copied again
record by record by the caller's own path, which decides what damage costs.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

#: A run is read and written in pieces of at most this many bytes (bounded memory).
RUN_BYTES = 4 << 20


class RunWriter(Protocol):
    """The chunk file writer's bulk append (chunk_file.ChunkFileWriter)."""

    def add_run(self, ids: np.ndarray, lengths: np.ndarray, crcs: np.ndarray, data: bytes) -> None:
        """Append adjacent checked records as one write."""
        ...


@dataclass(frozen=True)
class Records:
    """The records to copy, in the order they are written: id, offset, length, crc32 each."""

    ids: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    crcs: np.ndarray


def runs(offsets: np.ndarray, lengths: np.ndarray, limit: int = RUN_BYTES) -> list[tuple[int, int]]:
    """(first, end) positions of records lying end to end in their file, at most `limit` bytes
    from a run's first record to a piece's (a longer record is a piece of its own)."""
    count = len(offsets)
    if not count:
        return []
    offsets = offsets.astype(np.int64)
    new = np.ones(count, dtype=bool)
    new[1:] = offsets[1:] != offsets[:-1] + lengths[:-1].astype(np.int64)
    stretch_start = offsets[np.flatnonzero(new)][np.cumsum(new) - 1]
    piece = (offsets - stretch_start) // limit
    new[1:] |= piece[1:] != piece[:-1]
    bounds = [*np.flatnonzero(new).tolist(), count]
    return list(itertools.pairwise(bounds))


def intact(data: bytes, lengths: list[int], crcs: list[int]) -> bool:
    """Whether `data` is the records of `lengths`, end to end, each matching its crc32."""
    if len(data) != sum(lengths):
        return False
    view, at = memoryview(data), 0
    for length, crc in zip(lengths, crcs, strict=True):
        if zlib.crc32(view[at : at + length]) != crc:
            return False
        at += length
    return True


def copy_records(
    writer: RunWriter,
    records: Records,
    read: Callable[[int, int], bytes],
    one: Callable[[int], None],
) -> None:
    """Copy `records` into `writer` run by run (`read(offset, size)` reads the source file);
    a run failing a check goes through `one(position)` record by record instead."""
    for first, end in runs(records.offsets, records.lengths):
        lengths = records.lengths[first:end]
        crcs = records.crcs[first:end]
        start = int(records.offsets[first])
        data = read(start, int(records.offsets[end - 1]) - start + int(lengths[-1]))
        if intact(data, lengths.tolist(), crcs.tolist()):
            writer.add_run(records.ids[first:end], lengths, crcs, data)
            continue
        for position in range(first, end):
            one(position)
