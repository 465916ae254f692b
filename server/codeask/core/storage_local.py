"""`LocalStorage`: the default `Storage` (core/storage.py), an adapter over the local parts.

Chunks, files and history live in `IndexStore` (catalog + msgspec snapshots), vectors in its
tiers (one float32 matrix each, rows keyed by chunk id: core/vectors.py), lexical rows in
`LexicalIndex` (SQLite FTS5 and its in-memory copy; chunk ids are the FTS rowids). This class
takes the store's lock where a call must see or change several parts at once, and owns the
symbol table retrieval asks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np

from codeask.core.lexical import LexicalIndex
from codeask.core.records import Chunk, FileRecord
from codeask.core.storage import DenseAsk, IndexCounts, Tier
from codeask.core.store import IndexStore, VectorIndex
from codeask.core.symbol_table import SymbolTable

log = logging.getLogger("codeask.core.indexer")

#: The store's name of each tier.
_TIER = {"minilm": "vectors", "static": "static"}


class LocalStorage:
    """One folder's store and lexical table behind the `Storage` protocol."""

    def __init__(self, store: IndexStore, lexical: LexicalIndex) -> None:
        self.store = store
        self.lexical = lexical
        self._symbols = SymbolTable()

    def _tier(self, tier: Tier) -> VectorIndex:
        return self.store.tiers.tier(_TIER[tier])

    # ---- reading ---------------------------------------------------------------------------
    @property
    def generation(self) -> int:
        return self.store.generation

    @property
    def model(self) -> str:
        return self.store.model

    def tier_model(self, tier: Tier) -> tuple[str, int]:
        store = self.store
        return (
            (store.model, store.dim) if tier == "minilm" else (store.static_model, store.static_dim)
        )

    def counts(self) -> IndexCounts:
        """Without the lock (a save holds it while writing): each count is one atomic read."""
        store = self.store
        return IndexCounts(
            files=sum(1 for record in list(store.files.values()) if not record.skipped),
            chunks=len(store.chunks),
            embedded=len(store.vectors.live),
            static_embedded=len(store.static_vectors.live),
            history_commits=len(store.history.commits),
        )

    def chunk_count(self) -> int:
        return len(self.store.chunks)

    def vector_count(self, tier: Tier) -> int:
        return len(self._tier(tier).live)

    def file(self, path: str) -> FileRecord | None:
        return self.store.files.get(path)

    def paths(self) -> list[str]:
        with self.store.lock:
            return list(self.store.files)

    def chunk(self, chunk_id: int) -> Chunk | None:
        return self.store.chunks.get(chunk_id)

    def chunks(self, chunk_ids: Iterable[int]) -> dict[int, Chunk]:
        get = self.store.chunks.get  # as `chunk`: a dict read, no lock
        return {i: c for i in chunk_ids if (c := get(i)) is not None}

    def chunks_of(self, path: str) -> list[Chunk]:
        store = self.store
        with store.lock:
            record = store.files.get(path)
            chunks = store.chunks
            return [chunks[i] for i in (record.chunk_ids if record else []) if i in chunks]

    def all_chunks(self) -> list[Chunk]:
        with self.store.lock:
            return list(self.store.chunks.values())

    def history_commits(self) -> list[str]:
        with self.store.lock:
            return list(self.store.history.commits)

    def _symbol_table(self) -> SymbolTable:
        store = self.store
        with store.lock:
            key = (store.next_id, len(store.chunks))  # ids are never reused
            if not self._symbols.built_for(key):
                self._symbols.rebuild(key, list(store.chunks.values()), list(store.files))
        return self._symbols

    def symbol_ids(self, name: str) -> list[int]:
        return self._symbol_table().by_name.get(name, [])

    def paths_named(self, key: str) -> list[str]:
        return self._symbol_table().by_path_key.get(key, [])

    def vector(self, tier: Tier, chunk_id: int) -> np.ndarray | None:
        with self.store.lock:
            return self._tier(tier).vector(chunk_id)

    def dense_top_k(
        self, tier: Tier, vector: np.ndarray, k: int, *, missing_from: Tier | None = None
    ) -> list[tuple[int, float]]:
        with self.store.lock:
            index = self._tier(tier)
            if missing_from is None:
                return index.query(vector, k)
            covered = self._tier(missing_from).live
            if len(covered) >= len(self.store.chunks):
                return []  # the other tier covers everything: nothing left to fill
            return [hit for hit in index.query(vector, 2 * k) if hit[0] not in covered][:k]

    def dense_asks(self, tier: Tier, k: int, *, missing_from: Tier | None = None) -> list[DenseAsk]:
        return []  # in-process: nothing to batch

    def lexical_top_k(self, query: str, k: int) -> list[tuple[int, float]]:
        return self.lexical.search(query, k)

    def lexical_files(self, query: str, k: int) -> list[tuple[str, float]]:
        return self.lexical.search_files(query, k)

    def saved_at(self) -> float:
        return self.store.saved_at

    def disk_bytes(self) -> int:
        return self.store.disk_bytes()

    # ---- writing ---------------------------------------------------------------------------
    def new_ids(self, count: int) -> list[int]:
        return self.store.new_ids(count)

    def replace_file(
        self,
        record: FileRecord,
        chunks: Sequence[Chunk],
        static_rows: np.ndarray | None = None,
    ) -> list[int]:
        store, lexical = self.store, self.lexical
        with store.lock:
            removed = store.replace_file(record, list(chunks))
            if static_rows is not None:
                store.add_static_vectors([c.id for c in chunks], static_rows)
            lexical.replace_file(record.path, removed, chunks)
            return removed

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        self.store.touch_file(path, size, mtime_ns)

    def remove_file(self, path: str) -> list[int]:
        with self.store.lock:
            removed = self.store.remove_file(path)
            self.lexical.remove(removed)
            self.lexical.remove_file(path)
            return removed

    def sync_history(
        self, removed: Iterable[str], added: dict[str, list[Chunk]], head: str
    ) -> None:
        store, lexical = self.store, self.lexical
        with store.lock:
            lexical.remove(store.remove_history(removed))
            for sha, chunks in added.items():
                for chunk, chunk_id in zip(chunks, store.new_ids(len(chunks)), strict=True):
                    chunk.id = chunk_id
                store.add_history(sha, chunks)
                lexical.upsert(chunks)
            store.set_head(head)

    def add_vectors(self, tier: Tier, ids: list[int], rows: np.ndarray) -> None:
        with self.store.lock:
            self.store.tiers.attach(_TIER[tier], ids, rows, self.store.catalog.chunks)

    def pending_ids(self, tier: Tier) -> list[int]:
        with self.store.lock:
            return self.store.tiers.pending(_TIER[tier], self.store.catalog.chunks)

    def has_vector(self, tier: Tier, chunk_id: int) -> bool:
        return chunk_id in self._tier(tier).live

    def clear(self) -> None:
        with self.store.lock:
            self.store.clear()
            self.lexical.clear()

    def save(self) -> None:
        """Save a consistent snapshot if anything changed (lexical stamped first, see store).

        Not when the workspace folder itself is gone: saving would recreate it on disk. Never
        without changes: a no-change pass writes 0 bytes.
        """
        store, lexical = self.store, self.lexical
        with store.lock:
            if not store.dirty and lexical.generation() == store.generation:
                return
            if not store.root.is_dir():
                log.info("%s no longer exists; its index is not saved", store.root)
                return
            lexical.stamp(store.generation + 1)
            store.save()

    def close(self) -> None:
        self.lexical.close()

    def warm_up(self) -> None:
        self.lexical.warm_up()
        self._symbol_table()  # ~0.2 s on a 17k-chunk folder: not on a first query's path
