"""A batch's postings counted per body (storage/lexical/batch.py) are exactly those the token by
token builder it replaced gave (kept here as the reference): same term ids in the same
vocabulary order, rows, weighted frequencies bit for bit, row lengths, body groups; on the
engine's own source and on hostile text, and through whole builds of both tables."""

from __future__ import annotations

import random
import weakref
from collections.abc import Sequence
from itertools import chain
from pathlib import Path

import numpy as np
import pytest
from tests.unit.test_bm25 import same_postings

import codeask
from codeask.config import ChunkSettings
from codeask.core.source.chunk import chunk_file
from codeask.core.storage.lexical import batch, bm25
from codeask.core.storage.lexical.batch import (
    Bodies,
    Vocab,
    batch_postings,
    new_vocab,
    summed_pairs,
)
from codeask.core.storage.lexical.bm25 import CHUNK_WEIGHTS, FILE_WEIGHTS, Postings
from codeask.core.storage.lexical.file_postings import build_pair
from codeask.core.storage.lexical.index import doc_columns, file_row

Result = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def reference_postings(
    chunk: list[Sequence[object]],
    vocab: dict[str, int],
    weight_of: np.ndarray,
    bodies: Bodies | None = None,
    offset: int = 0,
) -> Result:
    """bm25._batch_postings as it was (a2d4814): one int64 key per token, one sort."""
    columns = len(weight_of)
    rows = len(chunk)
    spread = np.arange(rows, dtype=np.int64) * columns
    keys: list[np.ndarray] = []
    total = np.zeros(rows, dtype=np.int64)
    per_column: list[np.ndarray] = []
    for column in range(columns):
        split = [str(row[column + 1] or "").split() for row in chunk]
        counts = np.fromiter(map(len, split), dtype=np.int64, count=rows)
        flat = list(chain.from_iterable(split))
        ids = np.fromiter(map(vocab.__getitem__, flat), np.int64, len(flat))
        keys.append(ids * (rows * columns) + np.repeat(spread, counts) + column)
        total += counts
        per_column.append(counts)
    key = np.sort(np.concatenate(keys))
    if bodies is not None:
        reference_bodies(bodies, key, rows, columns, offset, per_column[0])
    pair = key // columns
    first = np.ones(len(pair), dtype=bool)
    np.not_equal(pair[1:], pair[:-1], out=first[1:])
    freq = np.bincount(np.cumsum(first) - 1, weights=weight_of[key - pair * columns])
    term, place = np.divmod(pair[first], rows)
    return term.astype(np.int32), place, freq, total


