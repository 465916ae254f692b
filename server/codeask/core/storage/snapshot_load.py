"""Reading the live snapshot back into a catalog and vector tiers, keeping every intact part.

Every file is checked against the manifest's size and hash before it is loaded, and a damaged
file costs only itself: bad vectors keep the chunks (re-embedded from the cache), as do bad
static-tier vectors (its own model and dim in the manifest, so a change of that model rebuilds
only that tier), a bad history keeps the code, bad files/chunks mean a rebuild of the file
index; each with one clear log line, never a crash and never silently mixed vectors.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np

from codeask.core.records import HISTORY_KINDS
from codeask.core.storage.catalog import Catalog, HistoryState
from codeask.core.storage.chunk_file import ChunkFile
from codeask.core.storage.chunk_map import ChunkDelta, ChunkMap
from codeask.core.storage.file_table import FileTable
from codeask.core.storage.snapshot import (
    SCHEMA_VERSION,
    Deferred,
    Manifest,
    SnapshotFolder,
    StoreError,
)
from codeask.core.storage.vectors import (
    DELTAS,
    QUANTIZED,
    VectorIndex,
    VectorTiers,
    empty_tier,
)


class SnapshotLoader:
    """One load of the live snapshot for a configured model (and static tier).

    `load` raises StoreError when nothing usable is left; `generation` and `next_id` then still
    hold what the manifest said (if it was readable), so a fresh store continues the counters.
    """

    def __init__(
        self, snapshots: SnapshotFolder, model: str, dim: int, static: tuple[str, int]
    ) -> None:
        self.snapshots = snapshots
        self.model, self.dim = model, dim
        self.static_model, self.static_dim = static
        self.generation = 0
        self.next_id = 1
        #: What the load lost (one note per component); empty after a clean load.
        self.recovered: list[str] = []
        #: Components that did not load: rewritten by the next save.
        self.lost: set[str] = set()
        #: Big vector tiers loaded after a size check only: hashed in the background.
        self.later: list[Deferred] = []

    def load(self) -> tuple[str, Manifest, Catalog, VectorTiers]:
        """(snapshot folder name, manifest, catalog, tiers) with only the lost parts changed."""
        live = self.snapshots.live()
        if live is None:
            raise StoreError("")
        manifest = self.snapshots.manifest(live)
        self.generation, self.next_id = manifest.generation, manifest.next_id
        self._check_manifest(manifest)
        files, chunks = self._load_code(live, manifest)
        history = self._load_history(live, manifest, chunks)
        known = chunks.id_array()
        vectors = self._load_vectors(live, manifest, known)
        static = self._load_static(live, manifest, known)
        tiers = VectorTiers(self.dim, self.static_dim, vectors, static)
        catalog = Catalog(files, chunks, history)
        catalog.changed = self.lost & catalog.changed
        tiers.changed = self.lost & tiers.changed
        return live.name, manifest, catalog, tiers

    def _load_code(self, live: Path, manifest: Manifest) -> tuple[FileTable, ChunkMap]:
        """files + chunks: each file names its chunks, so one without the other is no use.

        The chunk base is mapped, not decoded: its records are checked and decoded when read.
        """
        try:
            paths = [self.snapshots.verify(live, n, manifest) for n in ("files", "chunks")]
            delta_path = self.snapshots.verify(live, "chunks_delta", manifest)
            files = FileTable.decode(
                paths[0].read_bytes(),
                manifest.components["files"].blake2b,
                indexed=manifest.indexed_files,
            )
            delta = msgspec.msgpack.decode(delta_path.read_bytes(), type=ChunkDelta)
            chunks = ChunkMap(ChunkFile(paths[1]), delta)
        except StoreError as exc:
            raise StoreError(f"{exc}; rebuilding the file index") from exc
        except (OSError, msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
            raise StoreError(f"index metadata unreadable ({exc}); rebuilding") from exc
        return files, chunks

    def _load_history(self, live: Path, manifest: Manifest, chunks: ChunkMap) -> HistoryState:
        """A damaged history drops only the commit chunks; the next pass syncs them again."""
        try:
            self.snapshots.verify(live, "history", manifest)
            history = msgspec.msgpack.decode(
                (live / "history.msgpack").read_bytes(), type=HistoryState
            )
        except (
            StoreError,
            OSError,
            msgspec.DecodeError,
            msgspec.ValidationError,
            RecursionError,
        ) as exc:
            self._lost("history", f"{exc}; kept files and code chunks, history is resynced")
            for chunk in [c for c in chunks.values() if c.kind in HISTORY_KINDS]:
                chunks.pop(chunk.id)  # a rare repair: the one path that decodes every chunk
            return HistoryState()
        return history

    def _load_vectors(self, live: Path, manifest: Manifest, known: np.ndarray) -> VectorIndex:
        """Damaged vectors: keep the chunks; they embed again (from the content-hash cache).

        An index saved while its embedding server had never answered holds no model vectors
        (dim 0): once the size is known the tier starts empty at that size and fills in;
        nothing else is lost.
        """
        if manifest.dim == 0 and self.dim:
            self.lost.add("vectors")  # rewritten at the next save, at the known size
            return empty_tier("vectors", self.dim)
        try:
            return self._tier(live, manifest, "vectors", self.dim, known)
        except (StoreError, RuntimeError, OSError, ValueError) as exc:
            self._lost("vectors", f"{exc}; kept the chunks, they are embedded again")
            return empty_tier("vectors", self.dim)

    def _load_static(self, live: Path, manifest: Manifest, known: np.ndarray) -> VectorIndex:
        """The static tier: damaged, missing or from another model costs only this tier."""
        if not self.static_model:  # the tier is off: nothing to load or check
            return empty_tier("static", 1)
        try:
            if (manifest.static_model, manifest.static_dim) != (self.static_model, self.static_dim):
                raise StoreError(
                    f"static tier was built with '{manifest.static_model}' "
                    f"(dim {manifest.static_dim}), configured is '{self.static_model}'"
                )
            return self._tier(live, manifest, "static", self.static_dim, known)
        except (StoreError, RuntimeError, OSError, ValueError) as exc:
            self._lost("static", f"{exc}; kept the chunks, the static tier is rebuilt")
            return empty_tier("static", self.static_dim)

    def _tier(
        self, live: Path, manifest: Manifest, name: str, dim: int, known: np.ndarray
    ) -> VectorIndex:
        """A tier's base and its delta, each checked; a snapshot from before deltas has none."""
        base = self.snapshots.verify(live, name, manifest, self.later)
        delta = None
        if DELTAS[name] in manifest.components:
            delta = self.snapshots.verify(live, DELTAS[name], manifest)
        quantized = name in QUANTIZED
        return VectorIndex.load(
            base, dim, len(known) + 1024, known, quantized=quantized, delta=delta
        )

    def _lost(self, component: str, why: str) -> None:
        """Note a component that did not load; it is rewritten by the next save."""
        self.recovered.append(f"{component}: {why}")
        self.lost.add(component)
        if component == "history":
            self.lost.add("chunks")

    def _check_manifest(self, manifest: Manifest) -> None:
        if manifest.schema_version != SCHEMA_VERSION:
            raise StoreError(
                f"index schema {manifest.schema_version} differs from {SCHEMA_VERSION}; rebuilding"
            )
        waited = manifest.dim == 0  # saved while the model tier waited for its server
        if manifest.model != self.model or (manifest.dim != self.dim and not waited):
            raise StoreError(
                f"index was built with model '{manifest.model}' (dim {manifest.dim}), "
                f"configured is '{self.model}' (dim {self.dim}); rebuilding"
            )
