"""A long first pass saves part of the tree early (core/indexer/early_saves.py), so another
process can search a big tree within seconds of the start instead of after the whole pass
(issue 42); the saves are spaced geometrically and stop after the pass's first quarter."""

from __future__ import annotations

from pathlib import Path

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex, Progress
from codeask.core.indexer.early_saves import EarlySaves
from codeask.core.search.retrieve import search
from support.gitrepo import write_tree

FILES = {f"pkg/mod{i:03d}.py": f"def function_{i}(x):\n    return x + {i}\n" for i in range(400)}


def _writer(root: Path, checkpoint_seconds: float) -> FolderIndex:
    layers = {"history": {"enabled": False}, "index": {"checkpoint_seconds": checkpoint_seconds}}
    settings, warnings = build_settings(layers)
    assert warnings == []
    return FolderIndex(root, settings)


def _seen_by_a_reader_mid_pass(root: Path, checkpoint_seconds: float) -> list[int]:
    """Files a separate reader finds while the writer's pass is at its 100th file."""
    seen: list[int] = []

    def look(event: Progress) -> None:
        if event.phase == "chunk" and event.files_done >= 100 and not seen:
            if not (root / ".codeask" / "CURRENT").exists():
                seen.append(0)
                return
            reader = FolderIndex.open(root, mode="read")
            try:
                found = search([reader], "function_0", mode="lexical").hits
                seen.append(len(reader.storage.paths()) if found else -1)
            finally:
                reader.close()

    write_tree(root, FILES)
    writer = _writer(root, checkpoint_seconds)
    try:
        writer.refresh(progress=look, embed=False)
        assert len(writer.storage.paths()) == len(FILES)
    finally:
        writer.close()
    return seen


def test_a_first_pass_is_searchable_in_part_before_it_ends(tmp_path: Path) -> None:
    [files] = _seen_by_a_reader_mid_pass(tmp_path / "repo", checkpoint_seconds=0.0)
    assert 50 <= files < len(FILES), "a snapshot of the first files, saved while the pass goes on"


def test_no_early_save_before_its_time(tmp_path: Path) -> None:
    assert _seen_by_a_reader_mid_pass(tmp_path / "repo", checkpoint_seconds=3600.0) == [0]


def test_early_saves_are_spaced_geometrically_and_stop_after_the_first_quarter() -> None:
    now = [0.0]
    saves = EarlySaves(50.0, files=1000, clock=lambda: now[0])  # the first after 10 s
    due = []
    for second in range(0, 400):
        now[0] = float(second)
        if saves.due(stored=second // 2 + 1):  # 2 s a file: the quarter (250) at ~500 s
            due.append(second)
    assert due == [10, 40, 160]
    now[0] = 10_000.0
    assert not saves.due(stored=251), "past the first quarter the final save does the rest"
