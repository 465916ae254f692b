"""The on-disk index of one workspace folder, and its in-memory working copy.

Layout of the index folder:

    CURRENT                 name of the live snapshot folder (replaced atomically)
    gen-000007/manifest.json  schema, model, dim, generation, next id, size+blake2b of each file
    gen-000007/files.msgpack, chunks.msgpack, history.msgpack, vectors.hnsw, static.hnsw
    lexical.sqlite          owned by the lexical module; stamped with the generation it matches

A snapshot folder is written completely (temp files, fsync) before CURRENT points at it, so a
kill at any moment leaves either the old or the new snapshot live, never a mix. Every file is
checked against the manifest's size and hash before it is loaded, and a damaged file costs only
itself: bad vectors keep the chunks (re-embedded from the cache), as do bad static-tier vectors
(the second vector tier, see static_embed.py; its own model and dim in the manifest, so a change
of that model rebuilds only that tier), a bad history keeps the code,
bad files/chunks mean a rebuild of the file index; each with one clear log line, never a crash
and never silently mixed vectors. Only the holder of the writer lock (writer_lock.py) saves, and
`save` refuses to go behind a newer snapshot on disk, so generations and ids only ever grow.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import hnswlib
import msgspec
import numpy as np

from codeask.core.records import Chunk, FileRecord

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
COMPONENTS = ("files", "chunks", "history", "vectors", "static")
_EXT = {
    "files": "msgpack",
    "chunks": "msgpack",
    "history": "msgpack",
    "vectors": "hnsw",
    "static": "hnsw",
}


class StoreError(Exception):
    """A snapshot cannot be loaded; the message is the reason logged before a rebuild."""


class ComponentInfo(msgspec.Struct):
    size: int
    blake2b: str


class Manifest(msgspec.Struct, kw_only=True):
    schema_version: int
    model: str
    dim: int
    generation: int
    next_id: int
    root: str
    updated: float
    components: dict[str, ComponentInfo] = msgspec.field(default_factory=dict)
    static_model: str = ""
    """The static tier's model ('' in snapshots written before the tier existed)."""
    static_dim: int = 0


class HistoryState(msgspec.Struct, kw_only=True):
    """Which commits are indexed, and which chunk ids each one owns."""

    head: str = ""
    commits: dict[str, list[int]] = msgspec.field(default_factory=dict)


