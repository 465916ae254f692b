"""A vector tier's tail: the rows added since its base, in memory up to a bound, then spilled.

Why (issue 42): the tail was one matrix that doubled as it grew, with a Python dict entry a row;
a first pass put every row of the tree there (the Linux kernel's 1.28M static rows: the indexing
process's last ~800 MB). Given a spill folder, the tail now keeps at most `spill_rows` rows in
memory and moves them to a spill file (row_spill.py) when more come, so a pass holds one block
whatever the tree's size. A spilled row is still the tail's: replaced, it is written again in
place; removed, it becomes a hole; so the rows come out in the same order as without a spill and
a base written from them is the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from codeask.core.storage.quantized_rows import dequantize, scores
from codeask.core.storage.row_spill import RowSpill
from codeask.core.storage.vector_file import Stored


class VectorTail:
    """Rows by chunk id in slots (`slot`: id -> slot), and what a long pass spilled before them."""

    def __init__(self, dim: int, dtype: np.dtype, capacity: int) -> None:
        self.dim, self.dtype = dim, np.dtype(dtype)
        size = max(1, capacity)
        self._rows = np.zeros((size, dim), dtype=self.dtype)
        self._scales = np.zeros(size, dtype=np.float32)
        self._ids = np.full(size, -1, dtype=np.int64)
        self.used = 0
        #: The in-memory slot of each id held in memory.
        self.slot: dict[int, int] = {}
        #: Rows moved to a file (a long pass), or None.
        self.spill: RowSpill | None = None

    def held(self) -> int:
        """Rows held, holes included (memory and spill)."""
        return self.used + (len(self.spill) if self.spill is not None else 0)

    def capacity(self) -> int:
        """Rows the in-memory part has room for."""
        return len(self._ids)

    def put(self, stored: Stored, spill_dir: Path | None, spill_rows: int) -> None:
        """Put rows as stored (an id held already keeps its place); with a `spill_dir`, the
        in-memory rows move to the spill file first when these would pass `spill_rows`."""
        if spill_dir is not None and self.used + len(stored.ids) > spill_rows > 0:
            self._spill(spill_dir, spill_rows)
        if self.spill is not None:  # spilled rows are the tail's: written again in place
            stored = self.spill.overwrite(stored)
        ids = stored.ids.tolist()
        fresh = {chunk_id for chunk_id in ids if chunk_id not in self.slot}
        self._grow(self.used + len(fresh))
        for i, chunk_id in enumerate(ids):
            slot = self.slot.get(chunk_id)
            if slot is None:
                slot = self.slot[chunk_id] = self.used
                self._ids[slot] = chunk_id
                self.used += 1
            self._rows[slot] = stored.rows[i]
            self._scales[slot] = 1.0 if stored.scales is None else stored.scales[i]

    def _spill(self, folder: Path, bound: int) -> None:
        """Move the in-memory rows to the spill file; memory starts again, no larger than
        `bound` rows."""
        if not self.used:
            return
        if self.spill is None:
            self.spill = RowSpill(folder, self.dim, self.dtype)
        self.spill.append(self.in_memory())
        self.slot = {}
        self.used = 0
        if len(self._ids) > bound:  # one big batch grew it: back to the bound
            self._rows = np.zeros((bound, self.dim), dtype=self.dtype)
            self._scales = np.zeros(bound, dtype=np.float32)
            self._ids = np.full(bound, -1, dtype=np.int64)

    def _grow(self, needed: int) -> None:
        if needed <= len(self._ids):
            return
        size = max(needed, 2 * len(self._ids))
        rows = np.zeros((size, self.dim), dtype=self.dtype)
        rows[: self.used] = self._rows[: self.used]
        scales = np.zeros(size, dtype=np.float32)
        scales[: self.used] = self._scales[: self.used]
        ids = np.full(size, -1, dtype=np.int64)
        ids[: self.used] = self._ids[: self.used]
        self._rows, self._scales, self._ids = rows, scales, ids

    def remove(self, chunk_id: int) -> bool:
        """Forget `chunk_id` (its row becomes a hole); False when it is not here."""
        if self.spill is not None and self.spill.punch(np.array([chunk_id], np.int64)):
            return True
        slot = self.slot.pop(chunk_id, None)
        if slot is None:
            return False
        self._ids[slot] = -1
        self._rows[slot] = 0
        return True

    def in_memory(self) -> Stored:
        """The in-memory rows that still count, as stored (a copy)."""
        used = self.used
        mask = self._ids[:used] >= 0
        scales = self._scales[:used][mask] if self.dtype == np.int8 else None
        return Stored(self._ids[:used][mask], self._rows[:used][mask], scales)

    def blocks(self) -> Iterator[Stored]:
        """Every row that still counts, as stored: the spilled ones a block at a time, then
        the in-memory ones."""
        if self.spill is not None:
            yield from self.spill.blocks()
        yield self.in_memory()

    def joined(self) -> Stored:
        """Every row that still counts as one (a delta: small beside its base)."""
        parts = list(self.blocks())
        if len(parts) == 1:
            return parts[0]
        scales = [p.scales for p in parts if p.scales is not None]
        return Stored(
            np.concatenate([p.ids for p in parts]),
            np.concatenate([p.rows for p in parts]),
            np.concatenate(scales) if len(scales) == len(parts) else None,
        )

    def vector(self, chunk_id: int) -> np.ndarray | None:
        """`chunk_id`'s vector as float32, or None."""
        slot = self.slot.get(chunk_id)
        if slot is None:
            return self.spill.vector(chunk_id) if self.spill is not None else None
        scales = self._scales[slot : slot + 1] if self.dtype == np.int8 else None
        return dequantize(self._rows[slot : slot + 1], scales)[0]

    def scores(self, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(every row's score, its id: -1 for a hole): the spilled rows, then memory's."""
        used = self.used
        scales = self._scales[:used] if self.dtype == np.int8 else None
        found = scores(self._rows[:used], scales, unit)
        if self.spill is None:
            return found, self._ids[:used]
        spilled, spilled_ids = self.spill.scores(unit)
        return np.concatenate([spilled, found]), np.concatenate([spilled_ids, self._ids[:used]])
