"""Dense search over several published revisions in one query (`storage.prefetch_dense`).

A multi-root workspace on the team backend has one `PublishedReader` per folder, each with a
`RevisionNearest`. Before the per-folder fusion runs, retrieval collects each folder's
`dense_asks` and the first of a group (one database, model, dimension and tier) answers them
all with one `nearest_many` (the query a single reader sends for itself too); each remembers
its rows in a `NearestMemo`, and a `dense_top_k` with the same vector and at most that `k`
costs no round trip (a revision never changes, so a repeated query is answered from the memo
too). Anything else (another vector, a larger `k`: the overlay asks again when too many hits
were shadowed) queries as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from codeask.core.storage.postgres import revision_sql
from codeask.core.storage.protocol import DenseAsk, Tier

if TYPE_CHECKING:
    from codeask.core.storage.postgres.revision import RevisionInfo
    from codeask.core.storage.postgres.revision_conn import RevisionConnection

#: Query vectors remembered per reader (concurrent searches each have theirs).
MEMO_SIZE = 8

Hits = list[tuple[int, float]]
Rows = list[tuple[Any, ...]]


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


class RevisionNearest:
    """A published revision's dense top-k: from its memo, or one query of its own; and, as a
    `DenseBatcher`, the answer to every ask of its group at once."""

    def __init__(
        self,
        db: RevisionConnection,
        revision: RevisionInfo,
        tier: Tier,
        embedded: bool,
        primed: Callable[[Rows], Hits],
    ) -> None:
        """`embedded`: the revision has vectors; `primed`: rows → hits (caching their chunks)."""
        self.db = db
        self.revision = revision
        self.tier: Tier = tier
        self.embedded = embedded
        self.primed = primed
        self.memo = NearestMemo()

    def serves(self, tier: Tier, k: int, missing_from: Tier | None) -> bool:
        """With `missing_from` = the same tier, every chunk is covered; the other tier has no
        vectors here, so it excludes nothing."""
        return tier == self.tier and k > 0 and self.embedded and missing_from != tier

    def asks(self, tier: Tier, k: int, missing_from: Tier | None) -> list[DenseAsk]:
        if not self.serves(tier, k, missing_from):
            return []
        info = self.revision
        return [DenseAsk((self.db.location, info.model, info.dim, tier), self, int(k))]

    def top_k(self, tier: Tier, vector: np.ndarray, k: int, missing_from: Tier | None) -> Hits:
        if not self.serves(tier, k, missing_from):
            return []
        remembered = self.memo.get(vector, k)
        if remembered is not None:
            return remembered
        rows = revision_sql.nearest_many(self.db, self.revision, {self.revision.id: k}, vector)
        return self.primed(rows[self.revision.id])

    def answer_asks(self, asks: Sequence[DenseAsk], vector: np.ndarray) -> None:
        """One query on this connection for the asks (all of this group) the memos lack."""
        pending: list[RevisionNearest] = []
        wanted: dict[int, int] = {}
        for ask in asks:
            side = cast("RevisionNearest", ask.reader)
            if side.memo.get(vector, ask.k) is None:  # else a repeated query: known
                pending.append(side)
                wanted[side.revision.id] = max(wanted.get(side.revision.id, 0), int(ask.k))
        if not pending:
            return
        rows = revision_sql.nearest_many(self.db, self.revision, wanted, vector)
        for side in pending:
            revision = side.revision.id
            side.memo.put(vector, wanted[revision], side.primed(rows[revision]))
