"""`index.backend = "postgres"`: the team cache behind the local one, with the real model.

What one machine embedded, a second machine (its own local cache) gets from PostgreSQL and
embeds nothing; an unreachable or lost database never stops embedding, and the team cache is
used again once it is back.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import pytest
from pgserver import PgServer, free_port

from codeask.config import Settings
from codeask.core.embedding.embed import EmbeddingCache
from codeask.core.storage.factory import load_embedder
from codeask.core.storage.postgres.cache import PgEmbeddingCache
from codeask.core.storage.postgres.layered import LayeredCache

DSN_ENV = "CODEASK_TEST_TEAM_DSN"
DIM = 8


def machine(cache: Path) -> Settings:
    """One developer's settings: their own local caches, the team database behind them."""
    settings = Settings()
    settings.embed.cache_dir = str(cache)
    settings.index.backend = "postgres"
    settings.index.dsn_env = DSN_ENV
    return settings


def rows(count: int, seed: int = 0) -> list[tuple[str, np.ndarray]]:
    found = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    found /= np.linalg.norm(found, axis=1, keepdims=True)
    return [(f"h{seed}-{i}", found[i]) for i in range(count)]


def test_a_second_machine_embeds_nothing_the_first_embedded(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    texts = [f"def handler_{i}(request):\n    return route(request, {i})" for i in range(24)]
    keys = [f"chunk-{i}" for i in range(24)]
    first = load_embedder(machine(tmp_path / "laptop-a"))
    vectors_a = first.embed_keyed(keys, texts)
    assert first.computed == 24
    second = load_embedder(machine(tmp_path / "laptop-b"))
    assert second is not first
    vectors_b = second.embed_keyed(keys, texts)
    assert second.computed == 0 and second.reused == 24
    assert np.abs(vectors_a - vectors_b).max() < 1e-3
    assert isinstance(second.cache, LayeredCache)
    assert second.cache.team_state == "connected" and second.cache.team_hits == 24
    # the team's rows were copied into laptop B's own cache: the next run asks nobody
    assert len(second.cache.local.get_many(keys)) == 24


def test_an_unreachable_database_never_stops_embedding(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dsn = f"postgresql://ci:s3cret-pw@127.0.0.1:{free_port()}/team?connect_timeout=2"
    local = EmbeddingCache(tmp_path / "local.sqlite", DIM)
    attempts = 0

    def open_team() -> PgEmbeddingCache:
        nonlocal attempts
        attempts += 1
        return PgEmbeddingCache(dsn, "m", DIM, timeout=2)

    cache = LayeredCache(local, open_team, first_retry=60)
    caplog.set_level(logging.WARNING, logger="codeask")
    started = time.monotonic()
    cache.put_many(rows(5))
    assert len(cache.get_many([key for key, _ in rows(5)] + ["unknown"])) == 5
    cache.put_many(rows(3, seed=1))
    assert time.monotonic() - started < 10
    assert attempts == 1  # inside the backoff nobody dials again
    assert cache.team_state.startswith("unavailable")
    warnings = [r.getMessage() for r in caplog.records if "team embedding cache" in r.getMessage()]
    assert len(warnings) == 1 and "local cache only" in warnings[0]
    assert "s3cret-pw" not in caplog.text and "s3cret-pw" not in cache.team_state
    cache.close()


def test_the_team_cache_is_used_again_after_an_outage(
    pg_server: PgServer,
    pg_dsn: str,
    pg_db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DSN_ENV, raising=False)
    local = EmbeddingCache(tmp_path / "local.sqlite", DIM)
    cache = LayeredCache(
        local, lambda: PgEmbeddingCache.from_env(DSN_ENV, "m", DIM), first_retry=0.05
    )
    cache.put_many(rows(4))  # no DSN yet: local only, with a reason
    assert cache.team_state.startswith("unavailable") and DSN_ENV in cache.team_state
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    time.sleep(0.1)
    cache.put_many(rows(4, seed=2))
    assert cache.team_state == "connected"
    # the connection dies mid-run (a database restart, a network cut): writes go on locally
    with pg_server.admin(pg_db) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    cache.put_many(rows(4, seed=3))
    assert cache.team_state.startswith("unavailable")
    assert len(local.get_many([key for key, _ in rows(4, seed=3)])) == 4
    time.sleep(0.3)
    cache.put_many(rows(4, seed=4))
    assert cache.team_state == "connected"
    team = PgEmbeddingCache(pg_dsn, "m", DIM)
    assert len(team.get_many([key for key, _ in rows(4, seed=2) + rows(4, seed=4)])) == 8
    team.close()
    cache.close()
