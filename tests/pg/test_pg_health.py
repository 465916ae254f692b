"""`index.backend = "postgres"`: the health report shows the team database, and only reads it.

Real PostgreSQL (the session's embedded server): a migrated database with vectors, a read-only
editor role, a database codeask never touched (the probe must not migrate it), a wrong password
(never shown) and an unset DSN variable; then `codeask health --json` end to end.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pgserver import PgServer

from codeask.core.storage.postgres.cache import PgEmbeddingCache
from codeask.core.storage.postgres.health import team_health
from codeask.core.storage.postgres.schema import LATEST
from support import codeask, in_process_env

DSN_ENV = "CODEASK_TEST_HEALTH_DSN"
MODEL = "test-model"


def published(dsn: str) -> None:
    """A writer migrated the database and stored one 8-dim vector of MODEL."""
    cache = PgEmbeddingCache(dsn, MODEL, 8)
    cache.put_many([("h1", np.ones(8, dtype=np.float32) / np.sqrt(8))])
    cache.close()


def test_a_writer_sees_schema_model_and_write_rights(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    published(pg_dsn)
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    team = team_health(DSN_ENV, MODEL)
    assert (team.reachable, team.error) == (True, "")
    assert (team.schema_version, team.schema_known, team.model_dim) == (LATEST, LATEST, 8)
    assert team.writable and team.where.startswith("postgres@127.0.0.1:")
    assert team_health(DSN_ENV, "another-model").model_dim == 0


def test_a_read_only_editor_role_is_reported_read_only(
    pg_dsn: str, pg_db: str, make_role: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    published(pg_dsn)
    editor = make_role(  # type: ignore[operator]
        pg_db,
        [
            "GRANT USAGE ON SCHEMA public TO {role}",
            "GRANT SELECT ON codeask_schema, codeask_embedding_model, "
            "codeask_embedding_cache TO {role}",
        ],
    )
    monkeypatch.setenv(DSN_ENV, editor)
    team = team_health(DSN_ENV, MODEL)
    assert team.reachable and team.error == "" and team.model_dim == 8
    assert not team.writable


def test_the_probe_never_migrates_an_untouched_database(
    pg_server: PgServer, pg_dsn: str, pg_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    team = team_health(DSN_ENV, MODEL)
    assert team.reachable and team.schema_version == 0 and team.model_dim == 0
    with pg_server.admin(pg_db) as admin:
        found = admin.execute("SELECT to_regclass('codeask_schema') IS NULL").fetchone()
    assert found == (True,), "a health check created codeask's tables"


def test_wrong_password_and_missing_variable_are_clear_and_never_show_the_password(
    pg_server: PgServer, pg_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DSN_ENV, pg_server.dsn(pg_db, password="Wr0ng-Secret-xyz"))
    team = team_health(DSN_ENV, MODEL)
    assert not team.reachable and "password authentication failed" in team.error
    assert "Wr0ng-Secret-xyz" not in repr(team)
    monkeypatch.delenv(DSN_ENV)
    team = team_health(DSN_ENV, MODEL)
    assert not team.reachable and DSN_ENV in team.error and team.where == ""


def test_codeask_health_json_reports_the_team_database(pg_dsn: str, tmp_path: Path) -> None:
    published(pg_dsn)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "a.py").write_text("def f():\n    return 1\n")
    env = {
        **in_process_env(),
        DSN_ENV: pg_dsn,
        "CODEASK_INDEX__BACKEND": "postgres",
        "CODEASK_INDEX__DSN_ENV": DSN_ENV,
        "CODEASK_EMBED__CACHE_DIR": str(tmp_path / "cache"),
        "CODEASK_LLM__BASE_URL": "http://127.0.0.1:9",
    }
    run = codeask("health", "--json", "--root", str(tmp_path / "work"), env=env, timeout=120)
    report = json.loads(run.stdout)
    team = report["team"]
    assert team["reachable"] and team["dsn_env"] == DSN_ENV and team["writable"]
    assert team["schema_version"] == LATEST
    assert pg_dsn.split("@")[0].split(":")[-1] not in run.stdout + run.stderr  # the password
