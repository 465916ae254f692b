"""Issue 42 (S2): the lexical tables are BM25 segment files read through memory maps, not
SQLite FTS5 (lexical.sqlite held a second copy of every chunk's text). The real CLI indexes a
project, edits one file, reindexes and searches with `--no-daemon`."""

from __future__ import annotations

import json
from pathlib import Path

from support import codeask
from support.writers import env_for, make_topic_project, write_topic


def lexical_folder(root: Path) -> Path:
    """The index's lexical folder (the index lives in the project's .codeask/)."""
    (found,) = [p.parent for p in root.rglob("lexical/manifest.json")]
    return found


def segments(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_size) for p in folder.glob("seg-*.lex")}


def lexical_hits(query: str, root: Path, env: dict[str, str]) -> list[str]:
    found = codeask(
        "search", query, "--json", "--no-daemon", "--mode", "lexical", cwd=root, env=env
    )
    assert found.returncode == 0, found.stderr
    return [hit["symbol"] for hit in json.loads(found.stdout)["results"]]


def test_an_index_keeps_no_fts_copy_and_an_edit_writes_only_a_delta(tmp_path: Path) -> None:
    root = make_topic_project(tmp_path / "proj")
    env = env_for(tmp_path / "xdg")
    assert codeask("index", "--lexical-only", cwd=root, env=env).returncode == 0
    folder = lexical_folder(root)
    assert not list(folder.parent.rglob("lexical.sqlite*")), "a second copy of the text"
    base = segments(folder)
    assert len(base) == 2  # one per table
    assert "knead_dough_v0" in lexical_hits("knead dough", root, env)

    write_topic(root, "bakery", 1)
    assert codeask("index", "--lexical-only", cwd=root, env=env).returncode == 0
    after = segments(folder)
    assert base.items() <= after.items(), "the base segment files were rewritten"
    delta = [after[name][1] for name in after.keys() - base.keys()]
    assert len(delta) == 2 and sum(delta) < sum(size for _, size in base.values())
    hits = lexical_hits("knead dough", root, env)
    assert "knead_dough_v1" in hits and "knead_dough_v0" not in hits


def test_an_index_of_the_sqlite_layout_is_rebuilt_with_a_logged_reason(tmp_path: Path) -> None:
    root = make_topic_project(tmp_path / "proj")
    env = env_for(tmp_path / "xdg")
    assert codeask("index", "--lexical-only", cwd=root, env=env).returncode == 0
    folder = lexical_folder(root)
    for entry in folder.iterdir():
        entry.unlink()
    folder.rmdir()
    old = folder.parent / "lexical.sqlite"
    old.write_bytes(b"SQLite format 3\x00" + bytes(4080))  # what an older version left
    Path(f"{old}-wal").write_bytes(b"")
    run = codeask("-v", "index", "--lexical-only", cwd=root, env=env)
    assert run.returncode == 0, run.stderr
    assert "older SQLite layout" in run.stderr
    assert not list(folder.parent.glob("lexical.sqlite*"))
    assert "plan_orbit_v0" in lexical_hits("rocket thrust orbit", root, env)