def reference_bodies(
    bodies: Bodies, key: np.ndarray, rows: int, columns: int, first: int, length: np.ndarray
) -> None:
    """Bodies.add as it was: the column-0 groups of the sorted (term, row, column) keys."""
    edge = np.flatnonzero(np.diff(key, prepend=-1, append=key[-1:] + 1 if len(key) else 0))
    triple, size = key[edge[:-1]], np.diff(edge)
    body = triple % columns == 0
    term, place = np.divmod(triple[body] // columns, rows)
    bodies.terms.append(term)
    bodies.rows.append(place + first)
    bodies.counts.append(size[body])
    bodies.lengths.append(length)


def spelt(vocab: dict[str, int]) -> np.ndarray:
    """Each term id's token (the builders number tokens in different orders)."""
    names = np.empty(len(vocab), dtype=object)
    for token, term in vocab.items():
        names[term] = token
    return names


def by_token(result: Result, vocab: dict[str, int]) -> list[tuple[str, int, float]]:
    """A batch's postings as (token, row, weighted tf), sorted."""
    term, row, freq, _ = result
    return sorted(zip(spelt(vocab)[term].tolist(), row.tolist(), freq.tolist(), strict=True))


def body_groups(bodies: Bodies, vocab: dict[str, int]) -> list[tuple[str, int, int]]:
    """Every (token, row, count) group, sorted (the builders find them in different orders)."""
    if not bodies.terms:
        return []
    joined = zip(
        spelt(vocab)[np.concatenate(bodies.terms)].tolist(),
        np.concatenate(bodies.rows).tolist(),
        np.concatenate(bodies.counts).tolist(),
        strict=True,
    )
    return sorted(joined)


def same_batch(rows: list[Sequence[object]], weights: Sequence[float], offset: int = 7) -> None:
    """Both builders on `rows`: the same postings (by token: the plain path numbers tokens in
    another order), dtypes, row lengths, vocabularies and body groups; on the split path the
    same arrays outright."""
    weight_of = np.asarray(weights, dtype=np.float64)
    ours_vocab, their_vocab = new_vocab(), new_vocab()
    ours_bodies, their_bodies = Bodies.empty(), Bodies.empty()
    ours = batch_postings(rows, ours_vocab, weight_of, ours_bodies, offset)
    theirs = reference_postings(rows, their_vocab, weight_of, their_bodies, offset)
    for mine, reference, name in zip(ours, theirs, ("term", "row", "freq", "length"), strict=True):
        assert mine.dtype == reference.dtype, name
    assert np.array_equal(ours[3], theirs[3])
    assert set(ours_vocab) == set(their_vocab)
    assert by_token(ours, ours_vocab) == by_token(theirs, their_vocab)
    if list(ours_vocab.items()) == list(their_vocab.items()):
        assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True))
    assert body_groups(ours_bodies, ours_vocab) == body_groups(their_bodies, their_vocab)
    body_lengths = [np.concatenate(b.lengths).tolist() for b in (ours_bodies, their_bodies)]
    assert body_lengths[0] == body_lengths[1]


