"""Segments merged with their vocabularies joined in numpy (lexical/vocab.py) hold exactly the
postings the Python join of round 21 gave (kept here as the reference): every term's rows,
frequencies, the keys, lengths and tie order, on random segments, empty parts, masked rows,
non-ASCII, zero bytes and very long terms, in memory and memory-mapped from segment files."""

from __future__ import annotations

import random
from itertools import chain
from pathlib import Path

import numpy as np

from codeask.core.storage.lexical.bm25 import (
    CHUNK_WEIGHTS,
    FILE_WEIGHTS,
    Postings,
    Segment,
    StringColumn,
    TermSlices,
    _live_rows,
    compact_freqs,
    merge_segments,
    merged_postings,
)
from codeask.core.storage.lexical.segment_file import open_segment, write_segment
from codeask.core.storage.lexical.vocab import PREFIX, merge_vocabularies


def reference_merge(parts: list[Segment]) -> tuple[Postings, np.ndarray]:
    """merge_segments as it was before the numpy vocabulary join (main at df77b90)."""
    alive = [_live_rows(p) for p in parts]
    names = [p.postings.slices.names.raw_list() for p in parts]
    vocab = list(dict.fromkeys(sorted(chain.from_iterable(names))))
    number = dict(zip(vocab, range(len(vocab)), strict=True))
    wide = any(p.postings.freqs.dtype != np.float32 for p in parts)
    terms, rows, freqs = [], [], []
    offset = 0
    for part, live, terms_of in zip(parts, alive, names, strict=True):
        postings = part.postings
        ids = np.fromiter(map(number.__getitem__, terms_of), np.int32, len(terms_of))
        row_of = np.asarray(postings.rows)
        keep = live[row_of]
        terms.append(np.repeat(ids, np.diff(np.asarray(postings.slices.starts)))[keep])
        renumber = (np.cumsum(live) - 1 + offset).astype(np.int32)
        rows.append(renumber[row_of[keep]])
        freqs.append(np.asarray(postings.freqs, dtype=np.float64 if wide else np.float32)[keep])
        offset += int(live.sum())
    term_of = np.concatenate(terms)
    order = np.argsort(term_of, kind="stable")
    term_of = term_of[order]
    row_of = np.concatenate(rows)[order]
    freq = compact_freqs(np.concatenate(freqs)[order])
    starts = np.searchsorted(term_of, np.arange(len(vocab) + 1)).astype(np.int64)
    slices = TermSlices(StringColumn.of_bytes(vocab), starts)
    return merged_postings(parts, alive, slices, row_of, freq)


def _assert_same(got: tuple[Postings, np.ndarray], want: tuple[Postings, np.ndarray]) -> None:
    (merged, order), (expected, ties) = got, want
    assert merged.slices.names.raw_list() == expected.slices.names.raw_list()
    assert merged.slices.starts.tolist() == expected.slices.starts.tolist()
    for name in ("rows", "freqs", "lengths"):
        a, b = np.asarray(getattr(merged, name)), np.asarray(getattr(expected, name))
        assert a.dtype == b.dtype and a.tolist() == b.tolist(), name
    assert merged.key_list() == expected.key_list()
    assert merged.average == expected.average and merged.total == expected.total
    assert order.dtype == ties.dtype and order.tolist() == ties.tolist()


def _hostile_terms(rng: random.Random) -> list[str]:
    """Short ASCII, shared prefixes across the key's prefix width, non-ASCII, zero bytes."""
    stem = "x" * PREFIX
    terms = [f"w{i}" for i in range(40)] + ["parse", "é", "\u4e2d", "\U0001f600", "a\x00", "a"]
    terms += [stem, stem[:-1], stem + "a", stem + "\x00", stem + "\x00\x00", stem + "é" * 30]
    terms += ["z" * rng.randint(PREFIX - 2, 400) for _ in range(6)]
    terms += [stem + "".join(rng.choice("ab\x00é") for _ in range(rng.randint(1, 9)))] * 3
    return terms


