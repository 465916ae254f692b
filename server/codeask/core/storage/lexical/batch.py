"""One batch of rows turned into postings: (term id, row, weighted tf) and each row's length.

The indexing process's biggest share of a first pass (~32 % of its CPU on kernel,mm,lib, ~245
ns a token: split, flatten, a dictionary lookup per token, a sort of every token). A row's
body repeats its tokens (a C function names its locals, types and fields over and over), so
each body is counted first (`Counter`, whose counting loop is C): the flattening, the term-id
lookups and the sort then see each (term, row) of the body once, not each token. The short
symbol and path columns are taken token by token (a `Counter` costs more than their few
tokens). Column weights that are whole numbers make every weighted frequency a sum of small
integers, exact in float64 whatever the order of its terms, so the postings are those of
counting token by token, bit for bit (tests/unit/test_batch_postings.py); other weights take
the token-by-token path, which sums in column order. Whole frequencies also let a sort carry
them inside their keys (`summed_pairs`, used by the file table too): a plain sort of int64
instead of an argsort and its gathers.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, count

import numpy as np

#: The largest column weight counted the fast way: a row's count (< 2**31 tokens) times it
#: and the sums over the columns stay integers below 2**53, exact in float64.
MAX_WHOLE_WEIGHT = 2**20


@dataclass
class Bodies:
    """The first column's postings of a build, as the batches found them: (term id, row,
    token count) arrays and each row's token count in that column."""

    terms: list[np.ndarray]
    rows: list[np.ndarray]
    counts: list[np.ndarray]
    lengths: list[np.ndarray]

    @classmethod
    def empty(cls) -> Bodies:
        return cls([], [], [], [])

    def add(self, key: np.ndarray, rows: int, columns: int, first: int, length: np.ndarray) -> None:
        """From a batch's sorted (term, row, column) keys: the column-0 groups and their sizes."""
        edge = np.flatnonzero(np.diff(key, prepend=-1, append=key[-1:] + 1 if len(key) else 0))
        triple, size = key[edge[:-1]], np.diff(edge)
        body = triple % columns == 0
        term, place = np.divmod(triple[body] // columns, rows)
        self.add_counted(term, place + first, size[body], length)

    def add_counted(
        self, term: np.ndarray, place: np.ndarray, size: np.ndarray, length: np.ndarray
    ) -> None:
        """One batch's column-0 (term id, row, count) groups, each (term, row) once."""
        self.terms.append(term)
        self.rows.append(place)
        self.counts.append(size)
        self.lengths.append(length)


def new_vocab() -> dict[str, int]:
    """token → term id, an unseen token getting the next id on lookup (no Python loop)."""
    return defaultdict(count().__next__)


def batch_postings(
    chunk: list[Sequence[object]],
    vocab: dict[str, int],
    weight_of: np.ndarray,
    bodies: Bodies | None = None,
    offset: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(term id, row in the batch, weighted tf) of one batch's postings, and its row lengths;
    `bodies` gets the first column's groups (rows from `offset`). Term ids come from `vocab`
    (a `new_vocab()`: unseen tokens numbered in C, in order of first appearance)."""
    if not _whole(weight_of):
        return token_postings(chunk, vocab, weight_of, bodies, offset)
    rows = len(chunk)
    places = np.arange(rows, dtype=np.int64)
    counted = [Counter(str(row[1] or "").split()) for row in chunk]
    distinct = np.fromiter(map(len, counted), dtype=np.int64, count=rows)
    ids = _ids(chain.from_iterable(counted), vocab, int(distinct.sum()))
    tf = np.fromiter(chain.from_iterable(map(dict.values, counted)), np.int64, len(ids))
    place = np.repeat(places, distinct)
    total = np.bincount(place, weights=tf, minlength=rows).astype(np.int64)
    if bodies is not None:
        bodies.add_counted(ids, place + offset, tf, total.copy())
    keys, weights = [ids * rows + place], [tf * weight_of[0]]
    for column in range(1, len(weight_of)):
        split = [str(row[column + 1] or "").split() for row in chunk]
        counts = np.fromiter(map(len, split), dtype=np.int64, count=rows)
        found = _ids(chain.from_iterable(split), vocab, int(counts.sum()))
        keys.append(found * rows + np.repeat(places, counts))
        weights.append(np.full(len(found), weight_of[column]))
        total += counts
    return (*_grouped(np.concatenate(keys), np.concatenate(weights), rows), total)


def _whole(weights: np.ndarray) -> bool:
    """Every weight a whole number no larger than MAX_WHOLE_WEIGHT (the fast path is exact)."""
    return bool(
        np.array_equal(weights, np.round(weights)) and np.all(np.abs(weights) <= MAX_WHOLE_WEIGHT)
    )


def _ids(tokens: Iterable[str], vocab: dict[str, int], size: int) -> np.ndarray:
    """Each token's term id (int64), numbering unseen ones."""
    return np.fromiter(map(vocab.__getitem__, tokens), np.int64, size)


def _grouped(
    pair: np.ndarray, weight: np.ndarray, rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(term id, row, summed weight) of each distinct (term * rows + row) key, in key order."""
    pair, freq = summed_pairs(pair, weight)
    term, place = np.divmod(pair, rows)
    return term.astype(np.int32), place, freq


def summed_pairs(key: np.ndarray, freq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys ascending, each one's summed `freq`). Whole frequencies (whole column
    weights) ride in the low bits of their key: one plain sort of int64, no argsort and
    gathers (np.unique's inverse was ~60 % of the file table's build); every sum is below
    2**52, so it is the float64 the general path (np.unique, bincount) gives."""
    packed = _packed(key, freq)
    if packed is not None:
        ordered, bits = np.sort(packed[0]), packed[1]
        pair_of, value = ordered >> bits, ordered & ((1 << bits) - 1)
        first = np.ones(len(pair_of), dtype=bool)
        np.not_equal(pair_of[1:], pair_of[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        return pair_of[starts], np.add.reduceat(value, starts).astype(np.float64)
    pair, inverse = np.unique(key, return_inverse=True)
    return pair, np.bincount(inverse.reshape(-1), weights=freq, minlength=len(pair))


def _packed(key: np.ndarray, freq: np.ndarray) -> tuple[np.ndarray, int] | None:
    """`key << bits | freq` and `bits` when every freq is whole, in [0, 2**20), and fits."""
    if not len(key) or len(key) >= 1 << 31 or key.min() < 0:
        return None
    if not (freq.min() >= 0 and freq.max() < 1 << 20 and np.array_equal(freq, np.trunc(freq))):
        return None
    bits = max(int(freq.max()).bit_length(), 1)
    if bits > 20 or int(key.max()) >= 1 << (62 - bits):
        return None
    return (key << bits) | freq.astype(np.int64), bits


def token_postings(
    chunk: list[Sequence[object]],
    vocab: dict[str, int],
    weight_of: np.ndarray,
    bodies: Bodies | None = None,
    offset: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`batch_postings` token by token: weights that are not whole numbers are summed in the
    order one pass over the columns would (column 0's tokens first), bit for bit.

    Every token becomes one int64 key (term, row, column) and the keys are sorted once (a
    plain sort, no argsort); `bincount` then adds each (term, row)'s column weights."""
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
        bodies.add(key, rows, columns, offset, per_column[0])
    pair = key // columns
    first = np.ones(len(pair), dtype=bool)
    np.not_equal(pair[1:], pair[:-1], out=first[1:])
    freq = np.bincount(np.cumsum(first) - 1, weights=weight_of[key - pair * columns])
    term, place = np.divmod(pair[first], rows)
    return term.astype(np.int32), place, freq, total
