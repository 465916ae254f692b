"""Candidate generation for a large base: an inverted-file (IVF) coarse quantiser in numpy.

Why (issue 42): the exact int8 scan of 1.3M static-tier rows took 73-97 ms on a quiet core
(390 ms p50 at load 14), over the ~60 ms a query may spend. A base of `MIN_ROWS` rows or more is
written with `lists` spherical k-means centroids and each row's list (row numbers grouped by
list); a query scores the centroids, then only the rows of the best `probes` lists, exactly.
Below `MIN_ROWS` nothing changes: small folders rank exactly as before. The tail (rows added
since the base) is always scanned whole. numpy rather than faiss/usearch: no new wheel, the
lists are three small arrays in the base file, and the rows stay the base's mapped int8 rows.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codeask.core.storage.quantized_rows import BLOCK_ROWS, dequantize, scores

#: A base of at least this many rows gets lists; below it every query scans every row.
MIN_ROWS = 400_000
#: Lists per square root of the base's rows (565 on the kernel's 1.28M). Half a list per root
#: since issue 42's SAVES: the training (~lists^2) and every row's assignment (~rows x lists)
#: took 14.7 CPU-s of the kernel's last save, 7.6 now; a query still scans `PROBE_SHARE` of the
#: lists (kernel questions: R@5 the same, 88 % of the exact dense top-10 kept, 94 % before).
LISTS_PER_ROOT = 0.5
#: Rows sampled to train the centroids, per list.
_SAMPLE_PER_LIST = 48
#: k-means rounds (spherical: centroids are unit vectors, rows go to the best cosine).
_ROUNDS = 8
#: A list's first this many sample rows are summed a rank at a time (`_sums`), the rest by
#: `np.add.at` (a list holds `_SAMPLE_PER_LIST` of them on average).
_RANKS = 4 * _SAMPLE_PER_LIST
#: Share of the lists a query scans (at least `_MIN_PROBES`); measured in benchmarks/vector_scan.
PROBE_SHARE = 0.06
_MIN_PROBES = 8
MEMBERS = ("centroids.npy", "list_rows.npy", "list_starts.npy")


@dataclass
class CoarseLists:
    """Centroids, and the base's row numbers grouped by list (`rows[starts[i]:starts[i+1]]`).

    `rows` None: the base was written in list order (list_order.py), so list i is the base's
    rows `starts[i]:starts[i+1]` themselves and a probe reads contiguous slices of the map."""

    centroids: np.ndarray
    rows: np.ndarray | None
    starts: np.ndarray

    def probed(self, unit: np.ndarray) -> np.ndarray:
        """The lists nearest `unit`, in ascending order (their rows are read in file order)."""
        count = len(self.centroids)
        probes = min(count, max(_MIN_PROBES, round(count * PROBE_SHARE)))
        return np.sort(np.argpartition(-(self.centroids @ unit), probes - 1)[:probes])

    def candidates(self, unit: np.ndarray) -> np.ndarray:
        """The sorted row numbers of the lists nearest `unit` (sorted: the pages are read in
        file order)."""
        parts = [self._members(i) for i in self.probed(unit).tolist()]
        return np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.int64)

    def _members(self, at: int) -> np.ndarray:
        start, end = int(self.starts[at]), int(self.starts[at + 1])
        return np.arange(start, end) if self.rows is None else self.rows[start:end]

    def check(self, base_rows: int, dim: int, name: str) -> None:
        """ValueError (naming the file) unless the lists cover `base_rows` rows of `dim`."""
        lists, rows = len(self.centroids), self.rows
        ok = (
            self.centroids.shape == (lists, dim)
            and self.starts.shape == (lists + 1,)
            and int(self.starts[0]) == 0
            and int(self.starts[-1]) == base_rows
            and bool(np.all(np.diff(self.starts) >= 0))
        )
        if ok and rows is not None:  # None: the lists are the base's own rows, in order
            ok = rows.shape == (base_rows,) and (
                base_rows == 0 or 0 <= int(rows.min()) <= int(rows.max()) < base_rows
            )
        if not ok:
            raise ValueError(f"{name}: its coarse lists do not cover its {base_rows} rows")


def scan(
    lists: CoarseLists,
    rows: np.ndarray,
    scales: np.ndarray | None,
    unit: np.ndarray,
    done: Callable[[], None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, row numbers) of the candidate rows only: slices of the mapped rows when the
    base is in list order (only their pages are read), else gathered a block at a time;
    `done` after each block (see quantized_rows.scores)."""
    if lists.rows is not None:
        return _gather(lists.candidates(unit), rows, scales, unit)
    bounds = [(int(lists.starts[i]), int(lists.starts[i + 1])) for i in lists.probed(unit)]
    picked = np.concatenate([np.arange(a, b) for a, b in bounds] or [np.zeros(0, np.int64)])
    out = np.empty(len(picked), dtype=np.float32)
    at = 0
    for start, end in bounds:
        part = _part(scales, slice(start, end))
        out[at : at + end - start] = scores(rows[start:end], part, unit, done)
        at += end - start
    return out, picked


