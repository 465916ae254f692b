"""FTS5's own BM25, answered from memory: the same scores, a hundredth of the time.

SQLite's FTS5 ranks an OR-query by walking every matching row, so a query of common terms
costs 5–15 ms on a 15k-chunk folder and three of them (chunks, the report's lead, files) are
most of a search. This index holds the same table as numpy postings (term → rows and their
column-weighted frequencies) and scores with FTS5's formula (fts5_aux.c, `fts5Bm25Function`):

    idf(t) = max(log((N - n_t + 0.5) / (n_t + 0.5)), 1e-6)
    score  = Σ_t idf(t) · f·(k1 + 1) / (f + k1·(1 − b + b·|D| / avgdl)),   f = Σ_col w_col·tf_col

with k1 = 1.2, b = 0.75, |D| the row's tokens over all columns. It is built from the table's
rows (already tokenized, space-separated) and is only ever used for the table version it was
built from, plus the writes made since (`LiveTable`: rows replaced or removed are masked, new
rows sit in small extra segments), so a save costs a few milliseconds instead of a rebuild of the
whole table. `storage.lexical.memory.MemoryCopy` decides when a copy is built and replays the
writes.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
#: Rows tokenized at a time by Postings.build (bounds the Python token lists alive at once).
BUILD_BATCH = 1024
#: ... and at most about this many characters of row text.
BUILD_CHARS = 2_000_000
#: Extra segments a LiveTable keeps before merging them into one (each costs a little per query).
MAX_SEGMENTS = 8


class TermSlices:
    """term → (start, end) of its postings, held as three flat objects: every term in one string
    (sorted, back to back), where each term starts in it, and where its postings start. A dict
    of the terms held ~110 bytes per term in ~80k small objects (sphinx: 39k terms per table),
    made among millions of short-lived tokens and pinning allocator arenas long after the build;
    a term is found by bisection (~17 slices of the string, a few microseconds a query term)."""

    __slots__ = ("_bounds", "_text", "starts")

    def __init__(self, terms: Sequence[str], starts: np.ndarray) -> None:
        """`terms` sorted (code point order, as Python compares strings); `starts[i]` where the
        postings of `terms[i]` start, `starts[-1]` where the last one ends."""
        self._text = "".join(terms)
        widths = np.fromiter(map(len, terms), dtype=np.int64, count=len(terms))
        self._bounds = array("q", np.concatenate(([0], np.cumsum(widths))).tobytes())
        self.starts = starts

    def _term(self, index: int) -> str:
        return self._text[self._bounds[index] : self._bounds[index + 1]]

    def _find(self, term: str) -> int | None:
        low, high = 0, len(self._bounds) - 1
        while low < high:
            middle = (low + high) // 2
            if self._term(middle) < term:
                low = middle + 1
            else:
                high = middle
        if low < len(self._bounds) - 1 and self._term(low) == term:
            return low
        return None

    def get(self, term: str, default: tuple[int, int] = (0, 0)) -> tuple[int, int]:
        found = self._find(term)
        if found is None:
            return default
        return int(self.starts[found]), int(self.starts[found + 1])

    def terms(self) -> Iterator[str]:
        """Every term, in sorted order."""
        return (self._term(i) for i in range(len(self)))

    def __len__(self) -> int:
        return len(self._bounds) - 1


def _batches(
    rows: Iterable[Sequence[object]], most: int, columns: int
) -> Iterator[list[Sequence[object]]]:
    """Rows in lists of at most `most` rows and BUILD_CHARS characters of text (whole files
    are ~100x a chunk: 1,024 of them held ~280 MB of tokens at once)."""
    chunk: list[Sequence[object]] = []
    size = 0
    for row in rows:
        chunk.append(row)
        size += sum(len(str(row[c] or "")) for c in range(1, columns + 1))
        if len(chunk) >= most or size >= BUILD_CHARS:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _compact(freqs: np.ndarray) -> np.ndarray:
    """float32 if it holds every frequency exactly (half the bytes), else the float64 array."""
    narrow = freqs.astype(np.float32)
    return narrow if np.array_equal(narrow, freqs) else freqs


def _compact_keys(keys: list[object]) -> list[object] | np.ndarray:
    """Integer keys as one int64 array (15k Python ints pin the allocator's arenas), others as
    they are."""
    if keys and all(type(key) is int for key in keys):
        return np.asarray(keys, dtype=np.int64)
    return keys


@dataclass(frozen=True)
class Postings:
    """One FTS5 table in memory, as compressed rows: term → a slice of (row, weighted tf)."""

    #: Row keys: an int64 array when every key is an int (chunk ids), else a list (paths).
    keys: list[object] | np.ndarray
    lengths: np.ndarray
    average: float
    slices: TermSlices
    rows: np.ndarray
    #: Weighted term frequencies: float32 when that holds every one exactly (integer column
    #: weights, as FTS5's here), else float64; read as float64 (`Segment.matches`).
    freqs: np.ndarray

    @classmethod
    def build(
        cls, rows: Iterable[Sequence[object]], weights: Sequence[float], batch: int = BUILD_BATCH
    ) -> Postings:
        """`rows`: (key, column text, column text, ...); each text is space-separated tokens.

        Batch by batch: C-level splitting and id lookups (`map`), a Python loop only over
        distinct tokens, numpy sums each batch's weighted (term, row) counts at once (a row
        lives in one batch, so the sums and their order are those of one pass over all rows),
        and only the postings are kept: the peak follows postings, not tokens (sphinx: +365 →
        ~+100 MB). 15k chunks, 1.5M tokens: ~0.3 s, all of it holding the GIL that hover and
        search threads need."""
        keys: list[object] = []
        vocab: dict[str, int] = {}
        weight_of = np.asarray(weights, dtype=np.float64)
        terms: list[np.ndarray] = []
        places: list[np.ndarray] = []
        freqs: list[np.ndarray] = []
        lengths: list[np.ndarray] = []
        for chunk in _batches(rows, batch, len(weights)):
            first = len(keys)
            keys.extend(row[0] for row in chunk)
            local = np.arange(len(chunk), dtype=np.int64)
            ids: list[np.ndarray] = []
            at: list[np.ndarray] = []
            columns: list[np.ndarray] = []
            total = np.zeros(len(chunk), dtype=np.int64)
            for column in range(1, len(weights) + 1):
                split = [str(row[column] or "").split() for row in chunk]
                counts = np.fromiter(map(len, split), dtype=np.int64, count=len(chunk))
                flat = list(chain.from_iterable(split))
                for token in dict.fromkeys(flat):
                    vocab.setdefault(token, len(vocab))
                ids.append(np.fromiter(map(vocab.__getitem__, flat), np.int64, len(flat)))
                at.append(np.repeat(local, counts))
                columns.append(np.full(len(flat), column - 1, dtype=np.int8))
                total += counts
            pair = np.concatenate(ids) * len(chunk) + np.concatenate(at)
            unique, inverse = np.unique(pair, return_inverse=True)
            freqs.append(np.bincount(inverse, weights=weight_of[np.concatenate(columns)]))
            term, place = np.divmod(unique, len(chunk))
            terms.append(term.astype(np.int32))
            places.append((place + first).astype(np.int32))
            lengths.append(total)
        term_of = np.concatenate(terms) if terms else np.zeros(0, np.int32)
        row_of = np.concatenate(places) if places else np.zeros(0, np.int32)
        freq = np.concatenate(freqs) if freqs else np.zeros(0)
        del terms, places, freqs
        names = sorted(vocab)  # ids renumbered in term order (the slices bisect the terms)
        rank = np.fromiter(map(vocab.__getitem__, names), np.int64, len(names))
        renumber = np.empty(len(names), dtype=np.int32)
        renumber[rank] = np.arange(len(names), dtype=np.int32)
        term_of = renumber[term_of]
        del vocab, rank, renumber
        order = np.lexsort((row_of, term_of))  # by term, then row: one pass's order
        term_of, row_of, freq = term_of[order], row_of[order], _compact(freq[order])
        starts = np.searchsorted(term_of, np.arange(len(names) + 1)).astype(np.int64)
        widths = np.concatenate(lengths).astype(np.float64) if lengths else np.zeros(0)
        average = float(widths.sum()) / max(len(keys), 1)
        slices = TermSlices(names, starts)
        return cls(_compact_keys(keys), widths, average, slices, row_of, freq)

    def key_list(self) -> list[object]:
        """Every row's key as a plain Python object, in row order."""
        return self.keys.tolist() if isinstance(self.keys, np.ndarray) else list(self.keys)

    def key(self, row: int) -> object:
        """One row's key as a plain Python object (an int, not a numpy scalar)."""
        found = self.keys[row]
        return found.item() if isinstance(found, np.generic) else found

    def doc_frequency(self, term: str) -> int:
        """Rows containing the term (FTS5's fts5vocab `doc`)."""
        start, end = self.slices.get(term, (0, 0))
        return end - start

    def search(self, terms: Sequence[str], limit: int) -> list[tuple[object, float]]:
        """(key, score) of the best `limit` rows matching any term, best first."""
        return LiveTable(self).search(terms, limit)


