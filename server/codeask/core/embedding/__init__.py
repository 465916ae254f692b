"""Text → vectors: the second stage, for the dense tiers.

- `embed`: the packaged MiniLM, any fastembed model, and the content-hash cache
  (`load_embedder`, `CachedEmbedder`); `base`: its error and Protocols, the file hash.
- `static`: the static tier (potion-base-8M, vendored).
- `remote`: the model tier computed by a server the user chose.
- `query_encoder`: fast MiniLM query vectors (the int8 copy `int8_quantize` derives).
- `on_demand`: the model tier of a folder too big for a full pass (its policy, its cache).
- `blend`: a pasted report's query vector leans toward its lead line.

`__all__` lists the modules other rooms (and the faces) may import (tests/test_architecture.py
checks it); the others are this room's own.
"""

__all__ = [
    "base",
    "embed",
    "on_demand",
    "static",
]