def _random_part(rng: random.Random, first: int, count: int, weights: tuple[float, ...]) -> Segment:
    terms = _hostile_terms(rng)
    rows = []
    for key in range(first, first + count):
        columns = [" ".join(rng.choices(terms, k=rng.randint(0, 12))) for _ in weights]
        rows.append((key if weights == CHUNK_WEIGHTS else f"src/f{key}.c", *columns))
    postings = Postings.build(rows, weights)
    segment = Segment(postings, np.arange(first, first + count, dtype=np.int64))
    for position in range(count):
        if rng.random() < 0.2:
            segment.mask(position)
    return segment


def random_parts(
    rng: random.Random, weights: tuple[float, ...], sizes: tuple[int, ...]
) -> list[Segment]:
    """One to five random parts of one table (rows of each `sizes`), numbered one after another."""
    counts = [rng.choice(sizes) for _ in range(rng.randint(1, 5))]
    firsts = np.cumsum([0, *counts]).tolist()
    return [_random_part(rng, f, n, weights) for f, n in zip(firsts, counts, strict=False)]


def test_the_numpy_join_gives_the_python_joins_postings_on_random_segments() -> None:
    rng = random.Random(42)
    for trial in range(30):
        parts = random_parts(rng, CHUNK_WEIGHTS if trial % 3 else FILE_WEIGHTS, (0, 1, 5, 40, 120))
        _assert_same(merge_segments(parts), reference_merge(parts))


def mapped_copy(built: Segment, path: Path) -> Segment:
    """`built` written to a segment file at `path` and read back mapped, its mask kept."""
    write_segment(path, built)
    postings, order = open_segment(path)
    mapped = Segment(postings, order)
    if built.masked is not None:
        mapped.set_mask(np.flatnonzero(built.masked))
    return mapped


def test_memory_mapped_segments_merge_as_built_ones(tmp_path: Path) -> None:
    """A first pass merges segment files it mapped (packed rows, terms read from the map)."""
    rng = random.Random(7)
    parts = []
    for n, size in enumerate((80, 0, 60, 100)):
        built = _random_part(rng, n * 100, size, CHUNK_WEIGHTS)
        parts.append(mapped_copy(built, tmp_path / f"s{n}.seg"))
    _assert_same(merge_segments(parts), reference_merge(parts))


def test_a_merge_of_every_row_masked_or_no_terms_is_empty_but_whole() -> None:
    only_empty = Postings.build([(1, "", "", ""), (2, "", "", "")], CHUNK_WEIGHTS)
    masked = Segment(Postings.build([(3, "a b", "c", "")], CHUNK_WEIGHTS), np.array([3]))
    masked.mask(0)
    parts = [Segment(only_empty, np.array([1, 2])), masked]
    _assert_same(merge_segments(parts), reference_merge(parts))
    assert merge_segments([masked])[0].key_list() == []


def test_joined_vocabularies_sort_as_python_sorts_the_bytes() -> None:
    rng = random.Random(3)
    alphabet = [b"a", b"b", b"\x00", b"\xff", b"\x7f", b"\x80"]
    parts, every = [], []
    for _ in range(6):
        terms = {b"".join(rng.choices(alphabet, k=rng.randint(0, 70))) for _ in range(300)}
        ordered = sorted(terms)
        every.append(ordered)
        column = StringColumn.of_bytes(ordered)
        parts.append((column.blob(), column.bounds()))
    parts.append((b"", np.zeros(1, dtype=np.int64)))  # a part with no terms
    every.append([])
    blob, bounds, numbers = merge_vocabularies(parts)
    joined = sorted(set(chain.from_iterable(every)))
    assert StringColumn(blob, bounds).raw_list() == joined
    for ordered, ids in zip(every, numbers, strict=True):
        assert ids.dtype == np.int32 and [joined[i] for i in ids.tolist()] == ordered
