"""The catalog's chunks: a mapped base file plus an in-memory delta, read like a dict.

The base (chunk_file.py) is rewritten only by a compaction; every edit since lands in the delta
(chunks added, base ids removed), which a save writes as one small component. So a one-file
edit writes kilobytes, and reading a chunk decodes that chunk only. A long pass's delta does not
stay in memory: past `SPILL_AT` chunks it goes to a spill file (chunk_spill.py) in `spill_dir`,
and the next save folds it into a new base.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import msgspec
import numpy as np

from codeask.core.records import Chunk
from codeask.core.storage.chunk_file import ChunkDamaged, ChunkFile, ChunkFileWriter, symbol_of
from codeask.core.storage.chunk_spill import SPILL_AT, ChunkSpill
from codeask.core.storage.record_copy import copy_records

log = logging.getLogger("codeask.core.indexer")


class ChunkDelta(msgspec.Struct, kw_only=True):
    """What changed since the base: chunks added (fresh ids) and base ids removed."""

    added: list[Chunk] = msgspec.field(default_factory=list)
    removed: list[int] = msgspec.field(default_factory=list)


class ChunkMap:
    """Chunks by id over a base file and a delta; only what is asked for is decoded."""

    #: Chunks the in-memory delta holds before it is spilled (a process may lower it: tests).
    spill_at = SPILL_AT

    def __init__(self, base: ChunkFile | None = None, delta: ChunkDelta | None = None) -> None:
        self.base = base
        self.added: dict[int, Chunk] = {}
        #: Base ids that no longer count (removed, or replaced by an added chunk).
        self.removed: set[int] = set()
        #: Base ids whose record failed its checksum: reported once, read as absent.
        self.damaged: dict[int, str] = {}
        self._names: dict[str, list[int]] = defaultdict(list)
        #: Called when a damaged record is found (the catalog marks its file for indexing).
        self.on_damage: Callable[[int], None] | None = None
        #: Where the delta is spilled once it grows (the index folder; None: kept in memory).
        self.spill_dir: Path | None = None
        self.spill: ChunkSpill | None = None
        #: Every id stored (base, spill, delta) is below it: the base's ids are sorted.
        self._fresh_from = int(base.ids[-1]) + 1 if base is not None and len(base.ids) else 0
        if delta is not None:
            self.removed.update(i for i in delta.removed if self._in_base(i))
            for chunk in delta.added:
                self[chunk.id] = chunk

    @classmethod
    def of(cls, chunks: dict[int, Chunk]) -> ChunkMap:
        """A map holding `chunks` in its delta (no base yet)."""
        made = cls()
        for chunk_id, chunk in chunks.items():
            made[chunk_id] = chunk
        return made

    def _in_base(self, chunk_id: int) -> bool:
        return self.base is not None and self.base.position(chunk_id) >= 0

    # ---- reading -----------------------------------------------------------------------------
    def get(self, chunk_id: int, default: Chunk | None = None) -> Chunk | None:
        """The chunk `chunk_id` (decoded from the base now) or `default`."""
        found = self.added.get(chunk_id)
        if found is not None:
            return found
        if self.spill is not None and (row := self.spill.row(chunk_id)) >= 0:
            return self.spill.decode(row)
        if self.base is None or chunk_id in self.removed or chunk_id in self.damaged:
            return default
        row = self.base.position(chunk_id)
        return default if row < 0 else self._decode(self.base, row, default)

    def get_many(self, chunk_ids: Iterable[int]) -> dict[int, Chunk]:
        """`get` of each id, the absent ones left out, in the order asked: the base's records
        are found and read in one batch (a search reads ~300 candidates at once)."""
        ids = list(chunk_ids)
        found: dict[int, Chunk] = {}
        from_base: list[int] = []
        for chunk_id in ids:
            chunk = self.added.get(chunk_id)
            if chunk is None and self.spill is not None and (row := self.spill.row(chunk_id)) >= 0:
                chunk = self.spill.decode(row)
            if chunk is not None:
                found[chunk_id] = chunk
            elif chunk_id not in self.removed and chunk_id not in self.damaged:
                from_base.append(chunk_id)
        for chunk_id, read in self.base.read_ids(from_base) if self.base and from_base else ():
            if isinstance(read, ChunkDamaged):
                self._damage(chunk_id, str(read))
            else:
                found[chunk_id] = read
        return {i: found[i] for i in ids if i in found}

    def _decode(self, base: ChunkFile, row: int, default: Chunk | None = None) -> Chunk | None:
        """The chunk at `row`; a damaged record is reported once and read as absent."""
        try:
            return base.decode(row)
        except ChunkDamaged as exc:
            self._damage(int(base.ids[row]), str(exc))
            return default

    def _damage(self, chunk_id: int, why: str) -> None:
        if chunk_id in self.damaged:
            return
        self.damaged[chunk_id] = why
        log.warning("%s; the chunk is left out until its file is indexed again", why)
        if self.on_damage is not None:
            self.on_damage(chunk_id)

    def __getitem__(self, chunk_id: int) -> Chunk:
        found = self.get(chunk_id)
        if found is None:
            raise KeyError(chunk_id)
        return found

    def __contains__(self, chunk_id: object) -> bool:
        if not isinstance(chunk_id, int):
            return False
        if chunk_id in self.added or (self.spill is not None and self.spill.row(chunk_id) >= 0):
            return True
        return chunk_id not in self.removed and self._in_base(chunk_id)

    def __len__(self) -> int:
        base = len(self.base) if self.base is not None else 0
        return base - len(self.removed) + len(self.added) + self._spilled()

    def _spilled(self) -> int:
        return len(self.spill) if self.spill is not None else 0

    def base_rows(self) -> np.ndarray:
        """Rows of the base that still count, ascending by id."""
        if self.base is None:
            return np.zeros(0, dtype=np.int64)
        rows = np.arange(len(self.base), dtype=np.int64)
        if not self.removed:
            return rows
        gone = np.fromiter(self.removed, dtype=np.int64, count=len(self.removed))
        return rows[~np.isin(self.base.ids, gone)]

    def id_array(self) -> np.ndarray:
        """Every id, base ones first (ascending), then the delta's."""
        base = self.base.ids[self.base_rows()] if self.base is not None else np.zeros(0, np.int64)
        added = np.fromiter(self.added, dtype=np.int64, count=len(self.added))
        spilled = self.spill.live_ids() if self.spill is not None else np.zeros(0, np.int64)
        return np.concatenate((base, spilled, added))

    def __iter__(self) -> Iterator[int]:
        return iter(self.id_array().tolist())

    def keys(self) -> set[int]:
        """Every id (a set: compare with a dict's keys)."""
        return set(self.id_array().tolist())

    def values(self) -> Iterator[Chunk]:
        """Every chunk, decoded one at a time (base first, ascending id, then the delta)."""
        base = self.base
        if base is not None:
            for row in self.base_rows().tolist():
                chunk = self._decode(base, row)
                if chunk is not None:
                    yield chunk
        spill = self.spill
        if spill is not None:
            yield from (spill.decode(row) for row in list(spill.live_rows()))
        yield from list(self.added.values())

    def items(self) -> Iterator[tuple[int, Chunk]]:
        """(id, chunk) for every chunk, as `values`."""
        for chunk in self.values():
            yield chunk.id, chunk

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (dict, ChunkMap)):
            return len(self) == len(other) and dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dict

    def symbol_ids(self, name: str) -> list[int]:
        """Ids of the code chunks defining `name`, ascending."""
        found = set(self._names.get(name, ()))
        if self.spill is not None:
            found.update(self.spill.symbol_ids(name))
        if self.base is not None:
            found.update(i for i in self.base.symbol_ids(name).tolist() if i not in self.removed)
        return sorted(found)

    # ---- changing ----------------------------------------------------------------------------
    def __setitem__(self, chunk_id: int, chunk: Chunk) -> None:
        if chunk_id < self._fresh_from:  # pop marks a base chunk removed
            self.pop(chunk_id)
        else:  # a pass's new id, in no part (ids are never reused): no lookups (~5 us)
            self._fresh_from = chunk_id + 1
        self.added[chunk_id] = chunk
        name = symbol_of(chunk)
        if name:
            self._names[name].append(chunk_id)
        if len(self.added) >= self.spill_at and self.spill_dir is not None:
            self._spill_added(self.spill_dir)

    def _spill_added(self, folder: Path) -> None:
        """Move the in-memory delta to the spill file (a chunk whose id was spilled and
        removed before stays here: the spill reads a gone id as absent)."""
        if self.spill is None:
            self.spill = ChunkSpill(folder)
        gone = self.spill.gone
        moving = [c for i, c in self.added.items() if i not in gone]
        self.spill.add(moving)
        self.added = {i: c for i, c in self.added.items() if i in gone}
        self._names = defaultdict(list)
        for chunk_id, chunk in self.added.items():
            if name := symbol_of(chunk):
                self._names[name].append(chunk_id)

    def close(self) -> None:
        """Delete the spill file, if any (the map is replaced by a saved base, or dropped)."""
        if self.spill is not None:
            self.spill.discard()

    def pop(self, chunk_id: int, default: Chunk | None = None) -> Chunk | None:
        """Forget `chunk_id`; returns the delta's chunk (a base chunk is only marked gone)."""
        chunk = self.added.pop(chunk_id, None)
        if chunk is not None:
            name = symbol_of(chunk)
            if name and chunk_id in self._names.get(name, ()):
                self._names[name].remove(chunk_id)
            return chunk
        spill = self.spill
        if spill is not None and (row := spill.row(chunk_id)) >= 0:
            spill.gone.add(chunk_id)
            return spill.decode(row)
        if chunk_id not in self.removed and self._in_base(chunk_id):
            self.removed.add(chunk_id)
        return default

    # ---- saving ------------------------------------------------------------------------------
    def delta(self) -> ChunkDelta:
        """The delta component as saved."""
        spilled = [self.spill.decode(r) for r in self.spill.live_rows()] if self.spill else []
        return ChunkDelta(added=[*spilled, *self.added.values()], removed=sorted(self.removed))

    def delta_size(self) -> int:
        """Records in the delta: what a compaction would fold into the base."""
        return len(self.added) + len(self.removed) + self._spilled()

    def write_base(self, path: Path) -> None:
        """A new base of every chunk (fsynced): base records copied as they are (a damaged one
        is left out, its file is indexed again), the delta encoded."""
        with path.open("wb") as handle:
            writer = ChunkFileWriter(handle)
            if self.base is not None:
                gone = self._copy_base(writer, self.base)
                writer.add_symbols(*self.base.symbols_without(gone))
            if self.spill is not None:
                self.spill.copy_to(writer)
            for chunk in self.added.values():
                writer.add(chunk)
            writer.finish()
            handle.flush()
            os.fsync(handle.fileno())

    def _copy_base(self, writer: ChunkFileWriter, base: ChunkFile) -> np.ndarray:
        """Copy the base records that still count; returns the ids left out."""
        skipped = copy_base(writer, base, self.base_rows(), self._damage)
        return np.fromiter([*self.removed, *skipped], dtype=np.int64)


def copy_base(
    writer: ChunkFileWriter, base: ChunkFile, rows: np.ndarray, damage: Callable[[int, str], None]
) -> list[int]:
    """Copy the base's records at `rows` in runs (record_copy.py); a run that fails a check
    goes record by record, a damaged record left out and reported to `damage`. Returns the
    ids left out."""
    skipped: list[int] = []

    def one(position: int) -> None:
        row = int(rows[position])
        chunk_id = int(base.ids[row])
        try:
            writer.add_raw(chunk_id, base.raw(row), None, base.crc(row))
        except ChunkDamaged as exc:
            damage(chunk_id, str(exc))
            skipped.append(chunk_id)

    copy_records(writer, base.records(rows), base.span, one)
    return skipped