def _digest(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync_write(path: Path, data: bytes) -> None:
    with path.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def current_name(folder: Path) -> str:
    """The snapshot folder an index folder's CURRENT names ('' when none or unreadable)."""
    try:
        return (folder / "CURRENT").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def generation_of(name: str) -> int:
    """`gen-000007` → 7; 0 for any other name."""
    digits = name[4:]
    return int(digits) if name.startswith("gen-") and digits.isdigit() else 0


def read_manifest(folder: Path) -> Manifest | None:
    """The live manifest of an index folder, read without creating or locking anything."""
    name = current_name(folder)
    if not name.startswith("gen-"):
        return None
    try:
        return msgspec.json.decode((folder / name / "manifest.json").read_bytes(), type=Manifest)
    except (OSError, msgspec.DecodeError):
        return None


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
        self._index.set_ef(max(64, k))
        try:
            labels, distances = self._index.knn_query(vector.reshape(1, -1), k=k)
        except RuntimeError:
            return []
        return [(int(i), 1.0 - float(d)) for i, d in zip(labels[0], distances[0], strict=True)]

    def save(self, path: Path) -> None:
        """Write the index file."""
        self._index.save_index(str(path))


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
        self.files: dict[str, FileRecord] = {}
        self.chunks: dict[int, Chunk] = {}
        self.history = HistoryState()
        self.vectors = VectorIndex(dim)
        self.static_vectors = VectorIndex(max(1, self.static_dim))
        self.generation = 0
        self.next_id = 1
        self._dirty: set[str] = set(COMPONENTS)
        self.saved_at = 0.0
        #: What a partial load lost (one note per component); empty after a clean load.
        self.recovered: list[str] = []
        #: The snapshot folder this store was loaded from ('' when it started empty).
        self.loaded_from = ""

    # ---- loading -------------------------------------------------------------------------
    @classmethod
    def open(
        cls, folder: Path, root: Path, model: str, dim: int, static: tuple[str, int] = ("", 0)
    ) -> tuple[IndexStore, str]:
        """Load the live snapshot, keeping every intact part; returns (store, what was lost).

        A damaged component costs only itself (see `_load`); what is left empty is rebuilt by
        the next indexing pass. A store that starts empty still continues the generation and
        id counters of whatever is on disk, so ids are never reused, even after a crash.
        """
        store = cls(folder, root, model, dim, static)
        try:
            store._load()
        except StoreError as exc:
            fresh = cls(folder, root, model, dim, static)
            fresh._continue_counters(store)
            return fresh, str(exc)
        return store, "; ".join(store.recovered)

    def _continue_counters(self, failed: IndexStore) -> None:
        """Start above every generation folder on disk and above any id ever handed out."""
        self.generation = max(failed.generation, self.disk_generation())
        self.next_id = max(failed.next_id, 1)

    def disk_generation(self) -> int:
        """The highest generation on disk: CURRENT's, or the newest gen-* folder's number."""
        best = 0
        try:
            entries = list(self.folder.iterdir())
        except OSError:
            return 0
        for entry in entries:
            best = max(best, generation_of(entry.name.split(".")[0]))
        return best

    def live_name(self) -> str:
        """The snapshot folder CURRENT names now ('' when none): readers reload when it moves."""
        return current_name(self.folder)

    def _live_folder(self) -> Path | None:
        pointer = self.folder / "CURRENT"
        if not pointer.exists():
            return None
        try:
            name = pointer.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"index pointer {pointer} unreadable ({exc})") from exc
        live = self.folder / name
        if not name.startswith("gen-") or not live.is_dir():
            raise StoreError(f"index pointer names a missing snapshot '{name}'")
        return live

    def _load(self) -> None:
        live = self._live_folder()
        if live is None:
            raise StoreError("")
        try:
            manifest = msgspec.json.decode((live / "manifest.json").read_bytes(), type=Manifest)
        except (OSError, msgspec.DecodeError) as exc:
            raise StoreError(f"index manifest unreadable ({exc})") from exc
        self.generation, self.next_id = manifest.generation, manifest.next_id
        self._check_manifest(manifest)
        self.loaded_from = live.name
        self._dirty = set()  # from here on, only what `_lost` marks must be written again
        files, chunks = self._load_code(live, manifest)
        history, chunks = self._load_history(live, manifest, chunks)
        known = {c.id for c in chunks}
        self.vectors = self._load_vectors(live, manifest, known)
        self.static_vectors = self._load_static(live, manifest, known)
        self.files, self.history = files, history
        self.chunks = {c.id: c for c in chunks}
        self.saved_at = manifest.updated

    def _load_code(
        self, live: Path, manifest: Manifest
    ) -> tuple[dict[str, FileRecord], list[Chunk]]:
        """files + chunks: each file names its chunks, so one without the other is no use."""
        try:
            for name in ("files", "chunks"):
                self._verify(live, name, manifest)
            files = msgspec.msgpack.decode(
                (live / "files.msgpack").read_bytes(), type=dict[str, FileRecord]
            )
            chunks = msgspec.msgpack.decode(
                (live / "chunks.msgpack").read_bytes(), type=list[Chunk]
            )
        except StoreError as exc:
            raise StoreError(f"{exc}; rebuilding the file index") from exc
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise StoreError(f"index metadata unreadable ({exc}); rebuilding") from exc
        return files, chunks

    def _load_history(
        self, live: Path, manifest: Manifest, chunks: list[Chunk]
    ) -> tuple[HistoryState, list[Chunk]]:
        """A damaged history drops only the commit chunks; the next pass syncs them again."""
        try:
            self._verify(live, "history", manifest)
            history = msgspec.msgpack.decode(
                (live / "history.msgpack").read_bytes(), type=HistoryState
            )
        except (StoreError, OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            self._lost("history", f"{exc}; kept files and code chunks, history is resynced")
            return HistoryState(), [c for c in chunks if c.kind not in ("commit", "hunk")]
        return history, chunks

    def _load_vectors(self, live: Path, manifest: Manifest, known: set[int]) -> VectorIndex:
        """Damaged vectors: keep the chunks; they embed again (from the content-hash cache)."""
        try:
            self._verify(live, "vectors", manifest)
            return VectorIndex.load(live / "vectors.hnsw", self.dim, len(known) + 1024, known)
        except (StoreError, RuntimeError, OSError, ValueError) as exc:
            self._lost("vectors", f"{exc}; kept the chunks, they are embedded again")
            return VectorIndex(self.dim)

    def _load_static(self, live: Path, manifest: Manifest, known: set[int]) -> VectorIndex:
        """The static tier: damaged, missing or from another model costs only this tier."""
        if not self.static_model:  # the tier is off: nothing to load or check
            return VectorIndex(1)
        try:
            if (manifest.static_model, manifest.static_dim) != (self.static_model, self.static_dim):
                raise StoreError(
                    f"static tier was built with '{manifest.static_model}' "
                    f"(dim {manifest.static_dim}), configured is '{self.static_model}'"
                )
            self._verify(live, "static", manifest)
            path = live / "static.hnsw"
            return VectorIndex.load(path, self.static_dim, len(known) + 1024, known)
        except (StoreError, RuntimeError, OSError, ValueError) as exc:
            self._lost("static", f"{exc}; kept the chunks, the static tier is rebuilt")
            return VectorIndex(max(1, self.static_dim))

    def _lost(self, component: str, why: str) -> None:
        """Note a component that did not load; it is rewritten by the next save."""
        self.recovered.append(f"{component}: {why}")
        self._dirty.add(component)
        if component == "history":
            self._dirty.add("chunks")

    def _check_manifest(self, manifest: Manifest) -> None:
        if manifest.schema_version != SCHEMA_VERSION:
            raise StoreError(
                f"index schema {manifest.schema_version} differs from {SCHEMA_VERSION}; rebuilding"
            )
        if manifest.model != self.model or manifest.dim != self.dim:
            raise StoreError(
                f"index was built with model '{manifest.model}' (dim {manifest.dim}), "
                f"configured is '{self.model}' (dim {self.dim}); rebuilding"
            )

    def _verify(self, live: Path, name: str, manifest: Manifest) -> None:
        path = live / f"{name}.{_EXT[name]}"
        info = manifest.components.get(name)
        if info is None or not path.is_file():
            raise StoreError(f"index file {path.name} missing")
        size = path.stat().st_size
        if size != info.size:
            raise StoreError(
                f"index file {path.name} is {size} bytes, manifest says {info.size} "
                "(truncated or overwritten)"
            )
        if _digest(path) != info.blake2b:
            raise StoreError(f"index file {path.name} fails its checksum (corrupted)")

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
            old = self.files.get(record.path)
            removed = list(old.chunk_ids) if old else []
            self._drop_chunks(removed)
            for chunk in chunks:
                self.chunks[chunk.id] = chunk
            record.chunk_ids = [c.id for c in chunks]
            self.files[record.path] = record
            self._dirty.update(("files", "chunks"))
            return removed

    def touch_file(self, rel: str, size: int, mtime_ns: int) -> None:
        """Same content, new stat (a checkout or `touch`): keep chunks and vectors."""
        with self.lock:
            record = self.files[rel]
            record.size, record.mtime_ns = size, mtime_ns
            self._dirty.add("files")

    def remove_file(self, rel: str) -> list[int]:
        """Forget a file; returns the removed chunk ids."""
        with self.lock:
            old = self.files.pop(rel, None)
            if old is None:
                return []
            self._drop_chunks(old.chunk_ids)
            self._dirty.update(("files", "chunks"))
            return list(old.chunk_ids)

    def _drop_chunks(self, ids: Iterable[int]) -> None:
        ids = list(ids)
        for chunk_id in ids:
            self.chunks.pop(chunk_id, None)
        if self.vectors.live.intersection(ids):
            self.vectors.remove(ids)
            self._dirty.add("vectors")
        if self.static_vectors.live.intersection(ids):
            self.static_vectors.remove(ids)
            self._dirty.add("static")

    def add_history(self, sha: str, chunks: list[Chunk]) -> None:
        """Store one commit's chunks (fresh ids)."""
        with self.lock:
            for chunk in chunks:
                self.chunks[chunk.id] = chunk
            self.history.commits[sha] = [c.id for c in chunks]
            self._dirty.update(("history", "chunks"))

    def remove_history(self, shas: Iterable[str]) -> list[int]:
        """Forget commits; returns their chunk ids."""
        removed: list[int] = []
        with self.lock:
            gone = [sha for sha in shas if sha in self.history.commits]
            for sha in gone:
                removed.extend(self.history.commits.pop(sha))
            self._drop_chunks(removed)
            if gone:  # nothing removed: nothing to save (a no-change pass writes 0 bytes)
                self._dirty.update(("history", "chunks"))
        return removed

    def set_head(self, head: str) -> None:
        """Remember which HEAD the history matches."""
        with self.lock:
            if self.history.head != head:
                self.history.head = head
                self._dirty.add("history")

    def add_vectors(self, ids: list[int], rows: np.ndarray) -> None:
        """Attach vectors to chunks that still exist (a concurrent edit may have removed some)."""
        self._attach("vectors", ids, rows)

    def add_static_vectors(self, ids: list[int], rows: np.ndarray) -> None:
        """Attach static-tier vectors to chunks that still exist."""
        self._attach("static", ids, rows)

    def _tier(self, component: str) -> VectorIndex:
        """The vector index saved as `component` ("vectors": MiniLM, "static": the static tier)."""
        return self.static_vectors if component == "static" else self.vectors

    def _attach(self, component: str, ids: list[int], rows: np.ndarray) -> None:
        with self.lock:
            keep = [i for i, chunk_id in enumerate(ids) if chunk_id in self.chunks]
            if not keep:
                return
            self._tier(component).add([ids[i] for i in keep], rows[keep])
            self._dirty.add(component)

    def pending_ids(self) -> list[int]:
        """Chunks without a vector yet."""
        return self._pending("vectors")

    def static_pending_ids(self) -> list[int]:
        """Chunks without a static-tier vector yet."""
        return self._pending("static")

    def _pending(self, component: str) -> list[int]:
        with self.lock:
            live = self._tier(component).live
            return [i for i in self.chunks if i not in live]

    def clear(self) -> None:
        """Forget everything (a full rebuild)."""
        with self.lock:
            self.files, self.chunks, self.history = {}, {}, HistoryState()
            self.vectors = VectorIndex(self.dim)
            self.static_vectors = VectorIndex(max(1, self.static_dim))
            self._dirty = set(COMPONENTS)

    @property
    def dirty(self) -> bool:
        """Unsaved changes exist."""
        return bool(self._dirty)

    # ---- saving ----------------------------------------------------------------------------
    def save(self) -> int:
        """Write a complete snapshot, then point CURRENT at it; returns its generation."""
        with self.lock:
            self._refuse_stale_save()
            if self.vectors.needs_compaction():
                self.vectors = self.vectors.compacted()
                self._dirty.add("vectors")
            if self.static_vectors.needs_compaction():
                self.static_vectors = self.static_vectors.compacted()
                self._dirty.add("static")
            generation = self.generation + 1
            target = self.folder / f"gen-{generation:06d}.tmp"
            if target.exists():
                shutil.rmtree(target)
            target.mkdir(parents=True)
            previous = self._live_folder_quiet()
            manifest = Manifest(
                schema_version=SCHEMA_VERSION,
                model=self.model,
                dim=self.dim,
                generation=generation,
                next_id=self.next_id,
                root=str(self.root),
                updated=time.time(),
                static_model=self.static_model,
                static_dim=self.static_dim,
            )
            for name in COMPONENTS:
                manifest.components[name] = self._write_component(target, name, previous)
            _fsync_write(target / "manifest.json", msgspec.json.encode(manifest))
        final = self.folder / f"gen-{generation:06d}"
        if final.exists():
            shutil.rmtree(final)
        os.replace(target, final)
        _fsync_dir(self.folder)
        pointer_tmp = self.folder / "CURRENT.tmp"
        _fsync_write(pointer_tmp, final.name.encode())
        os.replace(pointer_tmp, self.folder / "CURRENT")
        _fsync_dir(self.folder)
        with self.lock:
            self.generation = generation
            self._dirty = set()
            self.saved_at = manifest.updated
        self._remove_old_snapshots(keep=final.name)
        return generation

    def _refuse_stale_save(self) -> None:
        """Belt and braces behind the writer lock: never write over a newer snapshot.

        Another writer's snapshot on disk means this copy's ids and generation are stale;
        saving would send the generation backwards and reuse ids. The caller reopens instead.
        """
        name = self.live_name()
        on_disk = generation_of(name)
        if on_disk > self.generation:
            raise StoreError(
                f"snapshot {name} on disk is newer than this index's generation "
                f"{self.generation} (another writer); not saving over it"
            )

    def _live_folder_quiet(self) -> Path | None:
        try:
            return self._live_folder()
        except StoreError:
            return None

    def _write_component(self, target: Path, name: str, previous: Path | None) -> ComponentInfo:
        path = target / f"{name}.{_EXT[name]}"
        old = previous / path.name if previous else None
        if name not in self._dirty and old is not None and old.is_file():
            try:
                os.link(old, path)
            except OSError:
                shutil.copyfile(old, path)
        elif name == "vectors":
            self.vectors.save(path)
        elif name == "static":
            self.static_vectors.save(path)
        else:
            _fsync_write(path, self._encode(name))
        return ComponentInfo(size=path.stat().st_size, blake2b=_digest(path))

    def _encode(self, name: str) -> bytes:
        if name == "files":
            return msgspec.msgpack.encode(self.files)
        if name == "chunks":
            return msgspec.msgpack.encode(list(self.chunks.values()))
        return msgspec.msgpack.encode(self.history)

    def _remove_old_snapshots(self, keep: str) -> None:
        for entry in self.folder.iterdir():
            if entry.is_dir() and entry.name.startswith("gen-") and entry.name != keep:
                shutil.rmtree(entry, ignore_errors=True)

    def disk_bytes(self) -> int:
        """Size of the index folder on disk."""
        total = 0
        for path in self.folder.rglob("*"):
            if path.is_file():
                total += path.stat().st_size
        return total
