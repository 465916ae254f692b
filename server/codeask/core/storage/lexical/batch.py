"""One batch of rows turned into postings: (term id, row, weighted tf) and each row's length.

The indexing process's biggest share of a first pass (~32 % of its CPU on kernel,mm,lib, ~245
ns a token: split, flatten, a dictionary lookup per token, a sort of every token). A row's
body repeats its tokens (a C function names its locals, types and fields over and over), so
each body is counted first (`Counter`, whose counting loop is C): the flattening, the term-id
lookups and the sort then see each (term, row) of the body once, not each token. The short
symbol and path columns are taken token by token (a `Counter` costs more than their few
tokens). A (term, row)'s weighted frequency is summed as one pass over its tokens would, column
by column, bit for bit (tests/unit/test_batch_postings.py keeps the token-by-token builder as
the reference). Column weights that are whole numbers make every sum one of small integers,
exact in any order, so a sort can carry them inside their keys (`summed_pairs`, used by the file
table too): a plain sort of int64 instead of an argsort and its gathers.

Columns written by token_text (lower-case ASCII letters and digits between single spaces: every
column a first pass builds) skip the strings altogether (`_plain_ids`): a batch's column is one
buffer, its tokens are found by their bytes in the vocabulary's word table (runtime/word_table.py,
shared with the static tier's tokenizer) and only a token met for the first time in the build
becomes a string; the body's (term, row) counts are then one `np.unique`. On 2,000 kernel files
(5.5M body tokens, builds of 4M characters, off and on alternately in one process): 1.82-2.22 ->
1.40-1.97 CPU-s, the same postings (tests/unit/test_batch_postings.py).
"""

from __future__ import annotations

import weakref
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, count

import numpy as np

from codeask.core.runtime import word_table

#: The largest column weight summed the fast way: a row's count (< 2**31 tokens) times it
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

    def add(
        self, term: np.ndarray, place: np.ndarray, size: np.ndarray, length: np.ndarray
    ) -> None:
        """One batch's column-0 (term id, row, count) groups, each (term, row) once."""
        self.terms.append(term)
        self.rows.append(place)
        self.counts.append(size)
        self.lengths.append(length)


#: Key widths of the vocabulary's word table: tokens of up to 32 bytes are found without a
#: string (a kernel identifier's whole form, its underscores dropped, is often past 16).
WIDTHS = 4
_PADDING = word_table.padding(WIDTHS)
#: Slots of each of its tables: a build of 4M characters of kernel meets ~16k distinct tokens of
#: each of the two short widths (a table takes half its slots: 32k), and the four tables are
#: 7 MB, not the 28 MB of the tokenizer's size.
SLOTS_BITS = 16
#: The bytes of a plain column (token_text's output) ...
_PLAIN_BYTES = b"abcdefghijklmnopqrstuvwxyz0123456789 "
#: ... taken the plain way from this many characters on (below, a table's numpy calls cost
#: more than the strings: an edit's few rows).
PLAIN_MIN_CHARS = 8192


