"""The in-memory BM25 copy's build (issue 29): RSS kept, peak, time, and whether the two ways of
feeding it answer the same.

    .venv/bin/python -m benchmarks.bm25_memory INDEX/lexical.sqlite current|streaming

`current` is core/storage/lexical/bm25.py's `Postings.build` over both tables read whole (what
`storage.lexical.memory.MemoryCopy.build` does). `streaming` feeds the same build from a cursor, so
the rows are never all in memory at once (a further step for that module: it would hold the table's
read transaction for the whole build). The build itself batches rows by count and text and keeps
the vocabulary as one dict of ints plus an array of starts (12813af, from this benchmark's
prototype).
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

from codeask.core.storage.lexical.bm25 import LiveTable, Postings
from codeask.core.storage.lexical.fts import CHUNK_WEIGHTS, FILE_WEIGHTS


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


def build_streaming(cursor: sqlite3.Cursor, weights: Sequence[float], batch: int) -> Postings:
    """`Postings.build` over the rows as a cursor yields them (no list of every row first)."""
    return Postings.build(cursor, weights, batch=batch)


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