def engine_rows() -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], list[list[int]]]:
    """Chunk rows (id, body, symbol, path), file rows and each file's chunk positions of the
    engine's own source, cut and tokenized as a first pass does."""
    root = Path(codeask.__file__).parent
    settings = ChunkSettings()
    chunk_rows: list[tuple[object, ...]] = []
    file_rows: list[tuple[object, ...]] = []
    parts: list[list[int]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        cut = chunk_file(rel, path.read_text("utf-8"), settings)
        columns = [doc_columns(c) for c in cut.chunks]
        row = file_row(rel, columns)
        if row is None:
            continue
        parts.append(list(range(len(chunk_rows), len(chunk_rows) + len(columns))))
        chunk_rows.extend((len(chunk_rows) + n, *cols) for n, cols in enumerate(columns))
        file_rows.append((rel, *row))
    return chunk_rows, file_rows, parts


def test_the_engines_own_source_gives_the_references_postings() -> None:
    chunk_rows, file_rows, _ = engine_rows()
    assert len(chunk_rows) > 1000
    for start in range(0, len(chunk_rows), 1024):
        same_batch(chunk_rows[start : start + 1024], CHUNK_WEIGHTS)
    for start in range(0, len(file_rows), 64):
        same_batch(file_rows[start : start + 64], FILE_WEIGHTS)


HOSTILE = [
    "",
    " ",
    None,
    "a a a a a a a a",
    "a\tb\nc\rd\x0be\x0cf\x1cg\x1dh\x1ei\x1fj\x85k\u2028l\u2029m\u3000n\xa0o",
    "naïve café Straße ΑΒΓ идентификатор 変数名 emoji😀done é é ß",
    "lone \ud800 surrogate\udfffhere \ud800",
    "null\x00byte \x00 \x00",
    "a" * 5000 + " " + "a" * 5000 + " b",
    " ".join(str(i % 17) for i in range(3000)),
    "x " * 4000,
]


def hostile_rows(rng: random.Random, count: int, columns: int) -> list[tuple[object, ...]]:
    """Rows whose columns mix the hostile texts with random repeats of a few words."""
    words = ["parse", "http", "request", "é", "\u4e2d", "0", "_", "a", "A", "a\u0301"]
    rows: list[tuple[object, ...]] = []
    for key in range(count):
        cells: list[object] = []
        for _ in range(columns):
            pick = rng.random()
            if pick < 0.3:
                cells.append(rng.choice(HOSTILE))
            else:
                size = rng.choice((0, 1, 2, 5, 40, 300))
                cells.append(" ".join(rng.choices(words, k=size)))
        rows.append((key, *cells))
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_hostile_text_gives_the_references_postings(seed: int) -> None:
    rng = random.Random(seed)
    for size in (1, 2, 3, 17, 200):
        same_batch(hostile_rows(rng, size, 3), CHUNK_WEIGHTS)
        same_batch(hostile_rows(rng, size, 2), FILE_WEIGHTS)
    same_batch([], CHUNK_WEIGHTS)
    same_batch([(1, None, None, None)], CHUNK_WEIGHTS)


@pytest.mark.parametrize("weights", [(0.1, 0.7, 0.3), (1.5, 4.0, 2.0), (2.0**30, 1.0, 1.0)])
def test_weights_that_are_not_small_whole_numbers_are_summed_token_by_token(
    weights: tuple[float, ...],
) -> None:
    """Such sums depend on their order: they take the reference's path, bit for bit."""
    rng = random.Random(3)
    same_batch(hostile_rows(rng, 150, 3), weights)


def test_both_tables_of_the_engines_source_are_the_references_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A first pass's build of both tables (chunk postings, the file table derived from their
    body groups) is the one the reference builder gives, bit for bit."""
    chunk_rows, file_rows, parts = engine_rows()
    ours = build_pair(chunk_rows, file_rows, parts)
    ours_files = Postings.build(file_rows, FILE_WEIGHTS)
    monkeypatch.setattr(bm25, "batch_postings", reference_postings)
    theirs = build_pair(chunk_rows, file_rows, parts)
    assert ours_files.key_list() == Postings.build(file_rows, FILE_WEIGHTS).key_list()
    for mine, reference in (*zip(ours, theirs, strict=True), (ours_files, theirs[1])):
        same_postings(mine, reference)


def reference_sums(key: np.ndarray, freq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The file table's sums as they were: np.unique's inverse, then bincount."""
    pair, inverse = np.unique(key, return_inverse=True)
    return pair, np.bincount(inverse.reshape(-1), weights=freq, minlength=len(pair))


@pytest.mark.parametrize("seed", range(4))
def test_summed_pairs_are_uniques_sums_bit_for_bit(seed: int) -> None:
    """Packed sort or the general path (fractions, big counts, big keys): the same keys, sums."""
    rng = np.random.default_rng(seed)
    cases = [
        (rng.integers(0, 5000, 20_000), rng.integers(1, 9, 20_000) * 2.0),
        (rng.integers(0, 2**40, 3000), rng.integers(0, 3, 3000).astype(np.float64)),
        (rng.integers(0, 50, 500), rng.integers(0, 2**30, 500).astype(np.float64)),
        (rng.integers(0, 50, 500), rng.random(500)),
        (rng.integers(2**60, 2**62, 100), np.ones(100)),
        (np.zeros(0, dtype=np.int64), np.zeros(0)),
        (np.array([7, 7, 7]), np.array([1.0, 2.0, 4.0])),
        (np.array([1, 1, 2]), np.array([np.inf, 1.0, 2.0])),
        (np.array([3, 1, 3]), np.array([-1.0, 1.0, 2.0])),
    ]
    for key, freq in cases:
        ours, theirs = summed_pairs(key, freq), reference_sums(key, freq)
        assert ours[0].dtype == theirs[0].dtype and np.array_equal(ours[0], theirs[0])
        assert ours[1].dtype == theirs[1].dtype and np.array_equal(ours[1], theirs[1])


