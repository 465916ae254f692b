"""The versioned schema: migrate on start, idempotent, race-free, newer versions refused."""

from __future__ import annotations

import pytest
from pgserver import PgServer, at_once

from codeask.core.storage.postgres.connect import PgPermissionDenied, connect
from codeask.core.storage.postgres.schema import LATEST, SchemaTooNew, current_version, migrate


def test_migrate_creates_the_schema_and_is_idempotent(pg_dsn: str) -> None:
    with connect(pg_dsn) as conn:
        assert current_version(conn) == 0
        assert migrate(conn) == LATEST
        assert migrate(conn) == LATEST
        assert conn.execute("SELECT count(*) FROM codeask_schema").fetchone() == (1,)
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'codeask_%'"
            )
        }
    assert tables == {
        "codeask_schema",
        "codeask_embedding_cache",
        "codeask_embedding_model",
        "codeask_repository",
        "codeask_revision",
        "codeask_file",
        "codeask_chunk",
    }


def test_migrate_creates_the_vector_extension_when_allowed(
    pg_server: PgServer, pg_dsn: str
) -> None:
    with pg_server.admin(pg_dsn.rsplit("/", 1)[1]) as admin:
        admin.execute("DROP EXTENSION vector")
    with connect(pg_dsn) as conn:  # the superuser may create it
        assert migrate(conn) == LATEST
        found = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        assert found.fetchone() == ("0.8.6",)


def test_concurrent_migrations_apply_once(pg_server: PgServer, pg_dsn: str) -> None:
    """Several processes starting at once: one migrates (creating the extension too), the others
    wait and find it done."""
    with pg_server.admin(pg_dsn.rsplit("/", 1)[1]) as admin:
        admin.execute("DROP EXTENSION vector")
    results = at_once(pg_dsn, 4, migrate)
    assert results == [LATEST] * 4
    with connect(pg_dsn) as conn:
        assert conn.execute("SELECT version FROM codeask_schema").fetchall() == [(LATEST,)]


def test_a_schema_from_a_newer_codeask_is_refused_with_both_versions(pg_dsn: str) -> None:
    with connect(pg_dsn) as conn:
        migrate(conn)
        conn.execute("UPDATE codeask_schema SET version = %s", (LATEST + 3,))
        with pytest.raises(SchemaTooNew) as caught:
            migrate(conn)
        assert conn.execute("SELECT version FROM codeask_schema").fetchone() == (LATEST + 3,)
    message = str(caught.value)
    assert f"schema version {LATEST + 3}" in message
    assert f"versions up to {LATEST}" in message
    assert "Upgrade codeask" in message


def test_a_read_only_role_cannot_migrate_and_is_told_to_use_the_writer(
    pg_db: str, make_role
) -> None:
    dsn = make_role(pg_db, ["GRANT USAGE ON SCHEMA public TO {role}"])
    with connect(dsn) as conn, pytest.raises(PgPermissionDenied) as caught:
        migrate(conn)
    assert f"needs schema version {LATEST} (it has 0)" in str(caught.value)
    assert "writer role" in str(caught.value)


def test_a_role_that_may_not_read_the_schema_is_told_what_to_grant(
    pg_dsn: str, pg_db: str, make_role
) -> None:
    with connect(pg_dsn) as conn:
        migrate(conn)
    dsn = make_role(pg_db, ["GRANT USAGE ON SCHEMA public TO {role}"])
    with connect(dsn) as conn, pytest.raises(PgPermissionDenied, match="grant it SELECT"):
        migrate(conn)
