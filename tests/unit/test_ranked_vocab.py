"""A build's vocabulary sorted once for both of its tables (lexical/ranked_vocab.py) gives the
tables the per-table sort gave (main at d4f60b7's `Postings.assemble`, kept here as the
reference): each table keeps exactly the terms its postings use, in order, with the same
postings, on hostile terms (non-ASCII, zero bytes, very long), terms only in the chunk table's
symbol column, terms only in a file row, and files whose body is tokenized as usual."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
from tests.unit.test_bm25 import same_postings

from codeask.core.storage.lexical.asked import askable
from codeask.core.storage.lexical.batch import new_vocab
from codeask.core.storage.lexical.bm25 import (
    CHUNK_WEIGHTS,
    FILE_WEIGHTS,
    Postings,
    TermSlices,
    _compact_keys,
    collect,
    compact_freqs,
    compact_lengths,
)
from codeask.core.storage.lexical.file_postings import build_pair
from codeask.core.storage.lexical.ranked_vocab import RankedVocab


def reference_build(rows: Sequence[Sequence[object]], weights: Sequence[float]) -> Postings:
    """Postings.build as it was: its own vocabulary, sorted by the table's assemble (of the
    terms a query can ask for: asked.py)."""
    keys, vocab, terms, places, freqs, lengths = collect(rows, weights, new_vocab())
    term_of = np.concatenate(terms) if terms else np.zeros(0, np.int32)
    row_of = np.concatenate(places).astype(np.int32) if places else np.zeros(0, np.int32)
    freq = np.concatenate(freqs) if freqs else np.zeros(0)
    asked = np.isin(term_of, [i for term, i in vocab.items() if askable(term)])
    term_of, row_of, freq = term_of[asked], row_of[asked], freq[asked]
    vocab = {term: i for term, i in vocab.items() if askable(term)}
    names = sorted(vocab)
    rank = np.fromiter(map(vocab.__getitem__, names), np.int64, len(names))
    renumber = np.full(int(rank.max(initial=-1)) + 1, -1, dtype=np.int32)
    renumber[rank] = np.arange(len(names), dtype=np.int32)
    term_of = renumber[term_of]
    order = np.argsort(term_of.astype(np.int64) * (len(keys) + 1) + row_of, kind="stable")
    term_of, row_of, freq = term_of[order], row_of[order], compact_freqs(freq[order])
    starts = np.searchsorted(term_of, np.arange(len(names) + 1)).astype(np.int64)
    widths = np.concatenate(lengths).astype(np.float64) if lengths else np.zeros(0)
    average = float(widths.sum()) / max(len(keys), 1)
    slices = TermSlices.of(names, starts)
    return Postings(_compact_keys(keys), compact_lengths(widths), average, slices, row_of, freq)


HOSTILE = ["parse", "é", "\u4e2d", "\U0001f600", "a\x00", "a", "x" * 40, "x" * 40 + "é", "w" * 300]


def _pair(rng: random.Random) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], list]:
    """Chunk rows, file rows (each file's body its chunks' bodies joined), parts."""
    words = HOSTILE + [f"t{i}" for i in range(60)]
    chunk_rows: list[tuple[object, ...]] = []
    file_rows: list[tuple[object, ...]] = []
    parts: list[list[int] | None] = []
    for n in range(rng.randint(1, 12)):
        path = f"src/{rng.choice(words)}/f{n}.c"
        first = len(chunk_rows)
        for _ in range(rng.randint(0, 5)):
            body = " ".join(rng.choices(words, k=rng.randint(0, 30)))
            symbol = " ".join(rng.choices(["onlysymbol", *words], k=rng.randint(0, 3)))
            chunk_rows.append((len(chunk_rows), body, symbol, path.replace("/", " ")))
        bodies = " ".join(str(row[1]) for row in chunk_rows[first:])
        if rng.random() < 0.2:  # a file row tokenized as usual, with a term of its own
            file_rows.append((path, bodies + f" onlyfile{n}", path.replace("/", " ")))
            parts.append(None)
        else:
            file_rows.append((path, bodies, path.replace("/", " ")))
            parts.append(list(range(first, len(chunk_rows))))
    return chunk_rows, file_rows, parts


def test_a_pair_over_one_sorted_vocabulary_is_each_tables_own_build() -> None:
    rng = random.Random(17)
    for _ in range(60):
        chunk_rows, file_rows, parts = _pair(rng)
        if not chunk_rows:
            continue
        chunks, files = build_pair(chunk_rows, file_rows, parts)
        same_postings(chunks, reference_build(chunk_rows, CHUNK_WEIGHTS))
        same_postings(files, reference_build(file_rows, FILE_WEIGHTS))
        same_postings(Postings.build(chunk_rows, CHUNK_WEIGHTS), chunks)
        assert files.doc_frequency("onlysymbol") == 0  # a chunk-only term: not in the file table


def test_a_table_takes_only_the_terms_its_postings_use() -> None:
    vocab = new_vocab()
    for term in ("zeta", "é", "alpha", "a\x00", "mid"):
        vocab[term]  # numbered in first-seen order: 0..4
    ranked = RankedVocab.of(vocab)
    assert ranked.names == [b"a\x00", b"alpha", b"mid", b"zeta", "é".encode()]
    assert ranked.rank.tolist() == [3, 4, 1, 0, 2]
    names, places = ranked.used(np.array([3, 1, 3, 4]))
    assert names == [b"alpha", b"zeta", "é".encode()] and places.tolist() == [1, 0, 1, 2]
    names, places = ranked.used(np.array([4, 3, 2, 1, 0]))
    assert names == ranked.names and places.tolist() == [4, 3, 2, 1, 0]
