"""Whole-file postings derived from the chunk postings' build, not from the files' text again.

A whole-file row's body is its chunks' bodies joined (index.file_row), so its body terms are
the union of its chunks' body terms and each count the sum of theirs. Tokenizing that joined
text again (split, a dictionary lookup per token, a sort of every token) was ~40 % of a first
pass's lexical build (kernel,mm,lib). Here the chunk build hands over its first column's
(term, row, count) groups (`Bodies`), they are summed per file, and only the files' path
column (and the body of any file row not made of these chunks) is tokenized. Every weighted
frequency and length is a sum of small integers, so the table is the one `Postings.build` of
the file rows gives, bit for bit (tests/unit/test_bm25.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from codeask.core.storage.lexical.batch import Bodies, new_vocab, summed_pairs
from codeask.core.storage.lexical.bm25 import (
    CHUNK_WEIGHTS,
    FILE_WEIGHTS,
    Collected,
    Postings,
    collect,
)
from codeask.core.storage.lexical.ranked_vocab import RankedVocab


def build_pair(
    chunk_rows: Sequence[Sequence[object]],
    file_rows: Sequence[Sequence[object]],
    parts: Sequence[Sequence[int] | None],
) -> tuple[Postings, Postings]:
    """(chunk postings, file postings): `chunk_rows` (id, body, symbol, path), `file_rows`
    (path, body, path tokens); `parts[i]` the positions in `chunk_rows` of file i's chunks, in
    order, whose bodies joined are its body (None: its body is tokenized as usual). Both
    tables' rows are tokenized first, then the one vocabulary is sorted once for both."""
    vocab = new_vocab()
    bodies = Bodies.empty()
    keys, _, terms, places, freqs, lengths = collect(
        chunk_rows, CHUNK_WEIGHTS, vocab, bodies=bodies
    )
    derived = [part is not None for part in parts]
    rows = [(r[0], "" if d else r[1], r[2]) for r, d in zip(file_rows, derived, strict=True)]
    files = collect(rows, FILE_WEIGHTS, vocab)
    ranked = RankedVocab.of(vocab)
    del vocab
    chunk_terms = [ranked.rank[term] for term in terms]
    chunks = Postings.ranked(keys, ranked, chunk_terms, places, freqs, lengths)
    return chunks, _files(files, parts, ranked, bodies, len(chunk_rows))


def _files(
    collected: Collected,
    parts: Sequence[Sequence[int] | None],
    vocab: RankedVocab,
    bodies: Bodies,
    chunk_count: int,
) -> Postings:
    """The file table: the path column (and bodies not derived), tokenized in the chunks'
    vocabulary, plus each derived file's summed chunk body counts."""
    file_of = np.full(chunk_count, -1, dtype=np.int64)
    for at, part in enumerate(parts):
        if part is not None:
            file_of[np.asarray(part, dtype=np.int64)] = at
    keys, _, terms, places, freqs, lengths = collected
    chunk_term, chunk_row, count, body_length = _joined(bodies)
    owner = file_of[chunk_row]
    mine = owner >= 0
    files = len(parts)
    # term ids as places in term order first: the one sort below is then the table's order;
    # terms no query asks for are dropped before it (Postings.ranked would, after it)
    term = vocab.rank[np.concatenate([*[t.astype(np.int64) for t in terms], chunk_term[mine]])]
    place = np.concatenate([*places, owner[mine]])
    freq = np.concatenate([*freqs, count[mine] * FILE_WEIGHTS[0]])
    asked = vocab.asked[term]
    term, place, freq = term[asked], place[asked], freq[asked]
    pair, summed = summed_pairs(term * files + place, freq)
    length = np.concatenate(lengths).astype(np.float64) if lengths else np.zeros(files)
    has_body = file_of >= 0
    length += np.bincount(file_of[has_body], weights=body_length[has_body], minlength=files)
    return Postings.ranked(keys, vocab, [pair // files], [pair % files], [summed], [length])


def _joined(bodies: Bodies) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(term, chunk row, count) of every chunk's body groups, and each chunk's body length."""
    if not bodies.terms:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty, empty
    return (
        np.concatenate(bodies.terms).astype(np.int64),
        np.concatenate(bodies.rows).astype(np.int64),
        np.concatenate(bodies.counts).astype(np.float64),
        np.concatenate(bodies.lengths).astype(np.float64),
    )
