"""The chunks a long-lived process decoded last, kept by id for the next question.

Every question reads its ~300 candidates' records (chunk_file.py): a checksum, a zstd frame and a
msgpack decode each, ~4-8 us, a third of an eval-search question's time (issue 42). Questions in
one folder share many candidates (the files that match the folder's vocabulary, each file's
first chunk): over eval-search's questions, 33 % of the reads of its largest repositories and
~75 % of those of 2,000-chunk ones had been read by an earlier question. A chunk file is never
written in place (a new generation is a new file), so what it decoded stays true for its life.
Bounded by count: `SIZE` decoded chunks are ~3 MB (~1.5 KB a chunk with its text).

The chunks handed out are shared: a reader must not change them (none does; indexing gives
ids to chunks it made itself, never to ones it read).
"""

from __future__ import annotations

import threading
from itertools import islice

from codeask.core.records import Chunk

#: How many decoded chunks a chunk file keeps (least recently read dropped first).
SIZE = 2048


class RecentChunks:
    """A least-recently-read map of chunk id to decoded chunk, safe across threads."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._held: dict[int, Chunk] = {}  # insertion order: least recently read first
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._held)

    def take(self, chunk_ids: list[int]) -> tuple[list[tuple[int, Chunk]], list[int]]:
        """(id, chunk) of the ids held, each now the most recent, and the ids not held."""
        found: list[tuple[int, Chunk]] = []
        missing: list[int] = []
        held = self._held
        with self._lock:
            for chunk_id in chunk_ids:
                chunk = held.pop(chunk_id, None)
                if chunk is None:
                    missing.append(chunk_id)
                else:
                    held[chunk_id] = chunk
                    found.append((chunk_id, chunk))
        return found, missing

    def keep(self, read: list[tuple[int, Chunk]]) -> None:
        """Hold `read` as the most recent, dropping the least recent past `size`."""
        held = self._held
        with self._lock:
            for chunk_id, chunk in read:
                held[chunk_id] = chunk
            over = len(held) - self.size
            if over > 0:
                for chunk_id in list(islice(held, over)):
                    del held[chunk_id]
