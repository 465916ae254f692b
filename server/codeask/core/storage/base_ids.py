"""Which chunk id each row of a mapped vector base holds, found by bisection, never by a dict.

Why (issue 42): a loaded tier kept `{id: row}` and a set of its live ids as Python objects, built
row by row at every open: on the Linux kernel's 1.3M static rows that was ~3 s and ~200 MB
before a process could answer (and again in a reader after every save). Here the same facts
are three int64 arrays (the ids by row with holes, the ids sorted, the rows in that order),
built by numpy in milliseconds; a lookup is one `np.searchsorted`.

`LiveIds` reads a tier's live ids (base and in-memory tail) like the set it replaces.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

import numpy as np


def as_id_array(ids: Iterable[int] | np.ndarray) -> np.ndarray:
    """`ids` as an int64 array (a set, list or array: no copy of an int64 array)."""
    if isinstance(ids, np.ndarray):
        return np.asarray(ids, dtype=np.int64)
    if isinstance(ids, LiveIds):
        return ids.array()
    listed = ids if isinstance(ids, (list, tuple)) else list(ids)
    return np.asarray(listed, dtype=np.int64).reshape(-1)


class BaseIds:
    """The ids of a base's rows (`ids`, -1 for a hole) and the id -> row lookup.

    Rows not kept, and the earlier rows of a repeated id (the later row holds its vector),
    are holes from the start; `punch` makes more (a chunk removed or its vector replaced).
    """

    def __init__(self, ids: np.ndarray, keep: np.ndarray, order: np.ndarray | None = None) -> None:
        """`order`: the rows in ascending id order when the base stored it (list_order.py),
        so a base whose ids are not ascending is not sorted again at every open; used only
        when its ids hold no repeat (else they are sorted here)."""
        ids = np.asarray(ids, dtype=np.int64)
        held = np.where(keep, ids, -1)
        ranked = ids  # ascending ids (the usual base): no order array, no repeats
        if order is not None:
            ranked = ids[order]  # holes stay in it: a lookup checks `self.ids` at the row
            if not bool(np.all(ranked[1:] > ranked[:-1])):
                order, ranked = None, ids
        if order is None and len(ids) > 1 and not bool(np.all(ids[1:] > ids[:-1])):
            order = np.argsort(held, kind="stable")
            ranked = held[order]
            repeated = np.zeros(len(held), dtype=bool)
            repeated[:-1] = (ranked[:-1] == ranked[1:]) & (ranked[:-1] >= 0)
            held[order[repeated]] = -1  # a repeated id: its last row holds the vector
        #: The id in each row of the base, -1 where the row no longer counts.
        self.ids = held
        self._sorted = ranked
        self._order = order
        #: Rows that still count.
        self.count = int(np.count_nonzero(held >= 0))

    def __len__(self) -> int:
        """Rows in the base, holes included."""
        return len(self.ids)

    def row(self, chunk_id: int) -> int:
        """The row holding `chunk_id`, or -1."""
        at = int(np.searchsorted(self._sorted, chunk_id, side="right")) - 1
        if at < 0 or int(self._sorted[at]) != chunk_id:
            return -1
        row = at if self._order is None else int(self._order[at])
        return row if int(self.ids[row]) == chunk_id else -1

    def rows(self, chunk_ids: np.ndarray) -> np.ndarray:
        """The row of each of `chunk_ids` (-1 where it has none), in one vectorised lookup."""
        if not len(self._sorted) or not len(chunk_ids):
            return np.full(len(chunk_ids), -1, dtype=np.int64)
        at = np.searchsorted(self._sorted, chunk_ids, side="right") - 1
        safe = np.maximum(at, 0)
        rows = safe if self._order is None else self._order[safe]
        found = (at >= 0) & (self._sorted[safe] == chunk_ids) & (self.ids[rows] == chunk_ids)
        return np.where(found, rows, -1)

    def punch(self, row: int) -> None:
        """Row `row` no longer counts (its chunk was removed or has a newer vector)."""
        if int(self.ids[row]) >= 0:
            self.ids[row] = -1
            self.count -= 1

    def live(self) -> np.ndarray:
        """The ids that still count, in row order."""
        return self.ids[self.ids >= 0]


class IdRows(Protocol):
    """Rows looked up by id: a mapped base's (`BaseIds`) or a spill file's (row_spill.py)."""

    @property
    def count(self) -> int: ...  # rows that still count

    def row(self, chunk_id: int) -> int: ...

    def rows(self, chunk_ids: np.ndarray) -> np.ndarray: ...

    def live(self) -> np.ndarray: ...


#: `LiveIds.contains` tests ids against a part's live ids in one `np.isin` table when they are at
#: least this fraction of the part's rows (else it bisects the part's sorted ids for each).
TABLE_LOOKUP_RATIO = 8

#: `LiveIds.contains` looks ids up one by one in the tail's dict when the tail is longer than this
#: many times the ids asked (else one vectorised `isin` over a copy of the tail is cheaper).
TAIL_LOOKUP_RATIO = 8


class LiveIds:
    """The ids of a tier that have a vector, read like a set: the base's and the spilled
    rows' by bisection (`IdRows`), the in-memory tail's from its id -> slot dict. A view: it
    follows the tier."""

    def __init__(
        self, base: IdRows | None, tail: Mapping[int, int], spilled: IdRows | None = None
    ) -> None:
        self._parts = [part for part in (base, spilled) if part is not None]
        self._tail = tail

    def __contains__(self, chunk_id: object) -> bool:
        if not isinstance(chunk_id, (int, np.integer)):
            return False
        if chunk_id in self._tail:
            return True
        return any(part.row(int(chunk_id)) >= 0 for part in self._parts)

    def __len__(self) -> int:
        return sum(part.count for part in self._parts) + len(self._tail)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __iter__(self) -> Iterator[int]:
        for part in self._parts:
            yield from part.live().tolist()
        yield from list(self._tail)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (set, frozenset, LiveIds)):
            return len(self) == len(other) and set(self) == set(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a set

    def __repr__(self) -> str:
        return f"LiveIds({len(self)} ids)"

    def array(self) -> np.ndarray:
        """Every live id as an int64 array (the base's in row order, the spilled, the tail's)."""
        tail = np.fromiter(self._tail, dtype=np.int64, count=len(self._tail))
        if not self._parts:
            return tail
        return np.concatenate([*(part.live() for part in self._parts), tail])

    def contains(self, chunk_ids: np.ndarray) -> np.ndarray:
        """Whether each of `chunk_ids` is live (a bool array, vectorised over the base)."""
        chunk_ids = as_id_array(chunk_ids)
        found = np.zeros(len(chunk_ids), dtype=bool)
        if not len(chunk_ids):
            return found
        for part in self._parts:
            if len(chunk_ids) * TABLE_LOOKUP_RATIO >= part.count:
                # many ids (a pass's test of every chunk: 1.28M on the kernel): one table
                # lookup over the part's live ids, ~4x cheaper than bisecting for each
                found |= np.isin(chunk_ids, part.live())
            else:
                found |= part.rows(chunk_ids) >= 0
        if not self._tail:
            return found
        if len(chunk_ids) * TAIL_LOOKUP_RATIO < len(self._tail):
            # a few ids against a long tail (a first pass's replace_file: its tail is every row
            # so far): look each up in the tail's set, never copy the tail (that was quadratic)
            found |= np.fromiter(
                (int(i) in self._tail for i in chunk_ids), dtype=bool, count=len(chunk_ids)
            )
        else:
            tail = np.fromiter(self._tail, dtype=np.int64, count=len(self._tail))
            found |= np.isin(chunk_ids, tail)
        return found

    def intersection(self, chunk_ids: Iterable[Any]) -> set[int]:
        """The live ones among `chunk_ids`."""
        ids = as_id_array(chunk_ids)
        return set(ids[self.contains(ids)].tolist())
