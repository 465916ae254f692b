"""A reader (`codeask search`, a read-only server) maps the lexical segment files its snapshot's
manifest names and creates no file; a writer that rebuilds the index meanwhile writes new files
and removes the old ones, and the reader keeps answering from the ones it mapped (issue 11 item
1: readers never see a mixed snapshot), without falling back to a copy in memory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.core.indexer import FolderIndex
from codeask.core.storage.local import LocalStorage
from support import codeask
from support.writers import env_for, make_topic_project


def test_a_reader_keeps_its_mapped_segments_when_a_writer_replaces_them(
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
        assert local.lexical_on_disk()  # the mapped files, not a copy in memory
        lexical = reader.folder / "lexical"
        mapped = {p.name for p in lexical.glob("seg-*")}
        before = storage.lexical_top_k("insulin dose", 5)
        assert before and all(storage.chunk(chunk_id) for chunk_id, _ in before)

        rebuilt = codeask("index", "--lexical-only", "--rebuild", cwd=root, env=env)
        assert rebuilt.returncode == 0, rebuilt.stderr
        assert not mapped & {p.name for p in lexical.glob("seg-*")}, "the writer kept them"

        assert storage.lexical_top_k("insulin dose", 5) == before
        after = storage.lexical_top_k("insulin dose glucose", 5)
        assert after and all(storage.chunk(chunk_id) for chunk_id, _ in after)
        assert storage.lexical_files("insulin", 5)
        assert local.lexical_rows() == storage.chunk_count()
        assert "dose_insulin_v0" in {c.symbol for c in storage.chunks(i for i, _ in after).values()}
    finally:
        reader.close()
