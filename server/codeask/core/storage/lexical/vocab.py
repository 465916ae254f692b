"""The vocabularies of segments being merged, joined in numpy (issue 42).

A first pass merges its segments about twice over; joining their term dictionaries as Python
bytes (one object per term per part, a sort, a dict of every term, a lookup per term) was ~70 %
of a merge and ~15 % of the whole kernel's indexing process. Here every term becomes one
fixed-width sort key: its first `PREFIX` bytes (zero-padded) then a 4-byte big-endian tie —
its length when it fits the prefix, else `PREFIX` + 1 + its rank among the long terms (these
alone, a few per cent, are compared as Python bytes). Keys compare as the terms' UTF-8 bytes do
(so as Python compares the strings), zero bytes and all: of two terms with the same padded
prefix the shorter one is a prefix of the other. Each part's keys are a sorted run, so one
stable sort (timsort, merging the runs) orders them all, and equal neighbours are one term.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

#: Bytes of a term held in its sort key (a key is this + 4 bytes).
PREFIX = 28


def _gather(starts: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """Positions of the strings' bytes, back to back (one repeat over their bytes)."""
    shift = starts - (np.cumsum(widths) - widths)
    return np.arange(int(widths.sum()), dtype=np.int64) + np.repeat(shift, widths)


def _long_ranks(blob: bytes, starts: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """Rank of each term (all longer than PREFIX) among the distinct ones, by byte order."""
    ends = starts + widths
    raw = [blob[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
    rank = {term: i for i, term in enumerate(sorted(set(raw)))}
    return np.fromiter(map(rank.__getitem__, raw), np.int64, len(raw))


def _keys(blob: bytes, starts: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """One sortable fixed-width bytes key per term (see the module's docstring)."""
    count = len(starts)
    data = np.frombuffer(blob + bytes(PREFIX), dtype=np.uint8)  # a window past the last term
    cells = np.zeros((count, PREFIX + 4), dtype=np.uint8)
    cells[:, :PREFIX] = sliding_window_view(data, PREFIX)[starts]
    cells[:, :PREFIX][np.arange(PREFIX) >= widths[:, None]] = 0  # the next terms' bytes
    tie = widths.copy()
    long = np.flatnonzero(widths > PREFIX)
    if len(long):
        tie[long] = PREFIX + 1 + _long_ranks(blob, starts[long], widths[long])
    cells[:, PREFIX:] = tie.astype(">u4").view(np.uint8).reshape(count, 4)
    return cells.view(f"S{PREFIX + 4}").ravel()


def _joined(blob: bytes, keys: np.ndarray, starts: np.ndarray, widths: np.ndarray) -> bytes:
    """The terms back to back, read from their sort keys (each holds a term's first PREFIX
    bytes: one boolean pick of bytes, ~2x cheaper than an int64 position per byte gathered
    from all over `blob`); only the bytes of terms longer than that come from `blob`."""
    cells = keys.view(np.uint8).reshape(len(keys), PREFIX + 4)[:, :PREFIX]
    cut = np.minimum(widths, PREFIX)
    joined = cells[np.arange(PREFIX) < cut[:, None]]
    long = np.flatnonzero(widths > PREFIX)
    if len(long):  # each one's bytes past the prefix, inserted after its prefix
        rest = widths[long] - PREFIX
        tail = np.frombuffer(blob, dtype=np.uint8)[_gather(starts[long] + PREFIX, rest)]
        joined = np.insert(joined, np.repeat(np.cumsum(cut)[long], rest), tail)
    return joined.tobytes()


def merge_vocabularies(
    parts: list[tuple[bytes, np.ndarray]],
) -> tuple[bytes, np.ndarray, list[np.ndarray]]:
    """`parts`: each part's sorted distinct terms as (UTF-8 bytes back to back, bounds with the
    end last). Returns the sorted distinct terms of all parts (bytes, bounds) and, for each
    part, its terms' numbers among them (int32)."""
    offsets = np.cumsum([0, *(len(blob) for blob, _ in parts)])
    blob = b"".join(blob for blob, _ in parts)
    empty = [np.zeros(0, np.int64)]
    placed = zip(parts, offsets[:-1], strict=True)
    starts = np.concatenate(empty + [np.asarray(b[:-1], np.int64) + o for (_, b), o in placed])
    widths = np.concatenate(empty + [np.diff(np.asarray(b, np.int64)) for _, b in parts])
    keys = _keys(blob, starts, widths)
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    new = np.ones(len(keys), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    del keys
    numbers = np.empty(len(order), dtype=np.int32)
    numbers[order] = np.cumsum(new, dtype=np.int64) - 1
    firsts = order[new]
    vocab = _joined(blob, ordered[new], starts[firsts], widths[firsts])
    bounds = np.concatenate(([0], np.cumsum(widths[firsts]))).astype(np.int64)
    counts = np.cumsum([len(b) - 1 for _, b in parts])[:-1]
    return vocab, bounds, np.split(numbers, counts)
