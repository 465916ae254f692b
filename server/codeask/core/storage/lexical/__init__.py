"""The lexical table: BM25 over chunks.

- `index`: code-aware tokens, query planning, `LexicalIndex` (the top-k).
- `bm25`: FTS5's BM25 over postings (segments, writes since, segments folded into one).
- `segment_file`: one segment in a memory-mapped file; `disk`: the tables' files and stamp.
- `frozen`: a fixed set's tables (a published revision).

`__all__` lists the modules other rooms (and the faces) may import (tests/test_architecture.py
checks it); the others are this room's own.
"""

__all__ = [
    "index",
]
