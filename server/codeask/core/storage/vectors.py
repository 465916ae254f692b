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
from collections.abc import Container, Iterable, Iterator
from dataclasses import astuple
from pathlib import Path

import numpy as np

from codeask.core.storage.base_ids import BaseIds, LiveIds, as_id_array
from codeask.core.storage.coarse_lists import MIN_ROWS, CoarseLists, scan
from codeask.core.storage.list_order import read_id_order, write_in_list_order
from codeask.core.storage.mapped_rows import MappedRows
from codeask.core.storage.quantized_rows import (
    BLOCK_ROWS,
    QuantizedRows,
    dequantize,
    scaled,
    scores,
    unit_quantized,
    unit_rows,
)
from codeask.core.storage.snapshot import component_path, fsync_write
from codeask.core.storage.vector_file import (
    Delta,
    Stored,
    as_layout,
    empty_delta,
    encode_delta,
    read_base,
    read_delta,
    write_base,
    write_base_to,
)
from codeask.core.storage.vector_tail import VectorTail

#: The snapshot components that hold vectors: the main tier and the static tier.
TIERS = ("vectors", "static")
#: Each tier's delta component: what changed since its base (vector_file.py).
DELTAS = {name: f"{name}_delta" for name in TIERS}
#: Tiers stored as int8 rows with a scale each (quantized_rows.py): the static tier, whose
#: ranking moved by at most .00x NDCG@10 per language on eval-search (issue 42).
QUANTIZED = frozenset({"static"})
#: Rows a tier's in-memory tail holds before they move to a spill file (row_spill.py) when the
#: tier has a `spill_dir`: 4 MB of static rows, 24 MB of MiniLM ones; an edit never spills.
SPILL_ROWS = 16_384


def empty_tier(name: str, dim: int) -> VectorIndex:
    """A new, empty tier `name` of `dim` (the static tier at least 1 while it is off)."""
    if name in QUANTIZED:
        return VectorIndex(max(1, dim), quantized=True)
    return VectorIndex(dim)


