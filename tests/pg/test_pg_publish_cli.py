"""`codeask index --backend postgres`: CI's command publishes HEAD's index to the team database.

A real git repository made here, the real CLI in a subprocess (real model, real embedded
PostgreSQL): the revision appears with every chunk, a second run writes nothing, a wrong password
is a clear error without the password, and --lexical-only is refused (nothing to publish).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pygit2
from pgserver import PgServer

DSN_ENV = "CODEASK_TEST_PUBLISH_DSN"


def repository(root: Path) -> str:
    """Two Python files committed; HEAD's sha."""
    root.mkdir()
    (root / "shop.py").write_text(
        'def parse_http_request(raw):\n    """Split the request line."""\n    return raw.split()\n'
    )
    (root / "cart.py").write_text("class Cart:\n    def total(self):\n        return 0\n")
    repo = pygit2.init_repository(str(root))
    repo.index.add_all()
    repo.index.write()
    who = pygit2.Signature("Dev", "dev@example.com")
    tree = repo.index.write_tree()
    return str(repo.create_commit("HEAD", who, who, "first", tree, []))


def index(root: Path, dsn: str, cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEASK_")}
    env.update(
        {
            DSN_ENV: dsn,
            "CODEASK_INDEX__DSN_ENV": DSN_ENV,
            "CODEASK_EMBED__CACHE_DIR": str(cache),
            "HF_HUB_OFFLINE": "1",
        }
    )
    return subprocess.run(
        [sys.executable, "-m", "codeask", "index", str(root), "--repo-name", "demo", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_index_backend_postgres_publishes_head_once(
    pg_server: PgServer, pg_dsn: str, pg_db: str, tmp_path: Path
) -> None:
    sha = repository(tmp_path / "repo")
    first = index(tmp_path / "repo", pg_dsn, tmp_path / "cache", "--backend", "postgres")
    assert first.returncode == 0, first.stderr
    assert "published revision" in first.stderr and "rows/s" in first.stderr
    with pg_server.admin(pg_db) as db:
        revisions = db.execute(
            "SELECT r.sha, r.complete, r.chunk_count FROM codeask_revision r "
            "JOIN codeask_repository p ON p.id = r.repository_id WHERE p.name = 'demo'"
        ).fetchall()
        chunks = db.execute("SELECT count(*) FROM codeask_chunk").fetchone()
        # the published vectors are in the team cache too (the local cache may have had them)
        missing = db.execute(
            "SELECT count(DISTINCT c.content_hash) FROM codeask_chunk c LEFT JOIN "
            "codeask_embedding_cache e ON e.content_hash = c.content_hash AND e.model = "
            "(SELECT model FROM codeask_revision LIMIT 1) WHERE e.content_hash IS NULL"
        ).fetchone()
    assert len(revisions) == 1 and revisions[0][0] == sha and revisions[0][1]
    assert chunks is not None and chunks[0] == revisions[0][2] >= 3
    assert missing == (0,)
    again = index(tmp_path / "repo", pg_dsn, tmp_path / "cache", "--backend", "postgres")
    assert again.returncode == 0 and "already published" in again.stderr, again.stderr
    with pg_server.admin(pg_db) as db:
        assert db.execute("SELECT count(*) FROM codeask_chunk").fetchone() == chunks


def test_a_wrong_password_or_lexical_only_is_a_clear_refusal(
    pg_server: PgServer, pg_db: str, tmp_path: Path
) -> None:
    repository(tmp_path / "repo")
    wrong = pg_server.dsn(pg_db, password="Not-The-Pw-123")
    failed = index(tmp_path / "repo", wrong, tmp_path / "cache", "--backend", "postgres")
    assert failed.returncode != 0
    assert "publishing" in failed.stderr and "password authentication failed" in failed.stderr
    assert "Not-The-Pw-123" not in failed.stderr + failed.stdout
    lexical = index(tmp_path / "repo", wrong, tmp_path / "cache", "--backend", "postgres",
                    "--lexical-only")  # fmt: skip
    assert lexical.returncode != 0 and "--lexical-only" in lexical.stderr
