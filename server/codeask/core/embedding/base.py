"""What every embedding module shares and none of them owns: the error a model that cannot be
used raises, the two Protocols (a model, a vector cache) and the file hash that checks model
files before they load.

Its own module so that `embed` (the loader), `embedding.remote` (a server as the model),
`query_encoder` (the query path), `embedding.static` and the team cache (`storage/postgres/layered`)
can all use them without importing each other: before, `embedding.remote`, `query_encoder` and
`storage/postgres/layered` imported `embed` while `embed` imported them, a four-module circle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np


class EmbedError(Exception):
    """The embedding model cannot be used; the message says why and what to do."""


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 rows."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str], lanes: int = 1) -> np.ndarray:
        """One row per text, in order. `lanes`: how many cores a caller who waits for the rows
        (a request) lets one call take at most; a model run elsewhere (a server) ignores it."""
        ...


class VectorCache(Protocol):
    """What `embed.CachedEmbedder` needs of a cache: the local `embed.EmbeddingCache` (SQLite)
    or the team's `codeask.core.storage.postgres.cache.PgEmbeddingCache` (PostgreSQL)."""

    dim: int

    def get_many(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors among `hashes`."""
        ...

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors."""
        ...

    def close(self) -> None:
        """Release the file or connection."""
        ...


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks (model files are checked at every load)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
