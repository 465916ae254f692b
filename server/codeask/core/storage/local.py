"""`LocalStorage`: the default `Storage` (core/storage/protocol.py), an adapter over the local
parts.

Chunks, files and history live in `IndexStore` (catalog + msgspec snapshots), vectors in its
tiers (one float32 matrix each, rows keyed by chunk id: core/storage/vectors.py), lexical rows in
`LexicalIndex` (BM25 segment files, memory-mapped; keyed by chunk id). This class
takes the store's lock where a call must see or change several parts at once, and owns the
symbol table retrieval asks. `LocalStorage.open` loads a snapshot with a lexical table that
provably matches it (a writer repairs what it loads; a reader never touches the writer's files
and falls back to a private in-memory copy); the storage factory (core/storage/factory.py) calls it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from codeask.config import Settings
from codeask.core.embedding.embed import tier_dim
from codeask.core.embedding.static import STATIC_DIM, STATIC_MODEL_NAME
from codeask.core.records import Chunk, FileRecord
from codeask.core.storage.file_table import StatedT
from codeask.core.storage.lexical.index import LexicalIndex
from codeask.core.storage.path_scan import PathScans
from codeask.core.storage.protocol import DenseAsk, IndexCounts, Tier
from codeask.core.storage.quantized_rows import QuantizedRows
from codeask.core.storage.store import IndexStore, VectorIndex, current_name, read_manifest
from codeask.core.storage.symbol_table import HAND_OVER, SymbolTable

log = logging.getLogger("codeask.core.indexer")

#: The lexical tables' folder in an index folder (storage/lexical/disk.py).
LEXICAL_FOLDER = "lexical"

#: The store's name of each tier.
_TIER = {"minilm": "vectors", "static": "static"}


class LocalStorage:
    """One folder's store and lexical table behind the `Storage` protocol."""

    def __init__(self, store: IndexStore, lexical: LexicalIndex) -> None:
        self._store = store
        self._lexical = lexical
        self._symbols = SymbolTable()
        self._scans = PathScans()

    @classmethod
    def open(
        cls, folder: Path, root: Path, settings: Settings, *, read_only: bool, kind: str
    ) -> tuple[LocalStorage, str]:
        """The index in `folder` (writer: repairing it; reader: as it is), and why its snapshot
        was (partly) unreadable ("" when it was intact)."""
        store, lexical, reason = _open_parts(folder, root, settings, read_only=read_only)
        return cls(store, lexical), reason

    # ---- what the loaded snapshot is (a reader's reload, tests, benchmarks) ------------------
    def newer_on_disk(self) -> bool:
        """Whether the writer saved a snapshot after the one loaded (CURRENT moved): a reader
        then opens the index again."""
        return self._store.live_name() != self._store.loaded_from

    @property
    def recovered(self) -> list[str]:
        """What the load could not read and dropped ("static: ...", a tier or a segment);
        empty when the snapshot was intact."""
        return list(self._store.recovered)

    def lexical_rows(self) -> int:
        """Rows of the lexical table: `chunk_count()` after every write (a consistency check)."""
        return self._lexical.count()

    def lexical_on_disk(self) -> bool:
        """Whether lexical search reads the table on disk read-only (a reader's view of the
        writer's file) rather than a private in-memory copy or a writable table."""
        return self._lexical.readonly and self._lexical.path is not None

    def parts(self) -> tuple[IndexStore, LexicalIndex]:
        """The store and the lexical table themselves, for profilers that measure them
        (benchmarks/memory_profile.py). Nothing in codeask calls it: go through the methods."""
        return self._store, self._lexical

    def _tier(self, tier: Tier) -> VectorIndex:
        return self._store.tiers.tier(_TIER[tier])

    # ---- reading ---------------------------------------------------------------------------
    @property
    def generation(self) -> int:
        return self._store.generation

    @property
    def model(self) -> str:
        return self._store.model

    def tier_model(self, tier: Tier) -> tuple[str, int]:
        store = self._store
        return (
            (store.model, store.dim) if tier == "minilm" else (store.static_model, store.static_dim)
        )

    def counts(self) -> IndexCounts:
        """Without the lock (a save holds it while writing): each count is one atomic read."""
        store = self._store
        return IndexCounts(
            files=store.files.indexed_count(),
            chunks=len(store.chunks),
            embedded=len(store.vectors.live),
            static_embedded=len(store.static_vectors.live),
            history_commits=len(store.history.commits),
        )

    def chunk_count(self) -> int:
        return len(self._store.chunks)

    def vector_count(self, tier: Tier) -> int:
        return len(self._tier(tier).live)

    def file(self, path: str) -> FileRecord | None:
        return self._store.files.get(path)

    def paths(self) -> list[str]:
        with self._store.lock:
            return list(self._store.files)

    def chunk(self, chunk_id: int) -> Chunk | None:
        return self._store.chunks.get(chunk_id)

    def chunks(self, chunk_ids: Iterable[int]) -> dict[int, Chunk]:
        return self._store.chunks.get_many(chunk_ids)  # as `chunk`: no lock

    def chunks_of(self, path: str) -> list[Chunk]:
        store = self._store
        with store.lock:
            record = store.files.get(path)
            chunks = store.chunks
            return [chunks[i] for i in (record.chunk_ids if record else []) if i in chunks]

    def all_chunks(self) -> list[Chunk]:
        with self._store.lock:
            return list(self._store.chunks.values())

    def history_commits(self) -> list[str]:
        with self._store.lock:
            return list(self._store.history.commits)

    def _symbol_table(self) -> SymbolTable:
        """Path keys only: symbol names are read from the chunk base's own table."""
        store = self._store
        with store.lock:  # an edit that adds or removes no file keeps it
            self._symbols = HAND_OVER.kept_or_built(
                self._symbols, store.files.paths_key(), store.files
            )
        return self._symbols

    def symbol_ids(self, name: str) -> list[int]:
        with self._store.lock:
            return self._store.chunks.symbol_ids(name)

    def paths_named(self, key: str) -> list[str]:
        with self._store.lock:  # a one-shot process scans the paths (path_scan.py)
            scan = self._scans.current(self._symbols, self._store.files)
        return (scan or self._symbol_table()).paths_named(key)

    def vector(self, tier: Tier, chunk_id: int) -> np.ndarray | None:
        with self._store.lock:
            return self._tier(tier).vector(chunk_id)

    def dense_top_k(
        self, tier: Tier, vector: np.ndarray, k: int, *, missing_from: Tier | None = None
    ) -> list[tuple[int, float]]:
        with self._store.lock:
            index = self._tier(tier)
            if missing_from is None:
                return index.query(vector, k)
            covered = self._tier(missing_from).live
            if len(covered) >= len(self._store.chunks):
                return []  # the other tier covers everything: nothing left to fill
            hits = index.query(vector, 2 * k)
            inside = covered.contains(np.fromiter((h[0] for h in hits), np.int64, len(hits)))
            return [hit for hit, held in zip(hits, inside.tolist(), strict=True) if not held][:k]

    def dense_asks(self, tier: Tier, k: int, *, missing_from: Tier | None = None) -> list[DenseAsk]:
        return []  # in-process: nothing to batch

    def lexical_top_k(self, query: str, k: int) -> list[tuple[int, float]]:
        return self._lexical.search(query, k)

    def lexical_files(self, query: str, k: int) -> list[tuple[str, float]]:
        return self._lexical.search_files(query, k)

    def saved_at(self) -> float:
        return self._store.saved_at

    def disk_bytes(self) -> int:
        return self._store.disk_bytes()

    # ---- writing ---------------------------------------------------------------------------
    def new_ids(self, count: int) -> list[int]:
        return self._store.new_ids(count)

    def replace_file(
        self,
        record: FileRecord,
        chunks: Sequence[Chunk],
        static_rows: np.ndarray | QuantizedRows | None = None,
        columns: Sequence[tuple[str, str, str]] | None = None,
    ) -> list[int]:
        store, lexical = self._store, self._lexical
        with store.lock:
            removed = store.replace_file(record, list(chunks))
            if static_rows is not None:
                store.add_static_vectors([c.id for c in chunks], static_rows)
            lexical.replace_file(record.path, removed, chunks, columns)
            return removed

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        self._store.touch_file(path, size, mtime_ns)

    def changed_files(self, files: Sequence[StatedT]) -> list[StatedT]:
        return self._store.files.changed(files)

    def remove_file(self, path: str) -> list[int]:
        with self._store.lock:
            removed = self._store.remove_file(path)
            self._lexical.remove(removed)
            self._lexical.remove_file(path)
            return removed

    def sync_history(
        self, removed: Iterable[str], added: dict[str, list[Chunk]], head: str
    ) -> None:
        store, lexical = self._store, self._lexical
        with store.lock:
            lexical.remove(store.remove_history(removed))
            for sha, chunks in added.items():
                for chunk, chunk_id in zip(chunks, store.new_ids(len(chunks)), strict=True):
                    chunk.id = chunk_id
                store.add_history(sha, chunks)
                lexical.upsert(chunks)
            store.set_head(head)

    def add_vectors(self, tier: Tier, ids: list[int], rows: np.ndarray) -> None:
        with self._store.lock:
            self._store.tiers.attach(_TIER[tier], ids, rows, self._store.catalog.chunks)

    def pending_ids(self, tier: Tier) -> list[int]:
        with self._store.lock:
            return self._store.tiers.pending(_TIER[tier], self._store.catalog.chunks.id_array())

    def has_vector(self, tier: Tier, chunk_id: int) -> bool:
        return chunk_id in self._tier(tier).live

    def release_checks(self) -> None:
        self._store.release_checks()

    def size_model_tier(self, dim: int) -> bool:
        with self._store.lock:
            return self._store.size_model_tier(dim)

    def clear(self) -> None:
        with self._store.lock:
            self._store.clear()
            self._lexical.clear()

    def save(self) -> None:
        """Save a consistent snapshot if anything changed (lexical stamped first, see store).

        Not when the workspace folder itself is gone: saving would recreate it on disk. Never
        without changes: a no-change pass writes 0 bytes.
        """
        store, lexical = self._store, self._lexical
        with store.lock:
            if not store.dirty and lexical.generation() == store.generation:
                return
            if not store.root.is_dir():
                log.info("%s no longer exists; its index is not saved", store.root)
                return
            lexical.stamp(store.generation + 1)
            store.save()

    def close(self) -> None:
        self._lexical.close()
        HAND_OVER.give(self._symbols, self._store.files.paths_key())

    def warm_up(self) -> None:
        self._lexical.warm_up()
        self._symbol_table()  # ~0.2 s on a 17k-chunk folder: not on a first query's path


