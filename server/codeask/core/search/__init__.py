"""A question → ranked chunks: the stage that reads the index.

- `retrieve`: hybrid retrieval (dense + BM25 + symbol and path evidence, fused).
- `query`: what a question says before any index is asked.
- `name_match`: files and symbols a typed question names; `rerank`: ranking rules.
- `model_on_demand`: the model tier's list of a folder too big for a full pass (and whether
  a folder is one).
- `tiers`: which retrievers answered and each vector tier's count, said one way everywhere.

`__all__` lists the modules other rooms (and the faces) may import (tests/test_architecture.py
checks it); the others are this room's own.
"""

__all__ = [
    "model_on_demand",
    "retrieve",
    "tiers",
]
