"""The team cache behind the local one: a machine asks PostgreSQL only for what it lacks.

Reads: the local SQLite cache first; the misses go to the team database in one query and what
it had is copied into the local cache, so the next run asks nobody. Writes: both. The team
database is optional at every moment: unreachable at start, lost mid-run or read-only, the
embedder keeps working on the local cache alone (one warning, no password in it) and the
database is tried again after a backoff (5 s doubling to 5 min). Nothing here can fail an
index run that would have succeeded without the team cache.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

import numpy as np

from codeask.core.embedding.base import VectorCache

log = logging.getLogger("codeask.core.storage.postgres")

FIRST_RETRY_SECONDS = 5.0
MAX_RETRY_SECONDS = 300.0


class LayeredCache:
    """`VectorCache` over a local cache and a team cache opened (and re-opened) on demand."""

    def __init__(
        self,
        local: VectorCache,
        open_team: Callable[[], VectorCache],
        *,
        first_retry: float = FIRST_RETRY_SECONDS,
    ) -> None:
        self.local = local
        self.dim = local.dim
        self._open_team = open_team
        self._team: VectorCache | None = None
        self._lock = threading.Lock()
        self._first_retry = first_retry
        self._retry = first_retry
        self._next_try = 0.0
        #: For status lines: "connected", "not tried yet" or why the team cache is unused.
        self.team_state = "not tried yet"
        self.team_hits = 0

    def _team_cache(self) -> VectorCache | None:
        """The team cache if it can be used now (never raises)."""
        with self._lock:
            if self._team is not None:
                return self._team
            if time.monotonic() < self._next_try:
                return None
            try:
                self._team = self._open_team()
            except Exception as exc:
                self._failed(exc)
                return None
            self._retry = self._first_retry
            self.team_state = "connected"
            log.info("team embedding cache: connected")
            return self._team

    def _failed(self, exc: Exception) -> None:
        """Called under the lock: local only until the next try; say so once per outage."""
        if self.team_state != f"unavailable: {exc}":
            log.warning(
                "team embedding cache unavailable (%s); embedding with the local cache only, "
                "retrying in %.0f s",
                exc,
                self._retry,
            )
        self.team_state = f"unavailable: {exc}"
        self._next_try = time.monotonic() + self._retry
        self._retry = min(MAX_RETRY_SECONDS, self._retry * 2)
        if self._team is not None:
            try:
                self._team.close()
            except Exception:
                log.debug("closing the team cache after a failure", exc_info=True)
            self._team = None

    def get_many(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Local hits, then the team's for the rest (copied into the local cache)."""
        wanted = list(hashes)
        found = self.local.get_many(wanted)
        missing = [h for h in wanted if h not in found]
        team = self._team_cache() if missing else None
        if team is None:
            return found
        try:
            shared = team.get_many(missing)
        except Exception as exc:
            with self._lock:
                self._failed(exc)
            return found
        if shared:
            self.team_hits += len(shared)
            self.local.put_many(shared.items())
            found.update(shared)
        return found

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Local always; the team's when it can take them (a read-only role just reads)."""
        rows = list(items)
        self.local.put_many(rows)
        team = self._team_cache()
        if team is None:
            return
        try:
            team.put_many(rows)
        except Exception as exc:
            with self._lock:
                self._failed(exc)

    def close(self) -> None:
        """Both caches."""
        self.local.close()
        with self._lock:
            if self._team is not None:
                self._team.close()
                self._team = None


def team_cache(local: VectorCache, dsn_env: str, model: str, dim: int) -> LayeredCache:
    """`index.backend = "postgres"`: the team cache at the DSN in `$dsn_env` behind `local`."""

    def open_team() -> VectorCache:
        try:
            from codeask.core.storage.postgres.cache import PgEmbeddingCache
        except ImportError as exc:
            raise RuntimeError(
                f"index.backend = postgres needs psycopg ({exc}): pip install 'codeask[postgres]'"
            ) from None
        return PgEmbeddingCache.from_env(dsn_env, model, dim)

    return LayeredCache(local, open_team)
