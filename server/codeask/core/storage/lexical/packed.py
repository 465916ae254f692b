"""A segment file's postings in 1-2 bytes each instead of 8 (issue 42: ~1.2 GB on the kernel).

A posting was an int32 row and a float32 weighted frequency. On disk, rows are now the steps
between a term's rows (the first: the row itself) and frequencies the counts as they are, each
in uint8 (or uint16, whichever is smaller for the array), with the few values that do not fit
(a step past 254, a count that is not a small integer) kept beside as (position, value) pairs,
the narrow cell holding the sentinel. kernel,mm,lib: 92 % of row steps and 99.97 % of chunk
counts fit a byte. A read decodes only the slice asked for (one term's postings: a cumsum), and
gives back exactly the rows and frequencies written, so scores are bit for bit those of before.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The narrow widths tried, smallest first; a cell holding its type's maximum is an exception.
_WIDTHS = (np.uint8, np.uint16)


def narrow(values: np.ndarray, exact: np.ndarray) -> dict[str, np.ndarray]:
    """`values` as the smaller of uint8/uint16 cells plus exceptions; `exact` marks the values
    a cell may hold (non-negative integers; anything else becomes an exception)."""
    usable = exact & (values >= 0)
    sizes = [
        len(values) * np.dtype(w).itemsize
        + 16 * int(np.count_nonzero(~(usable & (values < np.iinfo(w).max))))
        for w in _WIDTHS
    ]
    width = _WIDTHS[int(np.argmin(sizes))]
    top = np.iinfo(width).max
    fits = usable & (values < top)
    far = np.flatnonzero(~fits)
    cells = np.where(fits, values, top).astype(width)
    return {"cells": cells, "far_at": far.astype(np.int64), "far": values[far]}


def _patched(
    cells: np.ndarray, far_at: np.ndarray, far: np.ndarray, lo: int, hi: int, dtype: Any
) -> np.ndarray:
    """cells[lo:hi] as `dtype`, the exceptions in that range put back."""
    out = np.asarray(cells[lo:hi], dtype=dtype)
    _patch(out, far_at, far, lo, hi)
    return out


def pack_rows(rows: np.ndarray, starts: np.ndarray) -> dict[str, np.ndarray]:
    """The row steps of postings sorted by (term, row); `starts[t]` where term t starts."""
    rows = np.asarray(rows, dtype=np.int32)
    steps = np.empty(len(rows), dtype=np.int32)
    if len(rows):
        steps[0] = rows[0]
        np.subtract(rows[1:], rows[:-1], out=steps[1:])
        firsts = np.asarray(starts[:-1], dtype=np.int64)
        firsts = firsts[firsts < len(rows)]
        steps[firsts] = rows[firsts]
    packed = narrow(steps, np.ones(len(steps), dtype=bool))
    packed["far"] = packed["far"].astype(np.int64)
    return {f"row_{name}": array for name, array in packed.items()}


def pack_freqs(freqs: np.ndarray) -> dict[str, np.ndarray]:
    """Weighted frequencies (float32 or float64) as small integer counts plus exceptions."""
    values = np.asarray(freqs)
    packed = narrow(values, np.floor(values) == values)
    packed["far"] = packed["far"].astype(values.dtype)
    return {f"freq_{name}": array for name, array in packed.items()}


def term_postings(
    rows: np.ndarray | PackedRows, freqs: np.ndarray | PackedFreqs, lo: int, hi: int
) -> tuple[np.ndarray, np.ndarray]:
    """(rows, weighted tf as float64) of the postings [lo, hi) of ONE term: a query's read. The
    packed path skips the general slice's search for term starts (~50 -> ~10 us a read)."""
    if isinstance(rows, PackedRows) and isinstance(freqs, PackedFreqs):
        return rows.of_term(lo, hi), freqs.as_float64(lo, hi)
    return rows[lo:hi], np.asarray(freqs[lo:hi], dtype=np.float64)


