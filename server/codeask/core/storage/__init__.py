"""One folder's index: what it holds and how it is read and written.

- `protocol`: the seam (`IndexReader`, `IndexWriter`): what the rest of codeask may ask.
- `factory`: the one place that turns `index.backend` into a storage and an embedding cache.
- `local`: `LocalStorage`, the default, over `store` (catalog, vector tiers, snapshots) and
  the lexical table (`lexical/`); `symbol_table`: exact-name lookups.
- `team`: `TeamStorage`, the team's published revision (`postgres/`: the team index on
  PostgreSQL) under a local index of the files that differ (`overlay`, `overlay_shadow`).
- `writer_lock`: one writer per index folder (an OS file lock).
- `quantized_rows`: the int8 rows a quantized tier stores, which the chunk workers make too.

`__all__` lists the modules other rooms (and the faces) may import (tests/test_architecture.py
checks it); the others are this room's own.
"""

__all__ = [
    "factory",
    "lexical",
    "postgres",
    "protocol",
    "quantized_rows",
    "store",
    "symbol_table",
    "team",
    "writer_lock",
]
