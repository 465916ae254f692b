"""Segments merged by placing each part's sorted run where it goes (lexical/merge_runs.py) hold
exactly the postings the stable argsort of every posting's term gave (main at d4f60b7, kept
here as the reference): term starts, rows, frequencies and their dtypes, on random runs, empty
runs and terms, masked rows, and through `merge_segments` on hostile terms (non-ASCII, zero
bytes, terms far past the vocabulary key's prefix), built and memory-mapped."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from tests.unit.test_merge_vocab import _assert_same, mapped_copy, random_parts, reference_merge

from codeask.core.storage.lexical.bm25 import CHUNK_WEIGHTS, FILE_WEIGHTS, merge_segments
from codeask.core.storage.lexical.merge_runs import Run, merge_runs


def argsort_merge(
    runs: list[Run], terms: int, freq_dtype: type
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The postings part of merge_segments as it was: every kept posting's term, one stable
    argsort of them, gathers, and each term's start searched for."""
    term_of, rows, freqs = [], [], []
    for run in runs:
        ids = np.repeat(run.numbers, np.diff(np.asarray(run.starts)))
        term_of.append(ids if run.keep is None else ids[run.keep])
        rows.append(run.rows)
        freqs.append(run.freqs.astype(freq_dtype))
    joined = np.concatenate([np.zeros(0, np.int32), *term_of])
    order = np.argsort(joined, kind="stable")
    starts = np.searchsorted(joined[order], np.arange(terms + 1)).astype(np.int64)
    row_of = np.concatenate([np.zeros(0, np.int32), *rows])[order]
    return starts, row_of, np.concatenate([np.zeros(0, freq_dtype), *freqs])[order]


def _random_run(rng: np.random.Generator, terms: int, first_row: int) -> Run:
    """A part's sorted postings over a random subset of the merged terms, some masked."""
    numbers = np.sort(rng.choice(terms, size=int(rng.integers(0, terms + 1)), replace=False))
    counts = rng.integers(0, 6, size=len(numbers))  # terms with no postings too
    starts = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    size = int(starts[-1])
    keep = None if rng.random() < 0.4 else rng.random(size) < 0.7
    kept = size if keep is None else int(keep.sum())
    kept_counts = (
        counts if keep is None else np.diff(np.concatenate(([0], np.cumsum(keep)))[starts])
    )
    rows = np.empty(kept, dtype=np.int32)
    place = 0
    for count in kept_counts.tolist():  # each term's kept rows ascending, after earlier parts'
        rows[place : place + count] = np.sort(rng.choice(50, size=count, replace=False)) + first_row
        place += count
    freqs = rng.integers(1, 40, size=kept).astype(np.float32) * rng.choice([1.0, 0.5, 1 / 3])
    return Run(numbers.astype(np.int32), starts, keep, rows, freqs)


def test_placed_runs_give_the_argsorts_postings_on_random_runs() -> None:
    rng = np.random.default_rng(5)
    for trial in range(200):
        terms = int(rng.integers(0, 30))
        runs = [_random_run(rng, terms, 50 * n) for n in range(int(rng.integers(1, 6)))]
        dtype = np.float64 if trial % 2 else np.float32
        got = merge_runs(runs, terms, np.dtype(dtype))
        want = argsort_merge(runs, terms, dtype)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype and a.tolist() == b.tolist()


def test_no_runs_or_only_empty_runs_merge_to_empty_terms() -> None:
    empty = Run(
        np.zeros(0, np.int32),
        np.zeros(1, np.int64),
        None,
        np.zeros(0, np.int32),
        np.zeros(0, np.float32),
    )
    starts, rows, freqs = merge_runs([empty, empty], 3, np.dtype(np.float32))
    assert starts.tolist() == [0, 0, 0, 0] and rows.tolist() == [] and freqs.tolist() == []


def test_merged_segments_hold_the_argsort_merges_postings(tmp_path: Path) -> None:
    """merge_segments over random parts (masked rows, hostile and very long terms, both
    tables), built in memory and read back mapped, against main's merge."""
    rng = random.Random(11)
    for trial in range(20):
        parts = random_parts(rng, CHUNK_WEIGHTS if trial % 2 else FILE_WEIGHTS, (0, 1, 7, 60, 150))
        _assert_same(merge_segments(parts), reference_merge(parts))
        mapped = [mapped_copy(p, tmp_path / f"t{trial}-{n}.lex") for n, p in enumerate(parts)]
        _assert_same(merge_segments(mapped), reference_merge(mapped))
