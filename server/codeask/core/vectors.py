"""The vectors of one folder: hnswlib sets keyed by chunk id, one per tier.

Two tiers share the chunk ids: "vectors" (the main model, MiniLM) and "static" (the static tier,
see static_embed.py). They know nothing of files or snapshots; the store decides which chunks
exist and when a tier is saved, and `VectorTiers` remembers which tier changed since then.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from pathlib import Path

import hnswlib
import numpy as np

#: Search breadth per wanted neighbour. With ef = k, the 200 candidates retrieval asks for held
#: only 85% of the true 200 nearest (one eval text: 47%) on sphinx's 14k MiniLM vectors; 4k
#: holds 98% (min 90%) for +0.7 ms a query (benchmarks/README.md, "Team backend" parity).
EF_PER_RESULT = 4
MAX_EF = 1600

#: The snapshot components that hold vectors: the main tier and the static tier.
TIERS = ("vectors", "static")


class VectorIndex:
    """hnswlib (cosine) keyed by chunk id; deletes are marks, compacted when they pile up."""

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self._index = hnswlib.Index(space="cosine", dim=dim)
        self._index.init_index(max_elements=capacity, ef_construction=100, M=16)
        self._index.set_ef(64)
        self.live: set[int] = set()
        self.deleted = 0

    @classmethod
    def load(cls, path: Path, dim: int, capacity: int, known_ids: set[int]) -> VectorIndex:
        """Load a saved index (already verified); labels outside `known_ids` were marked deleted."""
        vectors = cls(dim, 1)
        vectors._index = hnswlib.Index(space="cosine", dim=dim)
        vectors._index.load_index(str(path), max_elements=max(1024, capacity))
        vectors._index.set_ef(64)
        labels = {int(i) for i in vectors._index.get_ids_list()}
        vectors.live = labels & known_ids
        vectors.deleted = len(labels) - len(vectors.live)
        return vectors

    def add(self, ids: list[int], rows: np.ndarray) -> None:
        """Insert vectors (rows L2-normalised)."""
        if not ids:
            return
        needed = self._index.get_current_count() + len(ids)
        if needed > self._index.get_max_elements():
            self._index.resize_index(max(needed, 2 * self._index.get_max_elements()))
        self._index.add_items(rows, np.asarray(ids, dtype=np.int64), num_threads=1)
        self.live.update(ids)

    def remove(self, ids: Iterable[int]) -> None:
        """Mark vectors deleted."""
        for label in ids:
            if label in self.live:
                self._index.mark_deleted(label)
                self.live.discard(label)
                self.deleted += 1

    def needs_compaction(self) -> bool:
        """Marks cost memory and recall; rebuild once they are a quarter of the index."""
        return self.deleted > 256 and self.deleted > len(self.live) // 4

    def compacted(self) -> VectorIndex:
        """A fresh index holding only the live vectors."""
        fresh = VectorIndex(self.dim, max(1024, len(self.live) + 256))
        ids = sorted(self.live)
        for start in range(0, len(ids), 4096):
            part = ids[start : start + 4096]
            fresh.add(part, np.asarray(self._index.get_items(part), dtype=np.float32))
        return fresh

    def vector(self, chunk_id: int) -> np.ndarray | None:
        """A chunk's stored vector (None without one): a neighbour query that needs no model."""
        if chunk_id not in self.live:
            return None
        return np.asarray(self._index.get_items([chunk_id]), dtype=np.float32)[0]

    def query(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) best first."""
        k = min(k, len(self.live))
        if k <= 0:
            return []
        self._index.set_ef(max(64, k, min(EF_PER_RESULT * k, MAX_EF)))
        try:
            labels, distances = self._index.knn_query(vector.reshape(1, -1), k=k)
        except RuntimeError:
            return []
        return [(int(i), 1.0 - float(d)) for i, d in zip(labels[0], distances[0], strict=True)]

    def save(self, path: Path) -> None:
        """Write the index file."""
        self._index.save_index(str(path))


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
        #: The static tier (dim 1 while it is off: hnswlib needs some dimension).
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
