"""The lexical table: BM25 over chunks.

- `index`: code-aware tokens, query planning, `LexicalIndex` (the top-k).
- `fts`: the SQLite FTS5 tables; `bm25`: FTS5's BM25 answered from memory.
- `memory`: when the tables are answered from memory; `frozen`: a fixed set's tables.

`__all__` lists the modules other rooms (and the faces) may import (tests/test_architecture.py
checks it); the others are this room's own.
"""

__all__ = [
    "index",
]
