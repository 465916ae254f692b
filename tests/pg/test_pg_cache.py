"""The team-wide embedding cache on a real PostgreSQL: same interface as the local one."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from pgserver import PgServer

from codeask.core.embedding.embed import CachedEmbedder
from codeask.core.storage.postgres.cache import PgEmbeddingCache, PgModelMismatch
from codeask.core.storage.postgres.connect import PgUnavailable, connect

MODEL = "codeask/all-MiniLM-L6-v2-int8"
DIM = 384


def unit_rows(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def keys(n: int, prefix: str = "h") -> list[str]:
    return [f"{prefix}{i:06d}" for i in range(n)]


def count_rows(dsn: str) -> int:
    with connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM codeask_embedding_cache").fetchone()
    assert row is not None
    return int(row[0])


def test_roundtrip_values_match_within_tolerance(pg_dsn: str) -> None:
    cache = PgEmbeddingCache(pg_dsn, MODEL, DIM)
    rows = unit_rows(20)
    cache.put_many(zip(keys(20), rows, strict=True))
    got = cache.get_many(keys(20))
    assert set(got) == set(keys(20))
    for key, row in zip(keys(20), rows, strict=True):
        assert got[key].dtype == np.float32 and got[key].shape == (DIM,)
        assert np.abs(got[key] - row).max() < 1e-3
        cosine = float(got[key] @ row / np.linalg.norm(got[key]))
        assert abs(1 - cosine) < 1e-3
    assert cache.get_many([]) == {}
    assert cache.get_many(["never-stored"]) == {}
    cache.close()


def test_a_large_batch_in_one_call(pg_dsn: str) -> None:
    cache = PgEmbeddingCache(pg_dsn, MODEL, DIM)
    n = 5000
    cache.put_many(zip(keys(n), unit_rows(n), strict=True))
    wanted = [*keys(n)[::2], *keys(100, prefix="missing")]
    got = cache.get_many(wanted)
    assert set(got) == set(keys(n)[::2])
    assert count_rows(pg_dsn) == n
    cache.close()


def test_two_writers_of_the_same_hashes_store_them_once(pg_dsn: str) -> None:
    """Two connections (two editors, or CI and an editor) put overlapping batches at once:
    no error, no deadlock, one row per hash, the first value kept."""
    first = PgEmbeddingCache(pg_dsn, MODEL, DIM)
    second = PgEmbeddingCache(pg_dsn, MODEL, DIM)
    rows = unit_rows(600, seed=1)
    first.put_many(zip(keys(300), rows[:300], strict=True))
    second.put_many(zip(keys(300), unit_rows(300, seed=2), strict=True))  # same hashes again
    errors: list[BaseException] = []

    def put(cache: PgEmbeddingCache, order: list[int]) -> None:
        try:
            for _ in range(3):
                cache.put_many((keys(600)[i], rows[i]) for i in order)
        except BaseException as exc:
            errors.append(exc)

    forward = list(range(200, 600))
    backward = forward[::-1]  # opposite orders: sorted on the way in, so no deadlock
    threads = [
        threading.Thread(target=put, args=(first, forward)),
        threading.Thread(target=put, args=(second, backward)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert count_rows(pg_dsn) == 600
    got = second.get_many(keys(300))
    assert all(np.abs(got[k] - rows[i]).max() < 1e-3 for i, k in enumerate(keys(300)))
    first.close()
    second.close()


def test_a_model_with_another_dimension_is_refused(pg_dsn: str) -> None:
    PgEmbeddingCache(pg_dsn, MODEL, DIM).close()
    with pytest.raises(PgModelMismatch) as caught:
        PgEmbeddingCache(pg_dsn, MODEL, 256)
    message = str(caught.value)
    assert f"model '{MODEL}' with dimension {DIM}" in message
    assert "256-dimensional" in message
    other = PgEmbeddingCache(pg_dsn, "minishlab/potion-base-8M", 256)  # another model: fine
    other.put_many([("h1", unit_rows(1, 256)[0])])
    assert set(other.get_many(["h1"])) == {"h1"}
    assert PgEmbeddingCache(pg_dsn, MODEL, DIM).get_many(["h1"]) == {}  # kept apart
    with pytest.raises(ValueError, match="shape"):
        other.put_many([("h2", unit_rows(1, DIM)[0])])


def test_a_read_only_role_reads_and_its_puts_turn_the_cache_read_only(
    pg_dsn: str, pg_db: str, make_role, caplog: pytest.LogCaptureFixture
) -> None:
    writer = PgEmbeddingCache(pg_dsn, MODEL, DIM)  # CI: migrates and fills the cache
    rows = unit_rows(10)
    writer.put_many(zip(keys(10), rows, strict=True))
    editor_dsn = make_role(
        pg_db,
        [
            "GRANT USAGE ON SCHEMA public TO {role}",
            "GRANT SELECT ON codeask_schema, codeask_embedding_model, "
            "codeask_embedding_cache TO {role}",
        ],
    )
    editor = PgEmbeddingCache(editor_dsn, MODEL, DIM)
    assert not editor.read_only
    assert set(editor.get_many(keys(10))) == set(keys(10))
    with caplog.at_level(logging.WARNING, logger="codeask.core.storage.postgres.cache"):
        editor.put_many([("new1", rows[0])])
        editor.put_many([("new2", rows[1])])
    assert editor.read_only
    warnings = [r for r in caplog.records if "read-only" in r.getMessage()]
    assert len(warnings) == 1, "said once, not per batch"
    assert "writer role" in warnings[0].getMessage()
    assert editor_dsn.split(":")[2].split("@")[0] not in caplog.text  # no password logged
    assert editor.get_many(["new1", "h000001"]).keys() == {"h000001"}
    assert count_rows(pg_dsn) == 10
    # A model nobody registered yet: the read-only role cannot register it, and says so once.
    fresh = PgEmbeddingCache(editor_dsn, "some/other-model", 64)
    assert fresh.read_only and fresh.get_many(["x"]) == {}
    writer.close()
    editor.close()
    fresh.close()


def test_a_killed_connection_gives_a_clear_error_then_reconnects(
    pg_server: PgServer, pg_dsn: str, pg_db: str
) -> None:
    cache = PgEmbeddingCache(pg_dsn, MODEL, DIM)
    cache.put_many([("a", unit_rows(1)[0])])
    with pg_server.admin(pg_db) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND application_name = 'codeask' AND pid <> pg_backend_pid()",
            (pg_db,),
        ).fetchall()
    assert killed == [(True,)]
    with pytest.raises(PgUnavailable) as caught:
        cache.get_many(["a"])
    message = str(caught.value)
    assert "lost the connection to the team embedding cache" in message
    assert "next call reconnects" in message
    assert pg_server.dsn(pg_db).split(":")[2].split("@")[0] not in message
    assert set(cache.get_many(["a"])) == {"a"}  # reconnected
    with pg_server.admin(pg_db) as admin:  # and the same for a write
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND application_name = 'codeask' AND pid <> pg_backend_pid()",
            (pg_db,),
        )
    with pytest.raises(PgUnavailable, match="while storing vectors"):
        cache.put_many([("b", unit_rows(1)[0])])
    cache.put_many([("b", unit_rows(1)[0])])
    assert set(cache.get_many(["a", "b"])) == {"a", "b"}
    cache.close()


class CountingEmbedder:
    """A stand-in model: deterministic unit rows, counting what it was asked to embed."""

    name = MODEL
    dim = DIM

    def __init__(self) -> None:
        self.embedded = 0

    def embed(self, texts: Sequence[str], lanes: int = 1) -> np.ndarray:
        self.embedded += len(texts)
        return np.stack([unit_rows(1, seed=len(t))[0] for t in texts])


def test_what_one_embedded_nobody_embeds_again(pg_dsn: str) -> None:
    """CI embeds main once; an editor elsewhere gets every vector from the team cache."""
    texts = [f"def f{i}():\n    return {'x' * i}" for i in range(50)]
    hashes = [f"c{i}" for i in range(50)]
    ci_model = CountingEmbedder()
    ci = CachedEmbedder(ci_model, PgEmbeddingCache(pg_dsn, MODEL, DIM))
    first = ci.embed_keyed(hashes, texts)
    editor_model = CountingEmbedder()
    editor = CachedEmbedder(editor_model, PgEmbeddingCache(pg_dsn, MODEL, DIM))
    second = editor.embed_keyed(hashes, texts)
    assert ci_model.embedded == 50 and editor_model.embedded == 0
    assert editor.reused == 50
    assert np.abs(first - second).max() < 1e-3
