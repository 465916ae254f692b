"""`codeask index --backend postgres`: CI's command publishes HEAD's index to the team database.

A real git repository made here, the real CLI in a subprocess (real model, real embedded
PostgreSQL): the revision appears with every chunk, a second run writes nothing, a wrong password
is a clear error without the password, and --lexical-only is refused (nothing to publish).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pygit2
from pgserver import PgServer

from support import codeask as run_codeask
from support import in_process_env

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


def cli_env(dsn: str, cache: Path) -> dict[str, str]:
    env = in_process_env()
    env.update(
        {
            DSN_ENV: dsn,
            "CODEASK_INDEX__DSN_ENV": DSN_ENV,
            "CODEASK_EMBED__CACHE_DIR": str(cache),
            "HF_HUB_OFFLINE": "1",
        }
    )
    return env


def codeask(dsn: str, cache: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess, the team DSN in the variable its settings name."""
    return run_codeask(*argv, env=cli_env(dsn, cache), timeout=600)


def index(root: Path, dsn: str, cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return codeask(dsn, cache, "index", str(root), "--repo-name", "demo", *extra)


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


def gc(dsn: str, cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return codeask(dsn, cache, "gc", *extra)


def test_gc_keeps_the_newest_revisions_and_says_which_went(
    pg_server: PgServer, pg_dsn: str, pg_db: str, tmp_path: Path
) -> None:
    """Three commits published one after the other; `codeask gc --keep 2` deletes the oldest
    revision with its rows, a second gc deletes nothing; a wrong password is a clear refusal."""
    root = tmp_path / "repo"
    repository(root)
    repo = pygit2.Repository(str(root))
    for n in range(3):
        if n:
            (root / f"extra_{n}.py").write_text(f"def extra_{n}():\n    return {n}\n")
            repo.index.add_all()
            repo.index.write()
            who = pygit2.Signature("Dev", "dev@example.com")
            tree = repo.index.write_tree()
            repo.create_commit("HEAD", who, who, f"commit {n}", tree, [repo.head.target])
        done = index(root, pg_dsn, tmp_path / "cache", "--backend", "postgres")
        assert done.returncode == 0, done.stderr
    with pg_server.admin(pg_db) as db:
        ids = [r[0] for r in db.execute("SELECT id FROM codeask_revision ORDER BY id").fetchall()]
    assert len(ids) == 3
    first = gc(pg_dsn, tmp_path / "cache", "--keep", "2", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"removed": ids[:1], "keep": 2}
    with pg_server.admin(pg_db) as db:
        kept = [r[0] for r in db.execute("SELECT id FROM codeask_revision ORDER BY id").fetchall()]
        orphans = db.execute(
            "SELECT count(*) FROM codeask_chunk WHERE revision_id = %s", (ids[0],)
        ).fetchone()
    assert kept == ids[1:] and orphans == (0,)
    again = gc(pg_dsn, tmp_path / "cache", "--keep", "2")
    assert again.returncode == 0 and "removed 0 published revision(s)" in again.stderr
    wrong = gc(pg_server.dsn(pg_db, password="Not-The-Pw-456"), tmp_path / "cache")
    assert wrong.returncode != 0 and "gc of the team index" in wrong.stderr
    assert "Not-The-Pw-456" not in wrong.stderr + wrong.stdout