class VectorIndex:
    """Unit vectors in the rows of one matrix, keyed by chunk id; a removed chunk leaves a hole
    (its id -1), folded away when the delta grows.

    A loaded tier keeps the snapshot file's rows mapped read-only as the base (issue 29,
    `mapped_rows.py`; snapshot files are never written in place), and a vector added or
    replaced afterwards goes to an in-memory tail (a replaced base row becomes a hole). The tail
    and the holes are the delta (issue 42): a save writes only them (vector_file.py) until they
    pass `FOLD_FRACTION` of the base, then a new base. A `quantized` tier stores int8 rows with a
    scale each (quantized_rows.py), in the tail too, so a query scores the same after a save.
    A long pass's tail moves to a spill file every `spill_rows` rows (row_spill.py, issue 42).
    """

    #: Rows the tail holds before it is spilled (a process may lower it: tests).
    spill_rows = SPILL_ROWS

    def __init__(self, dim: int, capacity: int = 1024, *, quantized: bool = False) -> None:
        self.dim = dim
        self.quantized = quantized
        self._dtype = np.dtype(np.int8 if quantized else np.float32)
        self._tail = VectorTail(dim, self._dtype, capacity)  # rows added since the base
        self._base: MappedRows | None = None
        self._base_ids: BaseIds | None = None  # which id each base row holds (-1: a hole)
        self._lists: CoarseLists | None = None  # a large base's candidate lists
        #: Where the tail is spilled once it grows (the index folder; None: kept in memory).
        self.spill_dir: Path | None = None
        self.deleted = 0

    @property
    def live(self) -> LiveIds:
        """The ids with a vector here, read like a set (a view: it follows later changes)."""
        return LiveIds(self._base_ids, self._tail.slot, self._tail.spill)

    @classmethod
    def load(
        cls,
        path: Path,
        dim: int,
        capacity: int,
        known_ids: Iterable[int] | np.ndarray,
        *,
        quantized: bool = False,
        delta: Path | None = None,
    ) -> VectorIndex:
        """Load a saved tier (already verified) and its `delta`; rows of ids outside
        `known_ids` are dropped and counted as deleted. The base's rows stay in the file,
        mapped; a file whose rows cannot be mapped (compressed) is read into the tail.
        Vectorised (numpy), never a Python loop over the base's rows (issue 42)."""
        ids, base, lists = read_base(path, dim)
        changes = read_delta(delta, dim) if delta is not None else None
        known_array = as_id_array(known_ids)
        keep = np.isin(ids, known_array)
        if changes is not None:
            _check_delta(changes, len(ids), delta)
            keep[changes.removed] = False
        mapped = isinstance(base, MappedRows)  # a mapped base needs only a small tail
        vectors = cls(dim, 1024 if mapped else capacity, quantized=quantized)
        if isinstance(base, MappedRows):
            vectors._set_base(base, ids, keep, read_id_order(path, len(ids)))
            vectors._lists = lists
        else:  # compressed: read into the tail (it is written as a base at the next save)
            vectors._put_stored(Stored(ids[keep], base.rows[keep], _part(base.scales, keep)))
            vectors.deleted = len(ids) - int(keep.sum())
        if changes is not None:
            known = np.isin(changes.ids, known_array)
            rows = Stored(changes.ids[known], changes.rows[known], _part(changes.scales, known))
            vectors._put_stored(as_layout(quantized, *astuple(rows)), counted=False)
        return vectors

    def _set_base(
        self, base: MappedRows, ids: np.ndarray, keep: np.ndarray, order: np.ndarray | None
    ) -> None:
        """Take the mapped `base` (`order`: its rows by ascending id, when it stored them):
        dropped and repeated ids become holes."""
        self._base = base
        self._base_ids = BaseIds(ids, keep, order)
        self.deleted = len(ids) - self._base_ids.count

    def add(self, ids: list[int], rows: np.ndarray | QuantizedRows) -> None:
        """Insert (or replace) vectors; rows are L2-normalised here, so scores are cosines
        (`QuantizedRows` already are: a chunk worker's, kept as they came)."""
        if not ids:
            return
        ids_array = np.asarray(ids, dtype=np.int64)
        if isinstance(rows, QuantizedRows):
            if self.quantized:
                self._put_stored(Stored(ids_array, rows.rows, rows.scales))
                return
            rows = dequantize(rows.rows, rows.scales)
        rows = np.asarray(rows, dtype=np.float32).reshape(len(ids), self.dim)
        if self.quantized:
            stored = unit_quantized(rows)
            self._put_stored(Stored(ids_array, stored.rows, stored.scales))
            return
        self._put_stored(Stored(ids_array, unit_rows(rows), None))

    def _put_stored(self, stored: Stored, *, counted: bool = True) -> None:
        """Put rows as stored into the tail (spilled past `spill_rows` when the tier has a
        `spill_dir`); a base row of the same id becomes a hole."""
        if self._base_ids is not None:  # a base row is never written: it becomes a hole
            for row in self._base_ids.rows(as_id_array(stored.ids)).tolist():
                if row >= 0:
                    self._base_ids.punch(row)
                    self.deleted += counted
        self._tail.put(stored, self.spill_dir, self.spill_rows)

    def remove(self, ids: Iterable[int]) -> None:
        """Forget vectors (their rows become holes)."""
        for label in ids:
            row = self._base_ids.row(label) if self._base_ids is not None else -1
            if row >= 0 and self._base_ids is not None:
                self._base_ids.punch(row)
                self.deleted += 1
                continue
            if self._tail.remove(label):
                self.deleted += 1

    def needs_compaction(self) -> bool:
        """Holes cost memory and scan time; compact once they are a quarter of the rows."""
        return self.deleted > 256 and self.deleted > len(self.live) // 4

    def needs_fold(self) -> bool:
        """A save writes a new base (not a delta): there is none yet, or the delta (the tail
        and the base's holes) passed `FOLD_FRACTION` of the base's rows."""
        held = self._tail.held()
        if self._base is None or self._base_ids is None:
            return held > 0 or self.deleted > 0
        holes = len(self._base_ids) - self._base_ids.count
        return held + holes > len(self._base_ids) * FOLD_FRACTION

    def compacted(self) -> VectorIndex:
        """A fresh in-memory index holding only the live vectors, in row order."""
        fresh = VectorIndex(self.dim, max(1024, len(self.live) + 256), quantized=self.quantized)
        fresh.spill_dir = self.spill_dir
        for block in self.live_blocks():
            fresh._put_stored(block)
        return fresh

    def live_blocks(self) -> Iterator[Stored]:
        """The live rows as stored (int8 for a quantized tier, whatever the base holds), the
        base's first, then the spilled, `BLOCK_ROWS` at a time: a base is written without a
        second copy."""
        if self._base is not None and self._base_ids is not None:
            base, scales = self._base.rows, self._base.scales
            for start in range(0, len(self._base_ids), BLOCK_ROWS):
                ids = self._base_ids.ids[start : start + BLOCK_ROWS]
                mask = ids >= 0
                rows = base[start : start + BLOCK_ROWS][mask]
                part = None if scales is None else scales[start : start + BLOCK_ROWS][mask]
                yield as_layout(self.quantized, ids[mask], rows, part)
            self._base.scanned()
        yield from self._tail.blocks()

    @property
    def mapped(self) -> bool:
        """The rows are a mapped base file plus a delta (else all in memory)."""
        return self._base is not None

    def empty_delta(self) -> Delta:
        """A delta that changes nothing (it then fits any base)."""
        return empty_delta(self.dim, self._dtype)

    def delta(self) -> Delta:
        """What changed since the mapped base (everything, when there is none): the spilled
        rows are read back (a delta is at most `FOLD_FRACTION` of its base)."""
        tail = self._tail.joined()
        base_ids = self._base_ids.ids if self._base_ids is not None else np.zeros(0, np.int64)
        removed = np.flatnonzero(base_ids < 0).astype(np.int64)
        return Delta(tail.ids, tail.rows, tail.scales, removed, len(base_ids))

    def write_base(self, path: Path) -> None:
        """Write the live vectors as a base file (streamed, fsynced); a large one gets coarse
        lists (coarse_lists.py) and its rows written grouped by list (list_order.py)."""
        if len(self.live) >= MIN_ROWS:
            write_in_list_order(path, len(self.live), self.dim, self._dtype, self.live_blocks())
            return
        write_base(path, len(self.live), self.dim, self._dtype, self.live_blocks())

    def vector(self, chunk_id: int) -> np.ndarray | None:
        """A chunk's stored vector (None without one): a neighbour query that needs no model."""
        row = self._base_ids.row(chunk_id) if self._base_ids is not None else -1
        if row >= 0 and self._base is not None:
            scales = self._base.scales
            return dequantize(self._base.rows[row : row + 1], _cut(scales, row))[0]
        return self._tail.vector(chunk_id)

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
        scored, ids = self._scores(unit)
        scored[ids < 0] = -np.inf
        top = np.argpartition(-scored, k - 1)[:k] if k < len(scored) else np.arange(len(scored))
        top = top[np.argsort(-scored[top], kind="stable")]
        top = top[scored[top] > -np.inf]  # then plain ints and floats at once, not per row
        return list(zip(ids[top].tolist(), scored[top].tolist(), strict=True))

    def _scores(self, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every row's score and id: the mapped base's rows first, then the spilled and the
        tail's."""
        tail, tail_ids = self._tail.scores(unit)
        if self._base is None or self._base_ids is None:
            return tail, tail_ids
        base, base_ids = self._base, self._base_ids.ids
        if self._lists is not None:  # a large base: its candidate lists' rows only
            base_scores, picked = scan(self._lists, base.rows, base.scales, unit, base.step_done)
            base_ids = base_ids[picked]
        elif (wide := base.wide()) is not None:
            base_scores = scaled(wide @ unit, base.scales)
        else:
            base_scores = scores(base.rows, base.scales, unit, base.step_done)
        base.scanned()
        if not len(tail_ids):
            return base_scores, base_ids
        return np.concatenate([base_scores, tail]), np.concatenate([base_ids, tail_ids])

    def encode(self) -> bytes:
        """The live vectors as an uncompressed .npz base (tests; a save streams `write_base`)."""
        out = io.BytesIO()
        write_base_to(out, len(self.live), self.dim, self._dtype, self.live_blocks())
        return out.getvalue()


#: A save writes a new base once the delta (tail rows and base holes) passes this share of it.
FOLD_FRACTION = 0.125


def _check_delta(delta: Delta, base_rows: int, path: Path | None) -> None:
    """A delta names the base it was written against, and only rows inside it."""
    name = path.name if path is not None else "delta"
    if not len(delta.ids) and not len(delta.removed):
        return  # changes nothing: fits any base
    if delta.base_rows != base_rows:
        raise ValueError(f"{name}: written for a base of {delta.base_rows} rows, not {base_rows}")
    if len(delta.removed) and (delta.removed.min() < 0 or delta.removed.max() >= base_rows):
        raise ValueError(f"{name}: removes rows outside its base of {base_rows}")


def _part(scales: np.ndarray | None, mask: np.ndarray) -> np.ndarray | None:
    return None if scales is None else scales[mask]


def _cut(scales: np.ndarray | None, row: int) -> np.ndarray | None:
    return None if scales is None else scales[row : row + 1]


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
        self.vectors = empty_tier("vectors", dim) if vectors is None else vectors
        #: The static tier (dim 1 while it is off: an index needs some dimension).
        self.static = empty_tier("static", static_dim) if static is None else static
        #: Tiers (names from TIERS) changed since the last save; a new set starts all changed.
        self.changed: set[str] = set(TIERS)
        #: Tiers whose base the save being written folds (rewrites): mapped again once
        #: published, unless edited meanwhile (`_edits`, counted per tier, says so).
        self.folding: dict[str, int] = {}
        self._edits = dict.fromkeys(TIERS, 0)
        #: Where a tier's growing tail is spilled (the store's index folder; None: memory).
        self.spill_dir: Path | None = None

    def tier(self, name: str) -> VectorIndex:
        """The index saved as `name` ("vectors": the main model, "static": the static tier)."""
        return self.static if name == "static" else self.vectors

    def set_tier(self, name: str, index: VectorIndex) -> None:
        """Replace one tier (a loaded or compacted index)."""
        self._edits[name] += 1
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
                self._edits[name] += 1

    def attach(
        self, name: str, ids: list[int], rows: np.ndarray | QuantizedRows, known: Container[int]
    ) -> None:
        """Add vectors for the chunks in `known` only (a concurrent edit may have removed some)."""
        keep = [i for i, chunk_id in enumerate(ids) if chunk_id in known]
        if not keep:
            return
        index = self.tier(name)
        index.spill_dir = self.spill_dir
        if len(keep) < len(ids):
            ids = [ids[i] for i in keep]
            rows = rows.take(keep) if isinstance(rows, QuantizedRows) else rows[keep]
        index.add(ids, rows)
        self.changed.add(name)
        self._edits[name] += 1

    def pending(self, name: str, chunk_ids: Iterable[int] | np.ndarray) -> list[int]:
        """The chunk ids without a vector in tier `name` (in their order; one vectorised test,
        not a set lookup per chunk: every pass asks it of every chunk)."""
        ids = as_id_array(chunk_ids)
        return ids[~self.tier(name).live.contains(ids)].tolist()

    def plan_save(self) -> set[str]:
        """The components the next save writes: a changed tier's delta only, or its base and
        delta when it folds (its delta passed `FOLD_FRACTION` of the base, or it has no mapped
        base: a full pass, a tier read from a compressed file). An unchanged tier's files are
        linked from the live snapshot."""
        self.folding = {}
        parts: set[str] = set()
        for name in TIERS:
            index = self.tier(name)
            if name in self.changed and (not index.mapped or index.needs_fold()):
                self.folding[name] = self._edits[name]
                parts.update((name, DELTAS[name]))
            elif name in self.changed:
                parts.add(DELTAS[name])
        return parts

    def write(self, part: str, path: Path) -> None:
        """Write one component of the save `plan_save` planned (each fsynced)."""
        if part in TIERS:
            self.tier(part).write_base(path)
            return
        name = next(tier for tier, delta in DELTAS.items() if delta == part)
        index = self.tier(name)
        mapped = index.mapped and name not in self.folding  # else the base has it all
        fsync_write(path, encode_delta(index.delta() if mapped else index.empty_delta()))

    def rebase(self, live: Path) -> None:
        """After the save published `live`: each folded tier maps its new base file, so its
        rows leave memory and the next save writes a delta against that base. A tier edited
        since the save was planned stays as it is (its next save folds again)."""
        for name, edits in sorted(self.folding.items()):
            if self._edits[name] != edits:
                continue
            index = self.tier(name)
            path = component_path(live, name)
            held = index.live.array()
            loaded = VectorIndex.load(path, index.dim, 0, held, quantized=index.quantized)
            self.set_tier(name, loaded)
        self.folding = {}
