"""The on-disk index of one workspace folder, and its in-memory working copy.

`IndexStore` joins three parts, each with one job: the chunk/file metadata (catalog.py), the
vector tiers (vectors.py) and the snapshot folders on disk (snapshot.py, read back by
snapshot_load.py). The index folder also holds lexical/, owned by the lexical module and
stamped with the generation it matches.

Snapshots are atomic: a kill at any moment leaves either the old or the new snapshot live,
never a mix, and a damaged file costs only itself (see snapshot_load.py). Only the holder of
the writer lock (writer_lock.py) saves, and `save` refuses to go behind a newer snapshot on
disk, so generations and ids only ever grow.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from codeask.core.records import Chunk, FileRecord
from codeask.core.storage.catalog import Catalog, HistoryState
from codeask.core.storage.chunk_map import ChunkMap
from codeask.core.storage.file_table import FileTable
from codeask.core.storage.quantized_rows import QuantizedRows
from codeask.core.storage.snapshot import (
    COMPONENTS,
    SCHEMA_VERSION,
    ComponentInfo,
    Manifest,
    SnapshotFolder,
    StoreError,
    current_name,
    generation_of,
    read_manifest,
)
from codeask.core.storage.snapshot_load import SnapshotLoader
from codeask.core.storage.tier_checks import TierChecks
from codeask.core.storage.vectors import VectorIndex, VectorTiers, empty_tier

log = logging.getLogger("codeask.core.indexer")

__all__ = [  # the names callers import from here, wherever they now live
    "COMPONENTS",
    "SCHEMA_VERSION",
    "ComponentInfo",
    "HistoryState",
    "IndexStore",
    "Manifest",
    "StoreError",
    "VectorIndex",
    "current_name",
    "generation_of",
    "read_manifest",
]


class IndexStore:
    """Files, chunks, history and vectors of one folder, with atomic snapshots on disk."""

    def __init__(
        self, folder: Path, root: Path, model: str, dim: int, static: tuple[str, int] = ("", 0)
    ) -> None:
        self.folder = folder
        self.root = root
        self.model = model
        self.dim = dim
        #: The static tier's (model, dim); its vectors live in `static_vectors`.
        self.static_model, self.static_dim = static
        self.lock = threading.RLock()
        self.catalog = self._own(Catalog())
        self.tiers = self._own_tiers(VectorTiers(dim, self.static_dim))
        self.snapshots = SnapshotFolder(folder)
        self.generation = 0
        self.next_id = 1
        self.saved_at = 0.0
        #: What a partial load lost (one note per component); empty after a clean load.
        self.recovered: list[str] = []
        #: The snapshot folder this store was loaded from ('' when it started empty).
        self.loaded_from = ""
        #: The big tiers' hashes after the open (a writer's wait for its first pass).
        self.checks = TierChecks()

    def _own(self, catalog: Catalog) -> Catalog:
        """`catalog`, its chunk delta spilled into this index folder when a pass grows it."""
        catalog.chunks.spill_dir = self.folder
        return catalog

    def _own_tiers(self, tiers: VectorTiers) -> VectorTiers:
        """`tiers`, their growing tails spilled into this index folder (row_spill.py)."""
        tiers.spill_dir = self.folder
        return tiers

    # ---- the parts, under the names callers use -------------------------------------------
    @property
    def files(self) -> FileTable:
        """Indexed files by workspace-relative path (records decoded when read)."""
        return self.catalog.files

    @property
    def chunks(self) -> ChunkMap:
        """Every chunk (code, text and history) by id, decoded when read."""
        return self.catalog.chunks

    @property
    def history(self) -> HistoryState:
        """The indexed commits and the HEAD they match."""
        return self.catalog.history

    @property
    def vectors(self) -> VectorIndex:
        """The main model's vectors."""
        return self.tiers.vectors

    @property
    def static_vectors(self) -> VectorIndex:
        """The static tier's vectors."""
        return self.tiers.static

    # ---- loading -------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        folder: Path,
        root: Path,
        model: str,
        dim: int,
        static: tuple[str, int] = ("", 0),
        *,
        hold_checks: bool = False,
    ) -> tuple[IndexStore, str]:
        """Load the live snapshot, keeping every intact part; returns (store, what was lost).

        A damaged component costs only itself (see snapshot_load.py); what is left empty is
        rebuilt by the next indexing pass. A store that starts empty still continues the
        generation and id counters of whatever is on disk, so ids are never reused, even
        after a crash.
        """
        store = cls(folder, root, model, dim, static)
        try:
            store._load(hold_checks=hold_checks)
        except StoreError as exc:
            fresh = cls(folder, root, model, dim, static)
            # above every generation folder on disk and above any id ever handed out
            fresh.generation = max(store.generation, fresh.snapshots.disk_generation())
            fresh.next_id = max(store.next_id, 1)
            return fresh, str(exc)
        return store, "; ".join(store.recovered)

    def live_name(self) -> str:
        """The snapshot folder CURRENT names now ('' when none): readers reload when it moves."""
        return self.snapshots.live_name()

    def _load(self, *, hold_checks: bool = False) -> None:
        static = (self.static_model, self.static_dim)
        loader = SnapshotLoader(self.snapshots, self.model, self.dim, static)
        try:
            name, manifest, catalog, tiers = loader.load()
            self.catalog, self.tiers = self._own(catalog), self._own_tiers(tiers)
        finally:  # counters read from a manifest survive a failed load (see `open`)
            self.generation, self.next_id = loader.generation, loader.next_id
            self.recovered = loader.recovered
        self.loaded_from = name
        self.saved_at = manifest.updated
        self.checks = TierChecks(loader.later)
        if not hold_checks:
            self.release_checks()

    def release_checks(self) -> None:
        """Hash the big tiers the open left (a writer: after its first pass; tier_checks.py)."""
        self.checks.release(self._drop_tier)

    def _drop_tier(self, name: str, why: str) -> None:
        """A big tier failed its hash: dropped (its vectors are computed again) with a logged
        reason, never searched on silently."""
        log.warning("index at %s: %s; dropped the %s tier, it is rebuilt", self.folder, why, name)
        with self.lock:
            dim = self.dim if name == "vectors" else self.static_dim
            self.tiers.set_tier(name, empty_tier(name, dim))
            self.tiers.changed.add(name)
            self.recovered.append(f"{name}: {why}")

    # ---- mutation --------------------------------------------------------------------------
    def new_ids(self, count: int) -> list[int]:
        """Chunk ids are never reused, so a stale vector can never answer for a new chunk."""
        with self.lock:
            first = self.next_id
            self.next_id += count
            return list(range(first, first + count))

    def replace_file(self, record: FileRecord, chunks: list[Chunk]) -> list[int]:
        """Swap a file's chunks; returns the removed ids. Chunks must carry fresh ids."""
        with self.lock:
            removed = self.catalog.replace_file(record, chunks)
            self.tiers.drop(removed)
            return removed

    def touch_file(self, rel: str, size: int, mtime_ns: int) -> None:
        """Same content, new stat (a checkout or `touch`): keep chunks and vectors."""
        with self.lock:
            self.catalog.touch_file(rel, size, mtime_ns)

    def remove_file(self, rel: str) -> list[int]:
        """Forget a file; returns the removed chunk ids."""
        with self.lock:
            removed = self.catalog.remove_file(rel)
            self.tiers.drop(removed)
            return removed

    def add_history(self, sha: str, chunks: list[Chunk]) -> None:
        """Store one commit's chunks (fresh ids)."""
        with self.lock:
            self.catalog.add_history(sha, chunks)

    def remove_history(self, shas: Iterable[str]) -> list[int]:
        """Forget commits; returns their chunk ids."""
        with self.lock:
            removed = self.catalog.remove_history(shas)
            self.tiers.drop(removed)
        return removed

    def set_head(self, head: str) -> None:
        """Remember which HEAD the history matches."""
        with self.lock:
            self.catalog.set_head(head)

    def add_vectors(self, ids: list[int], rows: np.ndarray) -> None:
        """Attach vectors to chunks that still exist (a concurrent edit may have removed some)."""
        with self.lock:
            self.tiers.attach("vectors", ids, rows, self.catalog.chunks)

    def add_static_vectors(self, ids: list[int], rows: np.ndarray | QuantizedRows) -> None:
        """Attach static-tier vectors to chunks that still exist."""
        with self.lock:
            self.tiers.attach("static", ids, rows, self.catalog.chunks)

    def pending_ids(self) -> list[int]:
        """Chunks without a vector yet."""
        with self.lock:
            return self.tiers.pending("vectors", self.catalog.chunks.id_array())

    def size_model_tier(self, dim: int) -> bool:
        """A model tier of no size (dim 0: its server had not answered, so it holds no vector)
        takes the size `dim` and is written at the next save; False when it has a size."""
        with self.lock:
            if self.dim or dim <= 0:
                return False
            self.dim = self.tiers.dim = dim
            self.tiers.set_tier("vectors", empty_tier("vectors", dim))
            self.tiers.changed.add("vectors")
            return True

    def clear(self) -> None:
        """Forget everything (a full rebuild)."""
        with self.lock:
            self.catalog.chunks.close()
            self.catalog = self._own(Catalog())
            self.tiers = self._own_tiers(VectorTiers(self.dim, self.static_dim))

    @property
    def dirty(self) -> bool:
        """Unsaved changes exist."""
        return bool(self.catalog.changed or self.tiers.changed)

    # ---- saving ----------------------------------------------------------------------------
    def save(self) -> int:
        """Write a complete snapshot, then point CURRENT at it; returns its generation."""
        with self.lock:
            self.snapshots.refuse_stale(self.generation)
            tier_parts = self.tiers.plan_save()
            if self.checks.held:
                self.checks.before_fold(self.tiers.folding, self._drop_tier)
                tier_parts = self.tiers.plan_save()
            self.catalog.plan_save()
            manifest = Manifest(
                schema_version=SCHEMA_VERSION,
                model=self.model,
                dim=self.dim,
                generation=self.generation + 1,
                next_id=self.next_id,
                root=str(self.root),
                updated=time.time(),
                static_model=self.static_model,
                static_dim=self.static_dim,
                indexed_files=self.files.indexed_count(),  # kept by edits: counted once
            )
            changed = self.catalog.changed | tier_parts
            target = self.snapshots.write(manifest, changed, self._write_component)
            self.catalog.saved(target)  # a new base is read from the folder just written
        final = self.snapshots.publish(target)
        with self.lock:
            self.generation = manifest.generation
            self.tiers.rebase(final)
            self.catalog.changed, self.tiers.changed = set(), set()
            self.saved_at = manifest.updated
        self.snapshots.remove_old(keep=final.name)
        return manifest.generation

    def _write_component(self, name: str, path: Path) -> None:
        """Write one changed component of a snapshot being saved."""
        if not self.catalog.write(name, path):
            self.tiers.write(name, path)

    def disk_bytes(self) -> int:
        """Size of the index folder on disk."""
        return self.snapshots.disk_bytes()
