"""The chunk and file metadata of one folder: which files are indexed, their chunks, the history.

No vectors: the store pairs this with the vector tiers (vectors.py) and writes both into
snapshots (snapshot.py). The chunks are a mapped base plus a delta (chunk_map.py). Every change
notes which component ("files", "chunks_delta", "history") must be written again, so a save
rewrites only what moved; the base ("chunks") is rewritten only by a compaction: at a full pass,
once the delta passes a fraction of the base, or when it was spilled to disk (chunk_spill.py).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec

from codeask.core.records import Chunk, FileRecord
from codeask.core.storage.chunk_file import ChunkFile
from codeask.core.storage.chunk_map import ChunkDelta, ChunkMap
from codeask.core.storage.file_table import FileTable
from codeask.core.storage.snapshot import component_path, fsync_write

#: The snapshot components this module owns, in the order they are written.
PARTS = ("files", "chunks", "chunks_delta", "history")
#: A save folds the delta into a new base once it holds more records than this share of the
#: base (and at least COMPACT_MIN): a one-file edit then writes only the delta.
COMPACT_FRACTION = 0.125
COMPACT_MIN = 4096


def _healer(catalog: Catalog) -> Callable[[int], None]:
    """`catalog.heal` without a reference cycle: a replaced catalog (a reader's reload after each
    edit) is freed at once with its mapped chunk records, not at the next full collection."""
    owner = weakref.ref(catalog)

    def heal(chunk_id: int) -> None:
        live = owner()
        if live is not None:
            live.heal(chunk_id)

    return heal


class HistoryState(msgspec.Struct, kw_only=True):
    """Which commits are indexed, and which chunk ids each one owns."""

    head: str = ""
    commits: dict[str, list[int]] = msgspec.field(default_factory=dict)


class Catalog:
    """Files, chunks and history; mutations return the chunk ids they removed (for the vectors)."""

    def __init__(
        self,
        files: FileTable | dict[str, FileRecord] | None = None,
        chunks: ChunkMap | dict[int, Chunk] | None = None,
        history: HistoryState | None = None,
    ) -> None:
        #: Records by path, decoded from the snapshot one at a time (file_table.py).
        self.files = files if isinstance(files, FileTable) else FileTable(files)
        self.chunks = chunks if isinstance(chunks, ChunkMap) else ChunkMap.of(chunks or {})
        self.chunks.on_damage = _healer(self)
        self.history = HistoryState() if history is None else history
        #: Components (names from PARTS) to write at the next save; a new catalog has them all.
        self.changed: set[str] = set(PARTS)

    def replace_file(self, record: FileRecord, chunks: list[Chunk]) -> list[int]:
        """Swap a file's chunks; returns the removed ids. Chunks must carry fresh ids."""
        old = self.files.get(record.path)
        removed = list(old.chunk_ids) if old else []
        self._drop_chunks(removed)
        for chunk in chunks:
            self.chunks[chunk.id] = chunk
        record.chunk_ids = [c.id for c in chunks]
        self.files[record.path] = record
        self.changed.update(("files", "chunks_delta"))
        return removed

    def touch_file(self, rel: str, size: int, mtime_ns: int) -> None:
        """Same content, new stat (a checkout or `touch`): keep chunks and vectors."""
        record = self.files[rel]
        record.size, record.mtime_ns = size, mtime_ns
        self.files.touched()
        self.changed.add("files")

    def remove_file(self, rel: str) -> list[int]:
        """Forget a file; returns the removed chunk ids."""
        old = self.files.pop(rel, None)
        if old is None:
            return []
        self._drop_chunks(old.chunk_ids)
        self.changed.update(("files", "chunks_delta"))
        return list(old.chunk_ids)

    def _drop_chunks(self, ids: Iterable[int]) -> None:
        for chunk_id in ids:
            self.chunks.pop(chunk_id, None)

    def add_history(self, sha: str, chunks: list[Chunk]) -> None:
        """Store one commit's chunks (fresh ids)."""
        for chunk in chunks:
            self.chunks[chunk.id] = chunk
        self.history.commits[sha] = [c.id for c in chunks]
        self.changed.update(("history", "chunks_delta"))

    def remove_history(self, shas: Iterable[str]) -> list[int]:
        """Forget commits; returns their chunk ids."""
        removed: list[int] = []
        gone = [sha for sha in shas if sha in self.history.commits]
        for sha in gone:
            removed.extend(self.history.commits.pop(sha))
        self._drop_chunks(removed)
        if gone:  # nothing removed: nothing to save (a no-change pass writes 0 bytes)
            self.changed.update(("history", "chunks_delta"))
        return removed

    def set_head(self, head: str) -> None:
        """Remember which HEAD the history matches."""
        if self.history.head != head:
            self.history.head = head
            self.changed.add("history")

    def plan_save(self) -> None:
        """Before a save: compact when the delta has grown (or a damaged record must go)."""
        base = len(self.chunks.base) if self.chunks.base is not None else 0
        if (
            self.chunks.spill is not None
            or self.chunks.damaged
            or self.chunks.delta_size() > max(COMPACT_MIN, base * COMPACT_FRACTION)
        ):
            self.changed.add("chunks")
        if "chunks" in self.changed:
            self.changed.add("chunks_delta")  # an empty delta over the new base

    def heal(self, chunk_id: int) -> None:
        """A damaged chunk record was found: its file (or commit) is indexed again by the next
        pass, and the next save writes a base without it. Damage costs only what it touched."""
        for record in self.files.values():
            if chunk_id in record.chunk_ids:
                record.size, record.sha256 = -1, ""  # the next pass reads it again
                self.files.touched()
                self.changed.add("files")
        self.remove_history([s for s, ids in self.history.commits.items() if chunk_id in ids])
        self.changed.add("chunks")

    def write(self, name: str, path: Path) -> bool:
        """Write one component (a name from PARTS); False when it is not this module's."""
        if name == "chunks":
            self.chunks.write_base(path)
            return True
        if name == "chunks_delta" and "chunks" in self.changed:
            data = msgspec.msgpack.encode(ChunkDelta())
        elif name == "chunks_delta":
            data = msgspec.msgpack.encode(self.chunks.delta())
        elif name == "files":
            data = self.files.encode()
        elif name == "history":
            data = msgspec.msgpack.encode(self.history)
        else:
            return False
        fsync_write(path, data)
        return True

    def saved(self, folder: Path) -> None:
        """After the components were written to `folder`: a new base replaces base + delta."""
        if "chunks" in self.changed:
            old = self.chunks
            self.chunks = ChunkMap(ChunkFile(component_path(folder, "chunks")))
            self.chunks.on_damage = _healer(self)
            self.chunks.spill_dir = old.spill_dir
            old.close()  # its spilled records are in the new base
