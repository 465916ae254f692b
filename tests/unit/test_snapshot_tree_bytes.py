"""The index folder's size, counted while a writer publishes and removes snapshots.

`index_status` (MCP), `codeask status` and the status bar read it at any moment; a snapshot
folder removed between its listing and its stat once failed the status call ("Error executing
tool index_status" while the model tier was filling in and saving).
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

from codeask.core.storage.snapshot import tree_bytes


def test_counts_regular_files_only(tmp_path: Path) -> None:
    (tmp_path / "gen-000001").mkdir()
    (tmp_path / "gen-000001" / "chunks.rec").write_bytes(b"x" * 100)
    (tmp_path / "CURRENT").write_bytes(b"gen-000001")
    os.symlink(tmp_path / "gen-000001" / "chunks.rec", tmp_path / "link")
    assert tree_bytes(tmp_path) == 110


def test_a_snapshot_removed_while_counting_counts_as_gone(tmp_path: Path) -> None:
    """A writer churning snapshot folders never makes the count raise (every call returns)."""
    (tmp_path / "CURRENT").write_bytes(b"kept")
    stop = threading.Event()

    def churn() -> None:
        generation = 0
        while not stop.is_set():
            folder = tmp_path / f"gen-{generation % 3:06d}"
            folder.mkdir(exist_ok=True)
            for name in range(20):
                (folder / f"part{name}").write_bytes(b"y" * 10)
            shutil.rmtree(folder, ignore_errors=True)
            generation += 1

    writer = threading.Thread(target=churn, daemon=True)
    writer.start()
    try:
        counts = [tree_bytes(tmp_path) for _ in range(2000)]
    finally:
        stop.set()
        writer.join()
    assert all(4 <= count <= 4 + 3 * 20 * 10 for count in counts)
    assert tree_bytes(tmp_path) == 4