@dataclass
class Segment:
    """Postings of some rows, and which of them a later write replaced or removed."""

    postings: Postings
    #: Tie order of each row (FTS5 breaks ties by rowid: chunk ids, or insertion order).
    order: np.ndarray
    #: Source rows, kept for the small segments only (merging them re-reads nothing).
    rows: list[tuple[object, ...]] | None = None
    masked: np.ndarray | None = None
    masked_count: int = 0
    masked_length: float = 0.0
    total_length: float = field(init=False)

    def __post_init__(self) -> None:
        self.total_length = float(self.postings.lengths.sum())

    def live(self) -> int:
        return len(self.postings.keys) - self.masked_count

    def mask(self, position: int) -> None:
        if self.masked is None:
            self.masked = np.zeros(len(self.postings.keys), dtype=bool)
        if not self.masked[position]:
            self.masked[position] = True
            self.masked_count += 1
            self.masked_length += float(self.postings.lengths[position])

    def matches(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, weighted tf) of the live rows holding the term."""
        start, end = self.postings.slices.get(term, (0, 0))
        rows = self.postings.rows[start:end]
        freqs = np.asarray(self.postings.freqs[start:end], dtype=np.float64)
        if self.masked is not None and len(rows):
            keep = ~self.masked[rows]
            rows, freqs = rows[keep], freqs[keep]
        return rows, freqs


class LiveTable:
    """One table in memory as it is now: the Postings it was built from plus later writes.

    A write masks the rows it replaces or removes and adds its new rows as a small segment, so
    scores stay FTS5's over the current table (N, average length and document frequencies
    count live rows only). Past MAX_SEGMENTS the small segments are merged into one.
    """

    def __init__(
        self,
        base: Postings,
        weights: Sequence[float] = (),
        *,
        tie_by_key: bool = False,
    ) -> None:
        self.weights = tuple(weights)
        self.tie_by_key = tie_by_key
        order = np.asarray(base.keys, np.int64) if tie_by_key else np.arange(len(base.keys))
        self.segments = [Segment(base, order)]
        self._where: dict[object, tuple[int, int]] | None = None
        self._next_order = len(base.keys)
        #: Rows added since the base was built (the caller rebuilds when this grows large).
        self.added = 0

    @property
    def where(self) -> dict[object, tuple[int, int]]:
        """key → (segment, row) of every live row (built on the first write)."""
        if self._where is None:
            keys = self.segments[0].postings.key_list()
            self._where = {k: (0, i) for i, k in enumerate(keys)}
        return self._where

    def row_count(self) -> int:
        """Live rows (FTS5's N)."""
        return sum(s.live() for s in self.segments)

    def doc_frequency(self, term: str) -> int:
        """Live rows containing the term."""
        return sum(len(s.matches(term)[0]) for s in self.segments)

    def apply(self, added: Sequence[tuple[object, ...]], removed: Iterable[object] = ()) -> None:
        """Replay a write: `removed` keys and the keys of `added` rows lose their old row,
        `added` rows (key, column texts...) become a new segment."""
        where = self.where
        for key in [*removed, *(row[0] for row in added)]:
            found = where.pop(key, None)
            if found is not None:
                self.segments[found[0]].mask(found[1])
        if added:
            self.added += len(added)
            self._add_segment(list(added))
        if len(self.segments) > 1 + MAX_SEGMENTS:
            self._merge_small_segments()

    def _add_segment(self, rows: list[tuple[object, ...]]) -> None:
        postings = Postings.build(rows, self.weights)
        if self.tie_by_key:
            order = np.asarray(postings.keys, np.int64)
        else:
            order = np.arange(self._next_order, self._next_order + len(rows))
            self._next_order += len(rows)
        index = len(self.segments)
        self.segments.append(Segment(postings, order, rows=rows))
        for position, key in enumerate(postings.key_list()):
            self.where[key] = (index, position)

    def _merge_small_segments(self) -> None:
        """All segments after the base become one (live rows only, in their order)."""
        small, self.segments = self.segments[1:], self.segments[:1]
        rows = [
            row
            for segment in small
            for position, row in enumerate(segment.rows or ())
            if segment.masked is None or not segment.masked[position]
        ]
        if rows:  # renumbered after every order handed out so far: insertion order holds
            self._add_segment(rows)

    def search(self, terms: Sequence[str], limit: int) -> list[tuple[object, float]]:
        """(key, score) of the best `limit` live rows matching any term, best first."""
        count = self.row_count()
        if not count or limit <= 0:
            return []
        live_length = sum(s.total_length - s.masked_length for s in self.segments)
        average = max(live_length / count, 1e-9)
        scores: dict[int, np.ndarray] = {}
        for term in dict.fromkeys(terms):
            hits = [(i, *s.matches(term)) for i, s in enumerate(self.segments)]
            found = sum(len(rows) for _, rows, _ in hits)
            if not found:
                continue
            idf = max(math.log((count - found + 0.5) / (found + 0.5)), MIN_IDF)
            for i, rows, freq in hits:
                if not len(rows):
                    continue
                postings = self.segments[i].postings
                if i not in scores:
                    scores[i] = np.zeros(len(postings.keys), dtype=np.float64)
                norm = K1 * (1 - B + B * postings.lengths[rows] / average)
                scores[i][rows] += idf * (freq * (K1 + 1)) / (freq + norm)
        return self._best(scores, limit)

    def _best(self, scores: dict[int, np.ndarray], limit: int) -> list[tuple[object, float]]:
        """The top rows of every segment's scores (a matching row scores > 0), ties in FTS5's
        rowid order."""
        parts = [(i, np.flatnonzero(s)) for i, s in scores.items()]
        if not parts:
            return []
        value = np.concatenate([scores[i][rows] for i, rows in parts])
        order = np.concatenate([self.segments[i].order[rows] for i, rows in parts])
        segment_of = np.concatenate([np.full(len(rows), i) for i, rows in parts])
        row_of = np.concatenate([rows for _, rows in parts])
        picked = np.arange(len(value))
        if picked.size > limit:  # keep every row tied with the last place, then cut
            cut = np.partition(-value, limit - 1)[limit - 1]
            picked = picked[-value <= cut]
        ordered = picked[np.lexsort((order[picked], -value[picked]))][:limit]
        postings = [segment.postings for segment in self.segments]
        return [(postings[segment_of[k]].key(row_of[k]), float(value[k])) for k in ordered]
