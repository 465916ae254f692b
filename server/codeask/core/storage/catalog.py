"""The chunk and file metadata of one folder: which files are indexed, their chunks, the history.

No vectors and no disk: the store pairs this with the vector tiers (vectors.py) and writes both
into snapshots (snapshot.py). Every change notes which component ("files", "chunks",
"history") must be written again, so a save rewrites only what moved.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from codeask.core.records import Chunk, FileRecord

#: The snapshot components this module owns, in the order they are written.
PARTS = ("files", "chunks", "history")


class HistoryState(msgspec.Struct, kw_only=True):
    """Which commits are indexed, and which chunk ids each one owns."""

    head: str = ""
    commits: dict[str, list[int]] = msgspec.field(default_factory=dict)


class Catalog:
    """Files, chunks and history; mutations return the chunk ids they removed (for the vectors)."""

    def __init__(
        self,
        files: dict[str, FileRecord] | None = None,
        chunks: dict[int, Chunk] | None = None,
        history: HistoryState | None = None,
    ) -> None:
        self.files: dict[str, FileRecord] = {} if files is None else files
        self.chunks: dict[int, Chunk] = {} if chunks is None else chunks
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
        self.changed.update(("files", "chunks"))
        return removed

    def touch_file(self, rel: str, size: int, mtime_ns: int) -> None:
        """Same content, new stat (a checkout or `touch`): keep chunks and vectors."""
        record = self.files[rel]
        record.size, record.mtime_ns = size, mtime_ns
        self.changed.add("files")

    def remove_file(self, rel: str) -> list[int]:
        """Forget a file; returns the removed chunk ids."""
        old = self.files.pop(rel, None)
        if old is None:
            return []
        self._drop_chunks(old.chunk_ids)
        self.changed.update(("files", "chunks"))
        return list(old.chunk_ids)

    def _drop_chunks(self, ids: Iterable[int]) -> None:
        for chunk_id in ids:
            self.chunks.pop(chunk_id, None)

    def add_history(self, sha: str, chunks: list[Chunk]) -> None:
        """Store one commit's chunks (fresh ids)."""
        for chunk in chunks:
            self.chunks[chunk.id] = chunk
        self.history.commits[sha] = [c.id for c in chunks]
        self.changed.update(("history", "chunks"))

    def remove_history(self, shas: Iterable[str]) -> list[int]:
        """Forget commits; returns their chunk ids."""
        removed: list[int] = []
        gone = [sha for sha in shas if sha in self.history.commits]
        for sha in gone:
            removed.extend(self.history.commits.pop(sha))
        self._drop_chunks(removed)
        if gone:  # nothing removed: nothing to save (a no-change pass writes 0 bytes)
            self.changed.update(("history", "chunks"))
        return removed

    def set_head(self, head: str) -> None:
        """Remember which HEAD the history matches."""
        if self.history.head != head:
            self.history.head = head
            self.changed.add("history")

    def encode(self, name: str) -> bytes:
        """The msgpack bytes of one component (a name from PARTS) as a snapshot stores it."""
        if name == "files":
            return msgspec.msgpack.encode(self.files)
        if name == "chunks":
            return msgspec.msgpack.encode(list(self.chunks.values()))
        return msgspec.msgpack.encode(self.history)