class Vocab(defaultdict[str, int]):
    """token → term id, an unseen token getting the next id on lookup (no Python loop), and
    the word table of its plain columns' tokens (`_plain_ids`), made on first use."""

    def __init__(self) -> None:
        super().__init__(count().__next__)
        self.words: word_table.Words | None = None

    def table(self) -> word_table.Words:
        """The word table, whose new words get their ids here (through a weak reference: the
        table's 7 MB go with the vocabulary, not at the cyclic collector's next run)."""
        if self.words is None:
            vocab = weakref.ref(self)

            def one(word: str) -> tuple[int, ...]:
                return (_held(vocab)[word],)

            def many(words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
                ids = np.fromiter(map(_held(vocab).__getitem__, words), np.intp, len(words))
                return ids, np.ones(len(words), dtype=np.intp)

            self.words = word_table.Words(one, many, widths=WIDTHS, slots_bits=SLOTS_BITS)
        return self.words


def _held(vocab: weakref.ref[Vocab]) -> Vocab:
    """The vocabulary a table belongs to (alive while its table is used)."""
    held = vocab()
    assert held is not None
    return held


def new_vocab() -> dict[str, int]:
    """An empty `Vocab`."""
    return Vocab()


def _plain_ids(texts: list[str], vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray] | None:
    """(term id, text) of each token of `texts` in order, when every text is plain (token_text's
    bytes) and they are long enough to be worth it; else None (split them)."""
    joined = " ".join(texts)
    if len(joined) < PLAIN_MIN_CHARS or not isinstance(vocab, Vocab) or not joined.isascii():
        return None
    data = joined.encode("ascii")
    if data.translate(None, _PLAIN_BYTES):
        return None
    buffer = b" " + data + _PADDING  # a space first: every token opens after one
    edge = np.diff((np.frombuffer(buffer, dtype=np.uint8) != 0x20).view(np.int8))
    starts = np.flatnonzero(edge == 1) + 1
    ends = np.flatnonzero(edge == -1) + 1
    entry, ids, _ = vocab.table().entries(buffer, starts, ends)  # one id an entry
    text_starts = np.cumsum([1, *[len(text) + 1 for text in texts[:-1]]])
    return ids[entry].astype(np.int64), np.searchsorted(text_starts, starts, side="right") - 1


def batch_postings(
    chunk: list[Sequence[object]],
    vocab: dict[str, int],
    weight_of: np.ndarray,
    bodies: Bodies | None = None,
    offset: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(term id, row in the batch, weighted tf) of one batch's postings, and its row lengths;
    `bodies` gets the first column's groups (rows from `offset`). Term ids come from `vocab`
    (a `new_vocab()`: unseen tokens numbered in C, in order of first appearance on the split
    path, as its word table learns them on the plain one)."""
    rows = len(chunk)
    places = np.arange(rows, dtype=np.int64)
    body = [str(row[1] or "") for row in chunk]
    plain = _plain_ids(body, vocab)
    if plain is None:
        counted = [Counter(text.split()) for text in body]
        distinct = np.fromiter(map(len, counted), dtype=np.int64, count=rows)
        ids = _ids(chain.from_iterable(counted), vocab, int(distinct.sum()))
        tf = np.fromiter(chain.from_iterable(map(dict.values, counted)), np.int64, len(ids))
        place = np.repeat(places, distinct)
        pair = ids * rows + place
    else:
        pair, tf = np.unique(plain[0] * rows + plain[1], return_counts=True)
        ids, place = np.divmod(pair, rows)
    total = np.bincount(place, weights=tf, minlength=rows).astype(np.int64)
    if bodies is not None:
        bodies.add(ids, place + offset, tf, total.copy())
    keys, columns, counts = [pair], [np.zeros(len(ids), np.int64)], [tf]
    for column in range(1, len(weight_of)):
        found, where = _column_tokens([str(row[column + 1] or "") for row in chunk], vocab)
        keys.append(found * rows + where)
        columns.append(np.full(len(where), column, dtype=np.int64))
        counts.append(np.ones(len(where), dtype=np.int64))
        total += np.bincount(where, minlength=rows)
    pair, freq = _weighted(
        np.concatenate(keys), np.concatenate(columns), np.concatenate(counts), weight_of
    )
    term, place = np.divmod(pair, rows)
    return term.astype(np.int32), place, freq, total


def _column_tokens(texts: list[str], vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(term id, text) of each token of a short column (symbols, paths), plain or split."""
    plain = _plain_ids(texts, vocab)
    if plain is not None:
        return plain
    split = [text.split() for text in texts]
    sizes = np.fromiter(map(len, split), dtype=np.int64, count=len(texts))
    found = _ids(chain.from_iterable(split), vocab, int(sizes.sum()))
    return found, np.repeat(np.arange(len(texts), dtype=np.int64), sizes)


def _ids(tokens: Iterable[str], vocab: dict[str, int], size: int) -> np.ndarray:
    """Each token's term id (int64), numbering unseen ones."""
    return np.fromiter(map(vocab.__getitem__, tokens), np.int64, size)


def _weighted(
    pair: np.ndarray, column: np.ndarray, tokens: np.ndarray, weight_of: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(distinct pairs ascending, weighted tf): entry i is `tokens[i]` tokens of `pair[i]` in
    `column[i]`. Whole weights: one packed sort. Others: each token's weight added in the order
    a pass over the tokens gives (column 0's first), as the token-by-token builder did."""
    whole = np.array_equal(weight_of, np.trunc(weight_of))
    if whole and bool(np.all(np.abs(weight_of) <= MAX_WHOLE_WEIGHT)):
        return summed_pairs(pair, tokens * weight_of[column])
    order = np.argsort(pair * len(weight_of) + column, kind="stable")
    pair, column, tokens = pair[order], column[order], tokens[order]
    first = np.ones(len(pair), dtype=bool)
    np.not_equal(pair[1:], pair[:-1], out=first[1:])
    group = np.cumsum(first) - 1
    freq = np.bincount(np.repeat(group, tokens), weights=np.repeat(weight_of[column], tokens))
    return pair[first], freq


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
    if int(key.max()) >= 1 << (62 - bits):
        return None
    return (key << bits) | freq.astype(np.int64), bits
