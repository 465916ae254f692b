"""The vectors of one folder: an exact cosine matrix keyed by chunk id, one per tier.

Two tiers share the chunk ids: "vectors" (the main model, MiniLM) and "static" (the static tier,
see embedding/static.py). They know nothing of files or snapshots; the store decides which chunks
exist and when a tier is saved, and `VectorTiers` remembers which tier changed since then.

Exact search over one float32 matrix (as semble does) instead of an HNSW graph: a workspace
holds thousands to tens of thousands of chunks, where a query takes a few milliseconds
(15k x 384, k=200: 2.3 ms median on one quiet core, 2026-11-25); it finds the true nearest
neighbours (HNSW at the breadth we used held 98% of them), needs no graph in memory or on
disk, and needs no C++ compiler at install time (hnswlib compiled ~45 s of a first install).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Container, Iterable
from pathlib import Path
from typing import IO

import numpy as np

from codeask.core.storage.mapped_rows import MappedRows, map_rows

#: The snapshot components that hold vectors: the main tier and the static tier.
TIERS = ("vectors", "static")


class VectorIndex:
    """Unit vectors in the rows of one matrix, keyed by chunk id; a removed chunk leaves a hole
    (its id -1), compacted away when holes pile up.

    A loaded tier keeps the snapshot file's rows where they are (issue 29): they are mapped
    read-only (`mapped_rows.py`) as the base, and a vector added or replaced afterwards goes to
    an in-memory tail. The base is never written (a replaced chunk's base row becomes a hole),
    so its pages are the file's: out of the process's memory until a query scans them, and let
    go again when the tier has been idle a while. Snapshot files are never written in place (a
    save writes a new generation), so the mapped bytes stay the verified ones.
    """

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self._rows = np.zeros((max(1, capacity), dim), dtype=np.float32)
        self._ids = np.full(max(1, capacity), -1, dtype=np.int64)
        self._used = 0
        self._slot: dict[int, int] = {}
        self._base: MappedRows | None = None
        self._base_ids = np.zeros(0, dtype=np.int64)
        self._base_slot: dict[int, int] = {}
        self.live: set[int] = set()
        self.deleted = 0

    @classmethod
    def load(cls, path: Path, dim: int, capacity: int, known_ids: set[int]) -> VectorIndex:
        """Load a saved tier (already verified); rows of ids outside `known_ids` are dropped and
        counted as deleted, so the next compaction rewrites the file without them.

        The rows stay in the file, mapped (`map_rows`); a file whose rows cannot be mapped
        (compressed, another layout) is read straight into the matrix, as before (reading the
        file whole, unpacking it and copying it made an open's peak ~4.5 copies of every tier).
        """
        vectors: VectorIndex | None = None
        try:
            with zipfile.ZipFile(path) as archive:
                with archive.open("ids.npy") as member:
                    ids = np.asarray(np.lib.format.read_array(member), dtype=np.int64)
                base = map_rows(path, archive, "rows.npy", len(ids), dim)
                if base is None:
                    with archive.open("rows.npy") as member:
                        vectors = cls(dim, max(capacity, len(ids)))
                        _read_rows(member, vectors._rows, len(ids), path.name)
        except (zipfile.BadZipFile, KeyError, EOFError, OSError) as exc:
            raise ValueError(f"{path.name} is not a vector file ({exc})") from exc
        keep = np.fromiter((int(i) in known_ids for i in ids), dtype=bool, count=len(ids))
        if vectors is None:
            assert base is not None
            return cls._over(base, ids, keep, dim)
        kept = int(keep.sum())
        # a dict, not np.unique: np.unique imports numpy.ma (13-20 ms of a one-shot search)
        slots = {chunk_id: slot for slot, chunk_id in enumerate(ids.tolist())}
        if kept == len(ids) and len(slots) == len(ids):  # the usual case: no copy
            vectors._ids[: len(ids)] = ids
            vectors._slot = slots
            vectors._used = len(ids)
            vectors.live = set(vectors._slot)
        else:
            rows = vectors._rows[: len(ids)][keep]  # a copy of the kept rows only
            vectors._rows[: len(ids)] = 0.0
            vectors._put(ids[keep].tolist(), rows)
        vectors.deleted = len(ids) - kept
        return vectors

    @classmethod
    def _over(cls, base: MappedRows, ids: np.ndarray, keep: np.ndarray, dim: int) -> VectorIndex:
        """A tier whose rows are the mapped `base`: dropped and repeated ids become holes."""
        vectors = cls(dim)
        vectors._base = base
        vectors._base_ids = ids.copy()
        slots: dict[int, int] = {}
        for row, chunk_id in enumerate(ids.tolist()):
            if not keep[row]:
                vectors._base_ids[row] = -1
                continue
            earlier = slots.get(chunk_id)
            if earlier is not None:  # a repeated id: the later row holds its vector
                vectors._base_ids[earlier] = -1
            slots[chunk_id] = row
        vectors._base_slot = slots
        vectors.live = set(slots)
        vectors.deleted = len(ids) - len(slots)
        return vectors

    def add(self, ids: list[int], rows: np.ndarray) -> None:
        """Insert (or replace) vectors; rows are L2-normalised here, so scores are cosines."""
        if not ids:
            return
        rows = np.asarray(rows, dtype=np.float32).reshape(len(ids), self.dim)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        self._put(ids, rows / np.where(norms > 0, norms, 1.0))

    def _put(self, ids: list[int], rows: np.ndarray) -> None:
        for chunk_id in ids:  # a base row is never written: it becomes a hole
            row = self._base_slot.pop(chunk_id, None)
            if row is not None:
                self._base_ids[row] = -1
                self.deleted += 1
        fresh = [i for i, chunk_id in enumerate(ids) if chunk_id not in self._slot]
        self._grow(self._used + len(fresh))
        for i, chunk_id in enumerate(ids):
            slot = self._slot.get(chunk_id)
            if slot is None:
                slot = self._slot[chunk_id] = self._used
                self._ids[slot] = chunk_id
                self._used += 1
            self._rows[slot] = rows[i]
        self.live.update(ids)

    def _grow(self, needed: int) -> None:
        if needed <= len(self._ids):
            return
        size = max(needed, 2 * len(self._ids))
        rows = np.zeros((size, self.dim), dtype=np.float32)
        rows[: self._used] = self._rows[: self._used]
        ids = np.full(size, -1, dtype=np.int64)
        ids[: self._used] = self._ids[: self._used]
        self._rows, self._ids = rows, ids

    def remove(self, ids: Iterable[int]) -> None:
        """Forget vectors (their rows become holes)."""
        for label in ids:
            row = self._base_slot.pop(label, None)
            if row is not None:
                self._base_ids[row] = -1
                self.live.discard(label)
                self.deleted += 1
                continue
            slot = self._slot.pop(label, None)
            if slot is not None:
                self._ids[slot] = -1
                self._rows[slot] = 0.0
                self.live.discard(label)
                self.deleted += 1

    def needs_compaction(self) -> bool:
        """Holes cost memory and scan time; compact once they are a quarter of the rows."""
        return self.deleted > 256 and self.deleted > len(self.live) // 4

    def compacted(self) -> VectorIndex:
        """A fresh index holding only the live vectors, in row order."""
        fresh = VectorIndex(self.dim, max(1024, len(self.live) + 256))
        ids, rows = self._live_rows()
        fresh._put(ids.tolist(), rows)
        return fresh

    def _live_rows(self) -> tuple[np.ndarray, np.ndarray]:
        used = self._used  # first: a grown matrix keeps every row below the old count
        ids, rows = self._ids[:used], self._rows[:used]
        mask = ids >= 0
        if self._base is None:
            return ids[mask], rows[mask]
        base_mask = self._base_ids >= 0
        base_rows = self._base.rows[base_mask]
        self._base.scanned()
        return (
            np.concatenate([self._base_ids[base_mask], ids[mask]]),
            np.concatenate([base_rows, rows[mask]]),
        )

    def vector(self, chunk_id: int) -> np.ndarray | None:
        """A chunk's stored vector (None without one): a neighbour query that needs no model."""
        row = self._base_slot.get(chunk_id)
        if row is not None and self._base is not None:
            return np.array(self._base.rows[row])
        slot = self._slot.get(chunk_id)
        return None if slot is None else self._rows[slot].copy()

    def query(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first: the exact k nearest live vectors."""
        k = min(k, len(self.live))
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            return []
        norm = float(np.linalg.norm(query))
        unit = query / norm if norm > 0 else query
        scores, ids = self._scores(unit)
        scores[ids < 0] = -np.inf
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(ids[r]), float(scores[r])) for r in top if scores[r] > -np.inf]

    def _scores(self, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every row's score and id: the mapped base's rows first, then the tail's."""
        used = self._used
        if self._base is None:
            return self._rows[:used] @ unit, self._ids[:used]
        base_scores = self._base.rows @ unit
        self._base.scanned()
        if not used:
            return base_scores, self._base_ids
        return (
            np.concatenate([base_scores, self._rows[:used] @ unit]),
            np.concatenate([self._base_ids, self._ids[:used]]),
        )

    def encode(self) -> bytes:
        """The live vectors (ids and rows) as an uncompressed .npz, for the snapshot writer."""
        ids, rows = self._live_rows()
        out = io.BytesIO()
        np.savez(out, ids=ids, rows=rows)
        return out.getvalue()


#: Bytes read from a vector file at a time (the only copy besides the matrix).
_READ_BLOCK = 1 << 20


def _read_rows(member: IO[bytes], matrix: np.ndarray, count: int, name: str) -> None:
    """Read a saved (count, dim) float32 matrix from its .npy member into `matrix[:count]`."""
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
    dim = matrix.shape[1]
    if len(shape) != 2 or tuple(shape) != (count, dim):
        raise ValueError(f"{name}: {shape} vectors, expected ({count}, {dim})")
    if fortran or dtype != np.dtype("<f4"):
        raise ValueError(f"{name}: rows of {dtype}, expected C-order little-endian float32")
    if not count:
        return
    target = matrix[:count].data.cast("B")
    filled = 0
    while filled < len(target):
        block = member.read(min(_READ_BLOCK, len(target) - filled))
        if not block:
            raise ValueError(f"{name}: vectors end after {filled} of {len(target)} bytes")
        target[filled : filled + len(block)] = block
        filled += len(block)


class VectorTiers:
    """Both tiers of a folder, and which of them changed since the last save.

    Kept apart from the chunk metadata so a store can keep its vectors elsewhere (the planned
    storage interface); the tiers only ever hear chunk ids.
    """

    def __init__(
        self,
        dim: int,
        static_dim: int,
        vectors: VectorIndex | None = None,
        static: VectorIndex | None = None,
    ) -> None:
        self.dim, self.static_dim = dim, static_dim
        self.vectors = VectorIndex(dim) if vectors is None else vectors
        #: The static tier (dim 1 while it is off: an index needs some dimension).
        self.static = VectorIndex(max(1, static_dim)) if static is None else static
        #: Tiers (names from TIERS) to write at the next save; a new set starts all changed.
        self.changed: set[str] = set(TIERS)

    def tier(self, name: str) -> VectorIndex:
        """The index saved as `name` ("vectors": the main model, "static": the static tier)."""
        return self.static if name == "static" else self.vectors

    def set_tier(self, name: str, index: VectorIndex) -> None:
        """Replace one tier (a loaded or compacted index)."""
        if name == "static":
            self.static = index
        else:
            self.vectors = index

    def drop(self, ids: list[int]) -> None:
        """Forget the vectors of removed chunks (a tier without any of them stays unchanged)."""
        for name in TIERS:
            index = self.tier(name)
            if index.live.intersection(ids):
                index.remove(ids)
                self.changed.add(name)

    def attach(self, name: str, ids: list[int], rows: np.ndarray, known: Container[int]) -> None:
        """Add vectors for the chunks in `known` only (a concurrent edit may have removed some)."""
        keep = [i for i, chunk_id in enumerate(ids) if chunk_id in known]
        if not keep:
            return
        self.tier(name).add([ids[i] for i in keep], rows[keep])
        self.changed.add(name)

    def pending(self, name: str, chunk_ids: Iterable[int]) -> list[int]:
        """The chunk ids without a vector in tier `name`."""
        live = self.tier(name).live
        return [i for i in chunk_ids if i not in live]

    def compact(self) -> None:
        """Rebuild each tier whose deletion marks piled up (before a save writes it)."""
        for name in TIERS:
            index = self.tier(name)
            if index.needs_compaction():
                self.set_tier(name, index.compacted())
                self.changed.add(name)
