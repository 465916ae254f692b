"""A question → ranked chunks: the stage that reads the index.

- `retrieve`: hybrid retrieval (dense + BM25 + symbol and path evidence, fused).
- `pipeline`: the ranking's named steps in order (collect, fuse, adjust); each step is a module
  of `steps/` (docs/architecture.md, "Ranking").
- `query`: what a question says before any index is asked.
- `name_match`: files and symbols a typed question names; `rerank`: ranking rules.
- `model_on_demand`: the model tier of a folder too big for a full pass (whether a folder is
  one, and its list: the first pass's best candidates ranked by the model).
- `tiers`: which tiers a search may use (`Tiers`, data), which answered and each vector tier's
  count, said one way everywhere.

`__all__` lists the modules other rooms (and the faces) may import (tests/test_architecture.py
checks it); the others are this room's own.
"""

__all__ = [
    "model_on_demand",
    "retrieve",
    "tiers",
]
