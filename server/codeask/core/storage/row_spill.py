"""A vector tier's rows moved out of its in-memory tail into an unlinked file in the index folder.

Why (issue 42): a first pass added every new row to the tier's in-memory tail, which doubled its
arrays as it grew and kept a Python dict entry a row: on the Linux kernel's 1.28M static rows
that was the indexing process's last ~800 MB (the peak of the whole pass). Now the tail holds at
most `SPILL_ROWS` rows (vectors.py); past that they are appended here as stored (int8 or
float32), and only their ids (8 bytes, numpy) and scales (4 bytes) stay in memory. A save
streams them into the base block by block (`blocks`); a query scores them a block at a time.

The file is created unlinked (`tempfile.TemporaryFile` in the index folder: on disk, never a
tmpfs), so a kill at any moment leaves nothing behind and no manifest ever names it; its space
is freed when the tier holding it goes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from codeask.core.storage.base_ids import BaseIds
from codeask.core.storage.quantized_rows import BLOCK_ROWS, dequantize, scores
from codeask.core.storage.vector_file import Stored


class RowSpill:
    """Rows appended to an unlinked file, looked up by id like a base (`BaseIds`); a row
    replaced or removed later becomes a hole (its id -1), as in a base."""

    def __init__(self, folder: Path, dim: int, dtype: np.dtype) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        # open as long as the spill lives (closed, and its space freed, when the tier goes)
        import tempfile  # only a long pass spills: not on a search's path (test_rest_imports)

        self._file = tempfile.TemporaryFile(prefix="vectors-spill-", dir=folder)  # noqa: SIM115
        self.dim, self.dtype = dim, np.dtype(dtype)
        self._row_bytes = dim * self.dtype.itemsize
        # ids and scales as appended, in arrays that double when full (`_used` rows count):
        # an append costs its own rows, not a copy of all before (1.29M rows: 1.11 -> 0.56 CPU-s)
        self._raw = np.zeros(0, np.int64)
        self._scales = np.zeros(0, np.float32) if self.dtype == np.int8 else None
        self._used = 0
        self._holes: list[int] = []  # rows replaced or removed since they were appended
        self._count = 0
        self._top = -1  # the highest id appended: a pass's fresh ids are above it
        self._ids: BaseIds | None = None  # the lookup, built when first needed after a change
        self._lock = threading.Lock()  # a status read (no store lock) may build it meanwhile

    def __len__(self) -> int:
        """Rows in the file, holes included."""
        return self._used

    @property
    def ids(self) -> BaseIds:
        """Which id each spilled row holds (-1: a hole), and the id -> row lookup."""
        with self._lock:
            if self._ids is None:
                keep = np.ones(self._used, dtype=bool)
                keep[self._holes] = False
                self._ids = BaseIds(self._raw[: self._used], keep)  # ascending: no sort
            return self._ids

    # ---- the id lookup a tier's `LiveIds` reads (as a base's `BaseIds`) ------------------------
    @property
    def count(self) -> int:
        """Rows that still count."""
        return self._count

    def row(self, chunk_id: int) -> int:
        """The row holding `chunk_id`, or -1."""
        return self.ids.row(chunk_id)

    def rows(self, chunk_ids: np.ndarray) -> np.ndarray:
        """The row of each of `chunk_ids` (-1 where it has none)."""
        return self.ids.rows(chunk_ids)

    def live(self) -> np.ndarray:
        """The ids that still count, in row order."""
        return self.ids.live()

    # ---- changing ------------------------------------------------------------------------------
    def append(self, stored: Stored) -> None:
        """Append rows as stored (their ids fresh here: none of them is spilled already)."""
        count = len(stored.ids)
        if not count:
            return
        rows = np.ascontiguousarray(stored.rows, dtype=self.dtype)
        self._write(rows, self._used * self._row_bytes)
        ids = np.asarray(stored.ids, dtype=np.int64)
        with self._lock:
            end = self._used + count
            self._raw = _room(self._raw, end)
            self._raw[self._used : end] = ids
            if self._scales is not None:
                self._scales = _room(self._scales, end)
                self._scales[self._used : end] = 1.0 if stored.scales is None else stored.scales
            self._used, self._count = end, self._count + count
            self._top = max(self._top, int(ids.max()))
            self._ids = None

    def overwrite(self, stored: Stored) -> Stored:
        """Write the rows of ids spilled here again in place (as the tail does with a slot it
        holds, so a base keeps the same row order); returns the rest, for the tail."""
        if not len(stored.ids) or int(np.min(stored.ids)) > self._top:
            return stored  # fresh ids (a pass's new chunks): none is here, no lookup
        found = self.ids.rows(np.asarray(stored.ids, dtype=np.int64))
        here = found >= 0
        if not here.any():
            return stored
        rows = np.ascontiguousarray(stored.rows, dtype=self.dtype)
        for at, row in zip(np.flatnonzero(here).tolist(), found[here].tolist(), strict=True):
            self._write(rows[at], row * self._row_bytes)
            if self._scales is not None:
                self._scales[row] = 1.0 if stored.scales is None else stored.scales[at]
        rest = ~here
        scales = _masked(stored.scales, rest)
        return Stored(stored.ids[rest], stored.rows[rest], scales)

    def _write(self, rows: np.ndarray, at: int) -> None:
        """Write contiguous rows at byte `at` (from their own buffer: no copy)."""
        view = rows.data.cast("B")
        while view:  # a write may take fewer bytes than asked
            written = os.pwrite(self._file.fileno(), view, at)
            view, at = view[written:], at + written

    def punch(self, chunk_ids: np.ndarray) -> int:
        """The rows of `chunk_ids` become holes; returns how many did."""
        ids = self.ids
        found = ids.rows(chunk_ids)
        found = found[found >= 0]
        with self._lock:
            for row in found.tolist():
                ids.punch(row)
                self._holes.append(row)
            self._count -= len(found)
        return len(found)

    # ---- reading -------------------------------------------------------------------------------
    def _read(self, start: int, end: int) -> np.ndarray:
        """Rows `start:end` as stored (a copy read from the file)."""
        size = (end - start) * self._row_bytes
        data = os.pread(self._file.fileno(), size, start * self._row_bytes)
        if len(data) != size:
            raise OSError(f"vector spill file: {len(data)} bytes read at row {start}, not {size}")
        return np.frombuffer(data, dtype=self.dtype).reshape(end - start, self.dim)

    def _scales_of(self, start: int, end: int) -> np.ndarray | None:
        return None if self._scales is None else self._scales[start:end]

    def vector(self, chunk_id: int) -> np.ndarray | None:
        """A spilled chunk's vector as float32 (None when it is not here)."""
        row = self.ids.row(chunk_id)
        if row < 0:
            return None
        return dequantize(self._read(row, row + 1), self._scales_of(row, row + 1))[0]

    def blocks(self) -> Iterator[Stored]:
        """The rows that still count as stored, `BLOCK_ROWS` at a time, in row order."""
        held = self.ids.ids
        for start in range(0, len(held), BLOCK_ROWS):
            end = min(start + BLOCK_ROWS, len(held))
            ids = held[start:end]
            mask = ids >= 0
            scales = self._scales_of(start, end)
            yield Stored(ids[mask], self._read(start, end)[mask], _masked(scales, mask))

    def scores(self, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(every row's score, its id: -1 for a hole), reading one block at a time."""
        held = self.ids.ids
        out = np.empty(len(held), dtype=np.float32)
        for start in range(0, len(held), BLOCK_ROWS):
            end = min(start + BLOCK_ROWS, len(held))
            out[start:end] = scores(self._read(start, end), self._scales_of(start, end), unit)
        return out, held


def _room(array: np.ndarray, size: int) -> np.ndarray:
    """`array`, or a copy twice as long when it holds fewer than `size` items."""
    if size <= len(array):
        return array
    grown = np.empty(max(size, 2 * len(array)), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


def _masked(scales: np.ndarray | None, mask: np.ndarray) -> np.ndarray | None:
    return None if scales is None else scales[mask]
