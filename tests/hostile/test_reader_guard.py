"""A short-lived reader (`codeask search`) opens lexical.sqlite immutable so it creates no file;
a writer that starts and checkpoints during that read must not hand it torn or foreign pages
(issue 11 item 1: readers never see a mixed snapshot). The reader notices the file changed and
answers from its own snapshot instead.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from codeask.core.indexer import FolderIndex
from codeask.core.storage.local import LocalStorage
from support import codeask
from support.writers import env_for, make_topic_project


def _writer_empties_and_checkpoints(db_path: Path) -> None:
    """What a concurrent writer's rebuild does to the file: rows gone, WAL folded in."""
    db = sqlite3.connect(db_path)
    db.execute("DELETE FROM fts")
    db.execute("DELETE FROM files_fts")
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def test_an_immutable_reader_falls_back_when_a_writer_rewrites_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_topic_project(tmp_path / "proj")
    env = env_for(tmp_path / "xdg", XDG_CONFIG_HOME=str(tmp_path / "config"))
    indexed = codeask("index", "--lexical-only", cwd=root, env=env)
    assert indexed.returncode == 0, indexed.stderr
    for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, env[name])

    reader = FolderIndex.open(root, mode="read", kind="index")
    try:
        local, storage = reader.local, reader.storage
        assert isinstance(local, LocalStorage)
        assert local.lexical_on_disk()  # the file, not memory
        before = storage.lexical_top_k("insulin dose", 5)
        assert before and all(storage.chunk(chunk_id) for chunk_id, _ in before)

        _writer_empties_and_checkpoints(reader.folder / "lexical.sqlite")

        after = storage.lexical_top_k("insulin dose glucose", 5)
        assert after, "the reader lost its snapshot's rows to a writer's checkpoint"
        assert all(storage.chunk(chunk_id) for chunk_id, _ in after)
        assert storage.lexical_files("insulin", 5)
        assert local.lexical_rows() == storage.chunk_count()
        assert "dose_insulin_v0" in {c.symbol for c in storage.chunks(i for i, _ in after).values()}
    finally:
        reader.close()
