"""The postings of segments being merged, placed where they go instead of sorted (issue 42).

Each part's postings are already in (term, row) order, the merged numbering of terms is
monotone in each part's own (lexical/vocab.py), and a part's rows follow the earlier parts'.
So a merged term's postings are its postings in part 0, then in part 1, ..., each run kept in
its order: every posting's place is known from counts alone (where its term starts in the
output, plus the postings of that term in earlier parts, plus its rank inside its own run).
One scatter per array replaces the stable argsort of every posting's term and the gathers
after it (and the search for each term's start): the same arrays, element for element.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Run:
    """One part's live postings, sorted by (term, row): its terms' numbers in the merged
    vocabulary (ascending), each term's postings (its `starts`, end last) and which postings
    are kept (`keep`: None, all of them); rows already numbered in the merged row space."""

    numbers: np.ndarray
    starts: np.ndarray
    keep: np.ndarray | None
    rows: np.ndarray
    freqs: np.ndarray


def _kept_starts(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """(where each term's kept postings start among the kept ones, how many it keeps)."""
    starts = np.asarray(run.starts, dtype=np.int64)
    if run.keep is None:
        return starts[:-1], np.diff(starts)
    before = np.zeros(len(run.keep) + 1, dtype=np.int64)
    np.cumsum(run.keep, out=before[1:])
    kept = before[starts]
    return kept[:-1], np.diff(kept)


def merge_runs(
    runs: Sequence[Run], terms: int, freq_dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(term starts with the end last, rows int32, freqs) of `runs` merged: term by term, the
    runs' postings in run order. `terms`: the merged vocabulary's size."""
    counted = [_kept_starts(run) for run in runs]
    per_term = np.zeros(terms, dtype=np.int64)
    for run, (_, counts) in zip(runs, counted, strict=True):
        per_term[run.numbers] += counts  # a run names a term once
    starts = np.zeros(terms + 1, dtype=np.int64)
    np.cumsum(per_term, out=starts[1:])
    rows = np.empty(int(starts[-1]), dtype=np.int32)
    freqs = np.empty(int(starts[-1]), dtype=freq_dtype)
    filled = starts[:-1].copy()  # the next free place of each term
    for run, (first, counts) in zip(runs, counted, strict=True):
        base = filled[run.numbers]
        filled[run.numbers] = base + counts
        size = int(counts.sum())
        place = np.repeat(base - first, counts)
        place += np.arange(size, dtype=np.int64)
        rows[place] = run.rows
        freqs[place] = run.freqs
    return starts, rows, freqs
