"""The model tier on demand: for a folder too big for a full pass, what it embeds and keeps.

A full MiniLM pass over the Linux kernel (1.28M chunks) takes ~21 hours on 2 cores. Above
`embed.model_full_pass_chunks` a folder's model tier is filled on demand instead: a pasted
report's first-pass candidates are embedded when it is asked, and the files the user opens or
changes by the writer as they change (`full_pass` is the one policy both sides read).

The vectors embedded on demand are kept in the folder's index folder (`ON_DEMAND_FILE`, a
content-hash → vector SQLite file: WAL, safe across processes and kills, a damaged file set
aside), bounded to `MAX_ROWS` (the oldest go first), behind the user's embedding cache (what
any index embedded before, and the vectors embedded here, are never computed twice). It is
not part of the index's snapshot: losing it loses nothing but time.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from codeask.config import Settings
from codeask.core.embedding.chunk_model import MAX_LANES
from codeask.core.embedding.embed import CachedEmbedder, EmbeddingCache

log = logging.getLogger(__name__)

ON_DEMAND_FILE = "model_on_demand.sqlite"
#: 50,000 vectors of 384 floats: ~80 MB at most, ~1,000 cold reports at 50 candidates.
MAX_ROWS = 50_000


def full_pass(chunks: int, settings: Settings) -> bool:
    """Whether a folder of `chunks` chunks fills its model tier in one backlog pass (else on
    demand: `embed.model_full_pass_chunks`)."""
    return chunks <= settings.embed.model_full_pass_chunks


class OnDemandCache(EmbeddingCache):
    """`EmbeddingCache` in the index folder, bounded to `max_rows` (first in, first out)."""

    def __init__(self, path: Path, dim: int, max_rows: int = MAX_ROWS) -> None:
        super().__init__(path, dim)
        self.max_rows = max_rows

    def count(self) -> int:
        """Vectors held."""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM vec").fetchone()[0])

    def trim(self) -> None:
        """Drop the oldest rows past `max_rows` (SQLite's rowids grow with each insert)."""
        with self._lock:
            extra = self._db.execute("SELECT COUNT(*) FROM vec").fetchone()[0] - self.max_rows
            if extra > 0:
                self._db.execute(
                    "DELETE FROM vec WHERE rowid IN (SELECT rowid FROM vec ORDER BY rowid LIMIT ?)",
                    (extra,),
                )
                self._db.commit()


_open: dict[Path, OnDemandCache] = {}
_open_lock = threading.Lock()


def cache_for(index_dir: Path, dim: int) -> OnDemandCache | None:
    """The folder's on-demand cache, opened once per process; None (the reason logged) when
    the index folder cannot hold it (read-only): the user's cache still keeps the vectors."""
    path = index_dir / ON_DEMAND_FILE
    with _open_lock:
        cache = _open.get(path)
        if cache is None or cache.dim != dim:
            try:
                cache = _open[path] = OnDemandCache(path, dim)
            except (OSError, sqlite3.Error) as exc:
                log.warning("model tier on demand: cannot keep vectors in %s (%s)", path, exc)
                return None
        return cache


def cached_count(index_dir: Path) -> int:
    """Vectors the folder's on-demand cache holds, read without creating it (0 when none)."""
    path = index_dir / ON_DEMAND_FILE
    if not path.is_file():
        return 0
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return int(db.execute("SELECT COUNT(*) FROM vec").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error as exc:
        log.warning("model tier on demand: cannot read %s (%s)", path, exc)
        return 0


def vectors(
    embedder: CachedEmbedder, cache: OnDemandCache | None, keys: Sequence[str], texts: Sequence[str]
) -> np.ndarray:
    """One row per text: from the folder's cache, else the user's cache, else embedded now
    (and then kept in both), on up to `MAX_LANES` cores: a question waits for them."""
    known = cache.get_many(keys) if cache is not None else {}
    missing = [i for i, key in enumerate(keys) if key not in known]
    if missing:
        wanted = [texts[i] for i in missing]  # a request waits: as many cores as a run may take
        rows = embedder.embed_keyed([keys[i] for i in missing], wanted, lanes=MAX_LANES)
        fresh = {keys[i]: row for i, row in zip(missing, rows, strict=True)}
        if cache is not None:
            cache.put_many(fresh.items())
            cache.trim()
        known.update(fresh)
    if not keys:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.stack([known[key] for key in keys])
