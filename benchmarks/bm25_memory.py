"""The in-memory BM25 copy's build, as it is and as proposed (issue 29): RSS kept, peak, time, and
whether both answer the same.

    .venv/bin/python -m benchmarks.bm25_memory INDEX/lexical.sqlite current|streaming

`current` is core/bm25.py's `Postings.build` over both tables read whole (what
`lexical_memory.MemoryCopy.build` does). `streaming` is a proposal for that module (the lead's:
not changed here): rows read from a cursor in small batches (a batch of whole files is most of a
corpus), each batch's (term, row) pairs summed at once (a row lives in one batch, so no pair
spans two; the same additions in the same order, so the same floats), one sort by term, and the
vocabulary kept as one dict of ints plus a numpy array of starts, made after every temporary is
gone (survivors made among millions of short-lived token strings pinned whole allocator arenas).
Each mode writes its answers to 10 queries to /tmp/bm25_<mode>.pkl; compare the two files.
Run each mode in its own process. Not a test.
"""

import ctypes
import gc
import pickle
import sqlite3
import sys
import time
from collections.abc import Sequence
from itertools import chain

import numpy as np

from codeask.core.bm25 import LiveTable, Postings
from codeask.core.fts import CHUNK_WEIGHTS, FILE_WEIGHTS


def status() -> dict[str, float]:
    """VmRSS and VmHWM of this process, in MB."""
    out: dict[str, float] = {}
    with open("/proc/self/status") as lines:
        for line in lines:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    return out


def settle() -> dict[str, float]:
    """Status after gc and glibc's malloc_trim: what is kept, not what was freed."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return status()


class TermSlices:
    """term -> (start, end) as `Postings.slices` answers it, one dict of ints + one array."""

    def __init__(self, ids: dict[str, int], starts: np.ndarray) -> None:
        self.ids, self.starts = ids, starts

    def get(self, term: str, default: tuple[int, int] = (0, 0)) -> tuple[int, int]:
        tid = self.ids.get(term)
        return default if tid is None else (int(self.starts[tid]), int(self.starts[tid + 1]))

    def __len__(self) -> int:
        return len(self.ids)


def build_streaming(cursor: sqlite3.Cursor, weights: Sequence[float], batch: int) -> Postings:
    """Rows in batches; each batch's (term, row) pairs summed at once (a row lives in one batch,
    so no pair spans two), then one sort by term: memory follows postings, not tokens."""
    keys: list[object] = []
    vocab: dict[str, int] = {}
    lengths: list[np.ndarray] = []
    term_parts: list[np.ndarray] = []
    row_parts: list[np.ndarray] = []
    freq_parts: list[np.ndarray] = []
    weight_of = np.asarray(weights, dtype=np.float64)
    first = 0
    while rows := cursor.fetchmany(batch):
        keys.extend(r[0] for r in rows)
        local = np.arange(len(rows), dtype=np.int64)
        total = np.zeros(len(rows), dtype=np.int64)
        ids: list[np.ndarray] = []
        at: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        for column in range(1, len(weights) + 1):
            split = [str(r[column] or "").split() for r in rows]
            counts = np.fromiter(map(len, split), dtype=np.int64, count=len(rows))
            flat = list(chain.from_iterable(split))
            for token in dict.fromkeys(flat):
                vocab.setdefault(token, len(vocab))
            ids.append(np.fromiter(map(vocab.__getitem__, flat), np.int64, len(flat)))
            at.append(np.repeat(local, counts))
            cols.append(np.full(len(flat), column - 1, dtype=np.int8))
            total += counts
        pair = np.concatenate(ids) * len(rows) + np.concatenate(at)
        unique, inverse = np.unique(pair, return_inverse=True)
        freq_parts.append(np.bincount(inverse, weights=weight_of[np.concatenate(cols)]))
        term, row = np.divmod(unique, len(rows))
        term_parts.append(term.astype(np.int32))
        row_parts.append((row + first).astype(np.int32))
        lengths.append(total)
        first += len(rows)
        del rows, split, flat, ids, at, cols, pair, unique, inverse
    count = max(len(keys), 1)
    term_of = np.concatenate(term_parts) if term_parts else np.zeros(0, np.int32)
    del term_parts
    row_of = np.concatenate(row_parts) if row_parts else np.zeros(0, np.int32)
    del row_parts
    freqs = np.concatenate(freq_parts) if freq_parts else np.zeros(0)
    del freq_parts
    order = np.lexsort((row_of, term_of))  # as np.unique of term * count + row sorted them
    term_of, row_of, freqs = term_of[order], row_of[order], freqs[order]
    del order
    starts = np.searchsorted(term_of, np.arange(len(vocab) + 1))
    del term_of
    terms = list(vocab)
    del vocab
    gc.collect()
    fresh = {t.encode().decode(): i for i, t in enumerate(terms)}
    del terms
    widths = np.concatenate(lengths).astype(np.float64) if lengths else np.zeros(0)
    postings = Postings(keys, widths, float(widths.sum()) / count, {}, row_of, freqs)
    object.__setattr__(postings, "slices", TermSlices(fresh, starts))  # a duck: .get only
    return postings


QUERIES = [
    "resolve cross reference python object",
    "html output pages write",
    "autodoc documenter class",
    "napoleon google docstring sections",
    "latex escape special characters",
    "intersphinx inventory cache",
    "conf py configuration values",
    "linkcheck anchor redirect",
    "gettext catalog translate",
    "toctree sidebar entries",
]


def main(db_path: str, mode: str) -> None:
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    chunk_sql = "SELECT rowid, body, symbol, path FROM fts"
    file_sql = "SELECT file, body, path FROM files_fts"
    base = settle()
    started = time.perf_counter()
    if mode == "current":
        chunk_rows = db.execute(chunk_sql).fetchall()
        file_rows = db.execute(file_sql).fetchall()
        chunk_postings = Postings.build(chunk_rows, CHUNK_WEIGHTS)
        file_postings = Postings.build(file_rows, FILE_WEIGHTS)
        del chunk_rows, file_rows
    else:
        chunk_postings = build_streaming(db.execute(chunk_sql), CHUNK_WEIGHTS, batch=256)
        file_postings = build_streaming(db.execute(file_sql), FILE_WEIGHTS, batch=64)
    chunks = LiveTable(chunk_postings, CHUNK_WEIGHTS, tie_by_key=True)
    files = LiveTable(file_postings, FILE_WEIGHTS)
    seconds = time.perf_counter() - started
    after = settle()
    results = [(chunks.search(q.split(), 200), files.search(q.split(), 50)) for q in QUERIES]
    with open(f"/tmp/bm25_{mode}.pkl", "wb") as out:
        pickle.dump(results, out)
    kept = after["VmRSS"] - base["VmRSS"]
    peak = after["VmHWM"] - base["VmRSS"]
    print(f"{mode}: build {seconds:.1f} s, RSS +{kept:.1f} MB kept, peak +{peak:.1f} MB")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
