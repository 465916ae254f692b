"""FTS5's own BM25, answered from memory: the same scores, a hundredth of the time.

SQLite's FTS5 ranks an OR-query by walking every matching row, so a query of common terms
costs 5–15 ms on a 15k-chunk folder and three of them (chunks, the report's lead, files) are
most of a search. This index holds the same table as numpy postings (term → rows and their
column-weighted frequencies) and scores with FTS5's formula (fts5_aux.c, `fts5Bm25Function`):

    idf(t) = max(log((N - n_t + 0.5) / (n_t + 0.5)), 1e-6)
    score  = Σ_t idf(t) · f·(k1 + 1) / (f + k1·(1 − b + b·|D| / avgdl)),   f = Σ_col w_col·tf_col

with k1 = 1.2, b = 0.75, |D| the row's tokens over all columns. It is built from the table's
rows (already tokenized, space-separated) and is only ever used for the table version it was
built from; the lexical index falls back to FTS5 whenever it is missing or stale. `MemoryCopy`
keeps that promise: it decides when a copy is built and drops it at the first change.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from codeask.core.fts import CHUNK_WEIGHTS, FILE_WEIGHTS, FtsTables

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
#: FTS5 queries at one table version before the in-memory copy is built (see `MemoryCopy`).
MEMORY_AFTER_QUERIES = 3


@dataclass(frozen=True)
class Postings:
    """One FTS5 table in memory, as compressed rows: term → a slice of (row, weighted tf)."""

    keys: list[object]
    lengths: np.ndarray
    average: float
    slices: dict[str, tuple[int, int]]
    rows: np.ndarray
    freqs: np.ndarray

    @classmethod
    def build(cls, rows: Iterable[Sequence[object]], weights: Sequence[float]) -> Postings:
        """`rows`: (key, column text, column text, ...); each text is space-separated tokens.

        Vectorised: one pass maps tokens to ids, numpy sums the weighted (term, row) counts
        (15k chunks, 1.5M tokens: ~1 s)."""
        keys: list[object] = []
        vocab: dict[str, int] = {}
        token_ids: list[int] = []
        token_rows: list[int] = []
        token_weights: list[float] = []
        lengths: list[int] = []
        for row in rows:
            position = len(keys)
            keys.append(row[0])
            size = 0
            for text, weight in zip(row[1:], weights, strict=True):
                tokens = str(text or "").split()
                size += len(tokens)
                token_ids.extend([vocab.setdefault(t, len(vocab)) for t in tokens])
                token_rows.extend([position] * len(tokens))
                token_weights.extend([weight] * len(tokens))
            lengths.append(size)
        count = max(len(keys), 1)
        pair = np.asarray(token_ids, dtype=np.int64) * count + np.asarray(token_rows, np.int64)
        unique, inverse = np.unique(pair, return_inverse=True)
        freqs = np.bincount(inverse, weights=np.asarray(token_weights, dtype=np.float64))
        term_of, row_of = np.divmod(unique, count)
        starts = np.searchsorted(term_of, np.arange(len(vocab) + 1)).tolist()
        slices = {token: (starts[tid], starts[tid + 1]) for token, tid in vocab.items()}
        average = float(sum(lengths)) / count
        return cls(
            keys, np.asarray(lengths, np.float64), average, slices, row_of.astype(np.int32), freqs
        )

    def doc_frequency(self, term: str) -> int:
        """Rows containing the term (FTS5's fts5vocab `doc`)."""
        start, end = self.slices.get(term, (0, 0))
        return end - start

    def search(self, terms: Sequence[str], limit: int) -> list[tuple[object, float]]:
        """(key, score) of the best `limit` rows matching any term, best first."""
        count = len(self.keys)
        if not count or limit <= 0:
            return []
        scores = np.zeros(count, dtype=np.float64)  # a matching row scores > 0 (idf ≥ MIN_IDF)
        norm = K1 * (1 - B + B * self.lengths / max(self.average, 1e-9))
        for term in dict.fromkeys(terms):
            start, end = self.slices.get(term, (0, 0))
            if start == end:
                continue
            rows, freq = self.rows[start:end], self.freqs[start:end]
            idf = max(math.log((count - len(rows) + 0.5) / (len(rows) + 0.5)), MIN_IDF)
            scores[rows] += idf * (freq * (K1 + 1)) / (freq + norm[rows])
        matched = np.flatnonzero(scores)
        if matched.size > limit:  # keep every row tied with the last place, then cut
            cut = np.partition(-scores[matched], limit - 1)[limit - 1]
            matched = matched[-scores[matched] <= cut]
        ordered = matched[np.lexsort((matched, -scores[matched]))][:limit]
        return [(self.keys[i], float(scores[i])) for i in ordered]


class MemoryCopy:
    """Both lexical tables as Postings, used only at the table version they were read at.

    After MEMORY_AFTER_QUERIES FTS5 queries at one version a background build starts (a one-shot
    CLI search never pays for it; a server or benchmark does once per change), or `warm_up`
    builds it at once; a write landing during a build discards it.
    """

    def __init__(self, tables: FtsTables) -> None:
        self.tables = tables
        #: (table version, chunk postings, file postings) of the last finished build.
        self.built: tuple[int, Postings, Postings] | None = None
        #: (table version, FTS5 queries answered at it): counts toward a background build.
        self.fts_queries = (-1, 0)
        self.building = False

    def current(self) -> tuple[int, Postings, Postings] | None:
        """The copy if it was built from the tables as they are now, else None."""
        built = self.built
        return built if built is not None and built[0] == self.tables.version else None

    def for_query(self) -> tuple[int, Postings, Postings] | None:
        """The current copy; else None (FTS5 answers), counting toward a background build.
        Caller holds the tables' lock."""
        built = self.current()
        if built is not None:
            return built
        version, queries = self.fts_queries
        queries = queries + 1 if version == self.tables.version else 1
        self.fts_queries = (self.tables.version, queries)
        if queries >= MEMORY_AFTER_QUERIES and not self.building:
            self.building = True
            threading.Thread(target=self.build, name="lexical-memory", daemon=True).start()
        return None

    def warm_up(self) -> None:
        """Build the copy now, in this thread, unless it is current or being built."""
        with self.tables.lock:
            if self.current() is not None or self.building:
                return
            self.building = True
        self.build()

    def build(self) -> None:
        """Read both tables at one version and index them; dropped if a write lands meanwhile
        (the next queries start another build). The caller has set `building`."""
        try:
            version, chunk_rows, file_rows = self.tables.snapshot_rows()
            chunks = Postings.build(chunk_rows, CHUNK_WEIGHTS)
            files = Postings.build(file_rows, FILE_WEIGHTS)
            with self.tables.lock:
                if self.tables.version == version:
                    self.built = (version, chunks, files)
        except (sqlite3.Error, ValueError) as exc:  # closed meanwhile, or a torn read
            log.debug("lexical index %s: no in-memory copy: %s", self.tables.path, exc)
        finally:
            self.building = False
