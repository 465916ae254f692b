"""The last chunks a base file decoded, kept (bounded) for the next questions.

Successive questions about one folder share many candidates (its central modules, its README):
over eval-search's 811 questions, 66 % of the chunks a search reads were read by one of the
searches just before it. Decoding a record (crc32, zstd, msgpack) is most of what reading a
candidate costs, so a base keeps the last `KEPT` it decoded. A base file never changes (an
edit writes a new generation, and with it a new base and an empty cache); chunks are never
changed in place by their readers (a copy is made with `msgspec.structs.replace`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from codeask.core.records import Chunk

#: Decoded chunks kept per base (~1.5 KB each: ~1.5 MB), three or four questions' candidates.
KEPT = 1024


class KeptChunks:
    """A bounded, least-recently-read map of chunk id → decoded chunk, safe across threads."""

    def __init__(self, size: int | None = None) -> None:
        self._size = KEPT if size is None else size
        self._kept: OrderedDict[int, Chunk] = OrderedDict()
        self._lock = threading.Lock()

    def get_many(self, chunk_ids: Iterable[int]) -> dict[int, Chunk]:
        """The kept chunks among `chunk_ids` (each now the most recently read)."""
        with self._lock:
            kept = self._kept
            found = {i: c for i in chunk_ids if (c := kept.get(i)) is not None}
            for chunk_id in found:
                kept.move_to_end(chunk_id)
        return found

    def keep(self, chunks: Iterable[tuple[int, Chunk]]) -> None:
        """Keep freshly decoded chunks, dropping the least recently read past the bound."""
        with self._lock:
            kept = self._kept
            for chunk_id, chunk in chunks:
                kept[chunk_id] = chunk
                kept.move_to_end(chunk_id)
            while len(kept) > self._size:
                kept.popitem(last=False)

    def __len__(self) -> int:
        return len(self._kept)
