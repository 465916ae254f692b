"""SharedIndexes (core/indexer/shared.py): sessions of one process that would open the same
index hold one; any difference in what the open would load or say gives its own; the last
user saves and closes; one user's new settings never reach another's index."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codeask.core.indexer import FolderIndex, RootRefused, SharedIndexes, Workspace


def project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mathutil.py").write_text(
        "def is_prime(number):\n"
        "    return number > 1 and all(number % d for d in range(2, number))\n"
    )
    return root


def settings(extra: dict[str, object] | None = None) -> dict[str, object]:
    """Editor settings: static vectors only (passes here run lexical), plus `extra`."""
    return {"embed": {"tiers": ["static"]}, **(extra or {})}


def test_same_settings_share_one_index_until_the_last_user_leaves(tmp_path: Path) -> None:
    root = project(tmp_path / "demo")
    shared = SharedIndexes()
    first = shared.open(root, settings(), mode="auto", kind="serve")
    second = shared.open(root, settings(), mode="auto", kind="mcp")
    assert second is first and shared.opened == 1
    assert shared.users(first) == 2 and not first.read_only
    first.refresh(embed=False)

    shared.close(first)  # one user left: the index stays open (and writable) for the other
    assert shared.users(first) == 1 and first.writer is not None and first.writer.held
    assert [d["users"] for d in shared.describe()] == [1]
    assert first.storage.chunk_count() > 0

    shared.close(second)
    assert shared.describe() == [] and shared.users(first) == 0
    assert first.writer is None or not first.writer.held  # closed: the lock is free again
    reopened = FolderIndex.open(root, settings(), mode="write")  # would raise IndexBusy if held
    assert reopened.storage.chunk_count() == first.storage.chunk_count()  # it was saved
    reopened.close()


def test_different_settings_or_warnings_get_their_own(tmp_path: Path) -> None:
    root = project(tmp_path / "demo")
    shared = SharedIndexes()
    plain = shared.open(root, settings(), mode="auto")
    tuned = shared.open(root, settings({"retrieve": {"k": 3}}), mode="auto")
    warned = shared.open(root, settings({"no_such_section": {}}), mode="auto")
    assert len({id(plain), id(tuned), id(warned)}) == 3 and shared.opened == 3
    assert warned.warnings and not plain.warnings
    assert tuned.read_only and warned.read_only  # one writer per index folder, as ever
    for folder in (warned, tuned, plain):
        shared.close(folder)
    assert shared.describe() == []


def test_new_settings_apply_in_place_only_for_a_sole_user(tmp_path: Path) -> None:
    root = project(tmp_path / "demo")
    shared = SharedIndexes()
    workspace = Workspace(shared)
    mine = workspace.add(root, settings(), mode="auto")
    theirs = shared.open(root, settings(), mode="auto")
    assert theirs is mine
    changed = FolderIndex.open(root, settings({"retrieve": {"k": 3}}), mode="read").settings
    before = mine.settings
    assert not workspace.retune(mine, changed)  # shared: the caller reopens instead
    assert mine.settings is before and mine.settings.retrieve.k != 3
    assert workspace.retune(mine, before)  # equal settings: nothing to do, shared or not

    shared.close(theirs)
    assert workspace.retune(mine, changed)  # alone now: applied in place
    assert mine.settings.retrieve.k == 3
    again = shared.open(root, settings({"retrieve": {"k": 3}}), mode="auto")
    assert again is mine  # found under its new settings
    shared.close(again)
    workspace.remove(root)
    assert shared.describe() == []


def test_a_refused_open_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEASK_ALLOW_BROAD_ROOT", raising=False)
    shared = SharedIndexes()
    with pytest.raises(RootRefused):
        shared.open(home, settings(), mode="auto")
    assert shared.describe() == [] and shared.opened == 0
    assert not (home / ".codeask").exists() or not os.listdir(home / ".codeask")


def test_a_vanished_folder_is_abandoned_by_its_last_user_only(tmp_path: Path) -> None:
    root = project(tmp_path / "demo")
    shared = SharedIndexes()
    one, two = Workspace(shared), Workspace(shared)
    folder = one.add(root, settings(), mode="auto")
    assert two.add(root, settings(), mode="auto") is folder
    one.abandon(folder)
    assert shared.users(folder) == 1 and folder.writer is not None and folder.writer.held
    two.abandon(folder)
    assert shared.users(folder) == 0 and not folder.writer.held
