"""A bounded LRU of chunk rows read from the team database.

Retrieval calls `chunk(id)` on a few hundred candidates per query; the top-k queries return
their hits' full rows and prime this cache, so those calls cost no round trip. Once a reader
has read every row anyway (to build its BM25 tables), `keep_all` makes them all resident, as
the local storage keeps its chunks in memory: the in-memory lexical hits come with no rows, and
fetching them cost ~1 s per eval question in round trips.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from codeask.core.records import Chunk

#: Chunk rows kept per reader by default.
CACHE_SIZE = 4096


class ChunkCache:
    """id → Chunk, least recently used evicted past `size`; safe across threads."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self._size = max(1, int(size))
        self._lock = threading.Lock()
        self._chunks: OrderedDict[int, Chunk] = OrderedDict()
        self._resident: dict[int, Chunk] | None = None

    def get(self, ids: Iterable[int]) -> tuple[dict[int, Chunk], list[int]]:
        """(the cached chunks by id, the ids not cached), in the order given."""
        found: dict[int, Chunk] = {}
        missing: list[int] = []
        resident = self._resident
        if resident is not None:
            for chunk_id in ids:
                chunk = resident.get(chunk_id)
                if chunk is None:
                    missing.append(chunk_id)
                else:
                    found[chunk_id] = chunk
            return found, missing
        with self._lock:
            for chunk_id in ids:
                chunk = self._chunks.get(chunk_id)
                if chunk is None:
                    missing.append(chunk_id)
                else:
                    self._chunks.move_to_end(chunk_id)
                    found[chunk_id] = chunk
        return found, missing

    def keep_all(self, chunks: Iterable[Chunk]) -> None:
        """Every chunk of the revision, from now on (the LRU is no longer used)."""
        self._resident = {chunk.id: chunk for chunk in chunks}
        with self._lock:
            self._chunks.clear()

    def put(self, chunks: Sequence[Chunk]) -> None:
        if self._resident is not None:
            return
        with self._lock:
            cache = self._chunks
            for chunk in chunks:
                cache[chunk.id] = chunk
                cache.move_to_end(chunk.id)
            while len(cache) > self._size:
                cache.popitem(last=False)