# ---- opening the local parts --------------------------------------------------------------------
def _open_parts(
    folder: Path, root: Path, settings: Settings, *, read_only: bool
) -> tuple[IndexStore, LexicalIndex, str]:
    """The store and lexical table in `folder`, and why the snapshot was (partly) unreadable."""
    store, reason = _open_store(folder, root, settings, read_only=read_only)
    if reason:
        action = "kept the rest" if store.recovered else "starting empty"
        if read_only:
            action += "; the writer rebuilds what is missing"
        log.warning("index at %s: %s (%s)", folder, reason, action)
    lexical = _open_lexical(
        store,
        folder,
        read_only=read_only,
        fallback=lambda: _memory_lexical(store),  # the snapshot loaded by then
    )
    return store, lexical, reason


def _open_store(
    folder: Path, root: Path, settings: Settings, *, read_only: bool
) -> tuple[IndexStore, str]:
    """Load the snapshot; a reader retries when the writer replaced it mid-load."""
    model, built = settings.embed.model, read_manifest(folder)
    # a server's size: remembered, else asked, else (server down) the one this index holds
    dim = tier_dim(settings, built.dim if built is not None and built.model == model else 0)
    static = (STATIC_MODEL_NAME, STATIC_DIM) if "static" in settings.embed.tiers else ("", 0)
    for _ in range(5):
        before = current_name(folder)
        # a writer hashes its big tiers after its first pass (tier_checks.py)
        store, reason = IndexStore.open(folder, root, model, dim, static, hold_checks=not read_only)
        if not (read_only and reason) or store.live_name() == before:
            break
    return store, reason