def _patch(out: np.ndarray, far_at: np.ndarray, far: np.ndarray, lo: int, hi: int) -> None:
    """Put the exceptions of [lo, hi) back into `out` (cells lo..hi, in place)."""
    if len(far_at):
        a = int(far_at.searchsorted(lo))
        b = int(far_at.searchsorted(hi))
        if b > a:
            out[far_at[a:b] - lo] = far[a:b]


class PackedRows:
    """A segment's posting rows read from their steps: `self[lo:hi]` decodes that slice."""

    __slots__ = ("_cells", "_far", "_far_at", "_starts")

    def __init__(self, arrays: dict[str, np.ndarray], starts: np.ndarray) -> None:
        self._cells = arrays["row_cells"]
        self._far_at = arrays["row_far_at"]
        self._far = arrays["row_far"]
        self._starts = starts

    def __len__(self) -> int:
        return len(self._cells)

    def __getitem__(self, key: slice) -> np.ndarray:
        lo, hi, step = key.indices(len(self))
        assert step == 1, "postings are read in slices"
        if hi <= lo:
            return np.zeros(0, dtype=np.int32)
        starts = self._starts
        first = int(starts[int(np.searchsorted(starts, lo, side="right")) - 1])
        steps = _patched(self._cells, self._far_at, self._far, first, hi, np.int64)
        rows = np.cumsum(steps)
        inner = np.asarray(starts[np.searchsorted(starts, first, side="right") :], np.int64)
        inner = inner[: int(np.searchsorted(inner, hi))] - first
        if len(inner):  # later terms in the slice restart their steps from their first row
            base = np.zeros(len(rows), dtype=np.int64)
            base[inner] = rows[inner] - steps[inner]
            rows -= np.maximum.accumulate(base)
        return rows[lo - first :].astype(np.int32)

    def of_term(self, lo: int, hi: int) -> np.ndarray:
        """Rows [lo, hi), `lo` a term's first posting and no later term's start inside (int64)."""
        steps = self._cells[lo:hi].astype(np.int64)
        _patch(steps, self._far_at, self._far, lo, hi)
        return np.cumsum(steps, out=steps)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        rows = self.whole()
        return rows if dtype is None else rows.astype(dtype)

    def whole(self) -> np.ndarray:
        """Every row (int32), as `self[0:len]` gives them in fewer passes (a merge decodes each
        part whole): one running sum of the steps, each term's first step lowered by the
        previous term's steps so the sum restarts at that term's first row."""
        steps = _patched(self._cells, self._far_at, self._far, 0, len(self), np.int64)
        if not len(steps):
            return np.zeros(0, dtype=np.int32)
        starts = np.asarray(self._starts, dtype=np.int64)
        firsts = starts[:-1][np.diff(starts) > 0]  # where each term holding postings starts
        before = np.add.reduceat(steps, firsts)[:-1]  # each of those terms' steps summed
        steps[firsts[1:]] -= before
        return np.cumsum(steps, out=steps).astype(np.int32)


class PackedFreqs:
    """A segment's weighted frequencies read from their cells: `self[lo:hi]` decodes a slice."""

    __slots__ = ("_cells", "_far", "_far_at", "dtype")

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self._cells = arrays["freq_cells"]
        self._far_at = arrays["freq_far_at"]
        self._far = arrays["freq_far"]
        #: The frequencies' type as written (float32 when it held them all exactly).
        self.dtype = self._far.dtype

    def __len__(self) -> int:
        return len(self._cells)

    def __getitem__(self, key: slice) -> np.ndarray:
        lo, hi, step = key.indices(len(self))
        assert step == 1, "postings are read in slices"
        return _patched(self._cells, self._far_at, self._far, lo, max(lo, hi), self.dtype)

    def as_float64(self, lo: int, hi: int) -> np.ndarray:
        """Frequencies [lo, hi) as float64 (what scoring reads), in one conversion."""
        out = self._cells[lo:hi].astype(np.float64)
        _patch(out, self._far_at, self._far, lo, hi)
        return out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        freqs = self[0 : len(self)]
        return freqs if dtype is None else freqs.astype(dtype)