# -- plain columns (token_text's output) through the vocabulary's word table --------------------
#: Tokens of every key width's edges (8, 9, 16, 17, 24, 25, 32, 33 bytes) and past them.
PLAIN_WORDS = [
    *("a", "0", "x1", "parse", "http", "request", "parsehttprequest"),
    *("abcdefgh", "abcdefghi", "a" * 16, "b" * 17, "c" * 24, "d" * 25, "e" * 32, "f" * 33),
    *("g" * 100, "netifreceiveskbcore", "0123456789" * 4, "zz"),
]


def plain_rows(rng: random.Random, count: int, columns: int) -> list[tuple[object, ...]]:
    """Rows of plain columns (lower-case ASCII tokens between single spaces), some empty or
    None, with repeats and words made up on the spot."""
    rows: list[tuple[object, ...]] = []
    for key in range(count):
        cells: list[object] = []
        for _ in range(columns):
            size = rng.choice((0, 1, 3, 40, 400))
            made = [f"w{rng.randrange(5000)}" for _ in range(size // 4)]
            cells.append(
                None if rng.random() < 0.05 else " ".join(rng.choices(PLAIN_WORDS, k=size) + made)
            )
        rows.append((key, *cells))
    return rows


@pytest.mark.parametrize("seed", range(4))
def test_plain_columns_give_the_references_postings(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plain path (every size of batch here) gives the split path's postings, row lengths
    and body groups, whole weights or not; a batch whose other column is not plain mixes both."""
    monkeypatch.setattr(batch, "PLAIN_MIN_CHARS", 0)
    rng = random.Random(seed)
    for size in (1, 2, 17, 300):
        same_batch(plain_rows(rng, size, 3), CHUNK_WEIGHTS)
        same_batch(plain_rows(rng, size, 2), FILE_WEIGHTS)
        same_batch(plain_rows(rng, size, 3), (0.1, 0.7, 0.3))
    mixed = [
        (key, body, hostile[2], path)
        for (key, body, _, path), hostile in zip(
            plain_rows(rng, 200, 3), hostile_rows(rng, 200, 3), strict=True
        )
    ]
    same_batch(mixed, CHUNK_WEIGHTS)
    vocab = new_vocab()
    batch_postings(plain_rows(rng, 50, 3), vocab, np.asarray(CHUNK_WEIGHTS))
    assert isinstance(vocab, Vocab) and vocab.words is not None  # the plain path ran


def test_a_word_table_that_starts_afresh_gives_the_same_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Tables of 64 slots (32 words each) under one vocabulary across batches of hundreds of
    distinct words: each batch's postings are the reference's, by token, with the same ids."""
    monkeypatch.setattr(batch, "PLAIN_MIN_CHARS", 0)
    monkeypatch.setattr(batch, "SLOTS_BITS", 6)
    rng = random.Random(11)
    weight_of = np.asarray(CHUNK_WEIGHTS)
    ours_vocab, their_vocab = new_vocab(), new_vocab()
    for size in (3, 40, 120, 40):
        rows = plain_rows(rng, size, 3)
        ours = batch_postings(rows, ours_vocab, weight_of)
        theirs = reference_postings(rows, their_vocab, weight_of)
        assert set(ours_vocab) == set(their_vocab)
        assert by_token(ours, ours_vocab) == by_token(theirs, their_vocab)
    assert isinstance(ours_vocab, Vocab) and ours_vocab.words is not None
    assert all(len(table.counts) <= 32 for table in ours_vocab.words.tables)


def test_a_vocabulary_goes_with_its_word_table_at_once() -> None:
    """The table's callbacks hold the vocabulary weakly: no cycle waits for the collector (a
    build's tables are 7 MB)."""
    vocab = new_vocab()
    assert isinstance(vocab, Vocab)
    vocab.table()
    gone = weakref.ref(vocab)
    del vocab
    assert gone() is None
