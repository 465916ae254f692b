"""Dense search over several published revisions in one query (`storage.prefetch_dense`).

A multi-root workspace on the team backend has one `PublishedReader` per folder. Before the
per-folder fusion runs, retrieval collects each folder's `dense_asks` and the first reader of a
group (one database, model, dimension and tier) answers them all with `nearest_many`; each
reader remembers its rows in a `NearestMemo`, and its `dense_top_k` with the same vector and at
most that `k` costs no round trip (a revision never changes, so a repeated query is answered
from the memo too). Anything else (another vector, a larger `k`: the overlay
asks again when too many hits were shadowed) queries as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from codeask.core.pg import revision_sql
from codeask.core.storage import DenseAsk

if TYPE_CHECKING:
    from codeask.core.pg.revision_conn import RevisionConnection
    from codeask.core.pg.storage import PublishedReader

#: Query vectors remembered per reader (concurrent searches each have theirs).
MEMO_SIZE = 8

Hits = list[tuple[int, float]]


class NearestMemo:
    """query vector → (the k asked, (chunk id, similarity) best first), bounded LRU."""

    def __init__(self, size: int = MEMO_SIZE) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._entries: OrderedDict[bytes, tuple[int, Hits]] = OrderedDict()

    @staticmethod
    def _key(vector: np.ndarray) -> bytes:
        return np.asarray(vector, dtype=np.float32).tobytes()

    def put(self, vector: np.ndarray, k: int, hits: Hits) -> None:
        key = self._key(vector)
        with self._lock:
            self._entries[key] = (k, hits)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def get(self, vector: np.ndarray, k: int) -> Hits | None:
        """The first `k` hits when the remembered list answers a top-k query: it was asked
        with at least `k`, or it holds every vector there is (fewer rows than asked)."""
        with self._lock:
            entry = self._entries.get(self._key(vector))
        if entry is None:
            return None
        asked, hits = entry
        return hits[:k] if k <= asked or len(hits) < asked else None


def answer_nearest(db: RevisionConnection, asks: Sequence[DenseAsk], vector: np.ndarray) -> None:
    """Run the asks of one group in one query; every asking reader remembers its rows."""
    readers: list[PublishedReader] = []
    wanted: dict[int, int] = {}
    for ask in asks:
        reader = cast("PublishedReader", ask.reader)
        if reader.nearest_memo.get(vector, ask.k) is None:  # else a repeated query: known
            readers.append(reader)
            wanted[reader.revision.id] = max(wanted.get(reader.revision.id, 0), int(ask.k))
    if not readers:
        return
    rows = revision_sql.nearest_many(db, readers[0].revision.dim, wanted, vector)
    for reader in readers:
        revision = reader.revision.id
        reader.remember_nearest(vector, wanted[revision], rows[revision])
