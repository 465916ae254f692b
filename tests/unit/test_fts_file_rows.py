"""The whole-file rows of the lexical tables: one per path, replaced by key, not by a scan.

A first pass writes one whole-file row per file; finding the old row by its unindexed `file`
column read every row of the table, so the pass grew with the square of the files (laravel:
~30% of its index time). The cost is counted in SQLite virtual-machine steps (a progress
handler), not in seconds: the same on a quiet or a loaded machine.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from codeask.core.storage.lexical.fts import SCHEMA, FtsTables


def _fill(tables: FtsTables, files: int) -> None:
    for n in range(files):
        body = " ".join(f"word{n}x{i}" for i in range(200))
        tables.replace_file_chunks([], [(n, body, "sym", "path")], f"src/f{n}.py", (body, "src"))


def _steps_to_replace(tables: FtsTables, path: str) -> int:
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    tables.db.set_progress_handler(count, 100)
    try:
        tables.replace_file(path, ("new body", "src"))
    finally:
        tables.db.set_progress_handler(None, 0)
    return steps


def test_replacing_a_file_row_costs_the_same_in_a_small_and_a_large_table(tmp_path: Path) -> None:
    small, large = (
        FtsTables.open(tmp_path / "small.sqlite"),
        FtsTables.open(tmp_path / "large.sqlite"),
    )
    _fill(small, 20)
    _fill(large, 400)
    small_steps = _steps_to_replace(small, "src/f3.py")
    large_steps = _steps_to_replace(large, "src/f3.py")
    assert large_steps < 3 * max(small_steps, 1), (small_steps, large_steps)


def test_one_whole_file_row_per_path_through_replace_and_drop(tmp_path: Path) -> None:
    tables = FtsTables.open(tmp_path / "lexical.sqlite")
    _fill(tables, 3)
    tables.replace_file("src/f1.py", ("again", "src"))
    tables.replace_file_chunks([1], [(1, "b", "s", "p")], "src/f1.py", ("third", "src"))
    rows = tables.read("SELECT file, body FROM files_fts ORDER BY file")
    assert [r[0] for r in rows] == ["src/f0.py", "src/f1.py", "src/f2.py"]
    assert dict(rows)["src/f1.py"] == "third"
    tables.replace_file("src/f1.py", None)
    assert [r[0] for r in tables.read("SELECT file FROM files_fts")] == ["src/f0.py", "src/f2.py"]
    assert tables.top_k("files_fts", ["third"], 5) == []
    tables.replace_file("src/f1.py", ("back", "src"))
    assert [r[0] for r in tables.top_k("files_fts", ["back"], 5)] == ["src/f1.py"]
    tables.clear()
    tables.replace_file("src/f0.py", ("after", "src"))
    assert [r[0] for r in tables.read("SELECT file FROM files_fts")] == ["src/f0.py"]


def test_tables_of_the_previous_layout_are_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "lexical.sqlite"
    old = sqlite3.connect(path)
    old.execute("CREATE VIRTUAL TABLE fts USING fts5(body, symbol, path)")
    old.execute("CREATE VIRTUAL TABLE files_fts USING fts5(file UNINDEXED, body, path)")
    old.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    old.execute("INSERT INTO meta VALUES ('schema', '2'), ('generation', '7')")
    old.execute("INSERT INTO files_fts VALUES ('src/a.py', 'stale', 'src')")
    old.commit()
    old.close()
    tables = FtsTables.open(path)
    assert SCHEMA != "2"
    assert tables.generation() == -1  # nothing claims a snapshot: the indexer rebuilds the rows
    assert tables.read("SELECT count(*) FROM files_fts")[0][0] == 0
    tables.replace_file("src/a.py", ("fresh", "src"))
    assert [r[0] for r in tables.top_k("files_fts", ["fresh"], 5)] == ["src/a.py"]


KILLED_WRITER = """
import os, sys
from pathlib import Path
from codeask.core.storage.lexical.fts import FtsTables
tables = FtsTables.open(Path(sys.argv[1]))
for n in range(3):
    tables.replace_file_chunks([], [(n, f"body{n}", "s", "p")], f"f{n}.py", (f"body{n}", "p"))
tables.stamp(5)
for n in range(3, 6):
    tables.replace_file_chunks([], [(n, f"body{n}", "s", "p")], f"f{n}.py", (f"body{n}", "p"))
os._exit(9)  # killed before the next stamp: no close, no commit
"""


def test_a_writer_killed_between_stamps_leaves_the_stamped_tables(tmp_path: Path) -> None:
    """Writes share a transaction until the next stamp (or a second passes): a kill loses the
    unstamped rows and nothing else, so the stamp still says exactly what the rows are."""
    import subprocess
    import sys

    path = tmp_path / "lexical.sqlite"
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(path)], check=False)
    assert done.returncode == 9
    tables = FtsTables.open(path)
    assert tables.generation() == 5
    assert tables.count() == 3
    assert sorted(r[0] for r in tables.read("SELECT file FROM files_fts")) == [
        "f0.py",
        "f1.py",
        "f2.py",
    ]


def test_close_commits_what_the_writer_wrote(tmp_path: Path) -> None:
    path = tmp_path / "lexical.sqlite"
    tables = FtsTables.open(path)
    tables.replace_file_chunks([], [(1, "kept", "s", "p")], "a.py", ("kept", "p"))
    tables.close()
    again = FtsTables.open(path)
    assert again.count() == 1
    assert again.generation() == -1  # written, never stamped: it claims no snapshot