def _open_lexical(
    store: IndexStore,
    folder: Path,
    *,
    read_only: bool,
    fallback: Callable[[], LexicalIndex],
) -> LexicalIndex:
    """The lexical tables of `store`'s snapshot; a writer rebuilds damaged or stale ones.

    `fallback` builds a reader's in-memory copy when the tables on disk do not match.
    """
    path = folder / LEXICAL_FOLDER
    if read_only:
        clean = not store.recovered
        view = LexicalIndex.open_snapshot(path, store.generation, len(store.chunks))
        return view if clean and view is not None else fallback()
    _drop_sqlite_tables(folder)
    lexical = LexicalIndex(path)
    if lexical.generation() != store.generation or lexical.count() != len(store.chunks):
        if store.chunks:
            log.info("lexical index does not match snapshot %d; rebuilding it", store.generation)
        lexical.rebuild(store.chunks.values())
        lexical.stamp(store.generation)
    return lexical


def _drop_sqlite_tables(folder: Path) -> None:
    """An index of the previous layout kept its lexical tables in SQLite FTS5
    (lexical.sqlite, a second copy of every chunk's text): removed, the tables rebuilt."""
    old = folder / "lexical.sqlite"
    if old.exists():
        log.info("lexical index %s: the older SQLite layout; rebuilt as %s/", old, LEXICAL_FOLDER)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{old}{suffix}").unlink(missing_ok=True)


def _memory_lexical(store: IndexStore) -> LexicalIndex:
    """The loaded snapshot's chunks as an in-memory table: a reader's own, consistent copy."""
    memory = LexicalIndex(None)
    memory.rebuild(store.chunks.values())
    memory.stamp(store.generation)
    return memory