def _gather(
    picked: np.ndarray, rows: np.ndarray, scales: np.ndarray | None, unit: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A scattered base's candidates, copied out `BLOCK_ROWS` rows at a time."""
    out = np.empty(len(picked), dtype=np.float32)
    for start in range(0, len(picked), BLOCK_ROWS):
        part = picked[start : start + BLOCK_ROWS]
        out[start : start + len(part)] = scores(rows[part], _part(scales, part), unit)
    return out, picked


def read(archive: zipfile.ZipFile, base_rows: int, dim: int, name: str) -> CoarseLists | None:
    """A base file's lists (None when it has none); ValueError when they are not its own."""
    if MEMBERS[0] not in archive.namelist():
        return None
    arrays = []
    for member in MEMBERS:
        with archive.open(member) as handle:
            arrays.append(np.asarray(np.lib.format.read_array(handle, allow_pickle=False)))
    order: np.ndarray | None = arrays[1]
    if order is not None and np.array_equal(order, np.arange(len(order))):
        order = None  # written in list order: each list is a slice of the base
    lists = CoarseLists(arrays[0].astype(np.float32), order, arrays[2].astype(np.int64))
    lists.check(base_rows, dim, name)
    return lists


def add_to(path: Path, rows: np.ndarray, scales: np.ndarray | None, seed: int = 0) -> None:
    """Train lists over a written base's `rows` and append them to its file (then fsync)."""
    append(path, train(rows, scales, seed))


def append(path: Path, lists: CoarseLists) -> None:
    """Append `lists` to a written base file, then fsync it. Lists in list order (`rows` None)
    store the identity as their row numbers, so a reader that predates them reads them too."""
    count = int(lists.starts[-1])
    order = np.arange(count, dtype=np.int32 if count < 2**31 else np.int64)
    members = (lists.centroids, order if lists.rows is None else lists.rows, lists.starts)
    with zipfile.ZipFile(path, "a", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for member, array in zip(MEMBERS, members, strict=True):
            with archive.open(member, "w", force_zip64=True) as handle:
                np.lib.format.write_array(handle, array, allow_pickle=False)
    with path.open("rb+") as handle:
        os.fsync(handle.fileno())


def train(rows: np.ndarray, scales: np.ndarray | None, seed: int = 0) -> CoarseLists:
    """Spherical k-means on a sample, then every row assigned to its nearest centroid."""
    count = len(rows)
    lists = int(min(4096, max(16, round(np.sqrt(count) * LISTS_PER_ROOT))))
    rng = np.random.default_rng(seed)
    sample_rows = np.sort(
        rng.choice(count, size=min(count, lists * _SAMPLE_PER_LIST), replace=False)
    )
    sample = _unit(dequantize(rows[sample_rows], _part(scales, sample_rows)))
    centroids = sample[rng.choice(len(sample), size=lists, replace=False)].copy()
    for _ in range(_ROUNDS):
        owner = _nearest(sample, None, centroids)
        sums = _sums(sample, owner, lists)
        empty = np.bincount(owner, minlength=lists) == 0
        sums[empty] = centroids[empty]  # a list nothing chose keeps its centroid
        centroids = _unit(sums)
    owners = _nearest(rows, scales, centroids)
    order = np.argsort(owners, kind="stable").astype(np.int32 if count < 2**31 else np.int64)
    starts = np.zeros(lists + 1, dtype=np.int64)
    starts[1:] = np.cumsum(np.bincount(owners, minlength=lists))
    return CoarseLists(centroids.astype(np.float32), order, starts)


def _sums(sample: np.ndarray, owner: np.ndarray, lists: int) -> np.ndarray:
    """Each list's sum of its sample rows, added in sample order exactly as `np.add.at` adds
    them (the same float32 additions: the same centroids), one numpy step per rank of a row
    in its list (its first row, its second...) instead of one per row: `np.add.at` was ~0.1 s
    a round on 32k rows. Rows past the `_RANKS`th of their list follow by `np.add.at`, still
    in sample order after the ranks before them."""
    order = np.argsort(owner, kind="stable")  # each list's rows, in sample order
    counts = np.bincount(owner, minlength=lists)
    rank = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts)
    by_rank = order[np.argsort(rank, kind="stable")]
    bounds = np.searchsorted(np.sort(rank), np.arange(_RANKS + 1))
    sums = np.zeros((lists, sample.shape[1]), dtype=np.float32)
    head = by_rank[: bounds[-1]]
    rows, owners = sample[head], owner[head]  # rank 0's rows, then rank 1's...
    for first, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        if first == end:  # no list has this many rows
            break
        sums[owners[first:end]] += rows[first:end]  # at most one row of each list
    rest = np.sort(order[rank >= _RANKS])
    np.add.at(sums, owner[rest], sample[rest])
    return sums


def _nearest(rows: np.ndarray, scales: np.ndarray | None, centroids: np.ndarray) -> np.ndarray:
    """Each row's nearest centroid, `BLOCK_ROWS` rows at a time (bounded temporary memory)."""
    owners = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), BLOCK_ROWS):
        where = slice(start, start + BLOCK_ROWS)
        block = dequantize(rows[where], _part(scales, where))
        owners[where] = np.argmax(block @ centroids.T, axis=1)
    return owners


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def _part(scales: np.ndarray | None, where: np.ndarray | slice) -> np.ndarray | None:
    return None if scales is None else scales[where]
