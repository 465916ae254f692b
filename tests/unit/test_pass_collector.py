"""The cyclic garbage collector runs less often during a full pass (runtime/collector.py): the
young threshold is raised while the pass runs and put back after it, also when it fails, and
the pass still indexes every file."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest
from tests.support.gitrepo import ALICE, EPOCH, commit, make_repo

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.indexer.run import Progress
from codeask.core.runtime.collector import BULK_YOUNG, fewer_collections


def _index(root: Path) -> FolderIndex:
    settings, warnings = build_settings({"embed": {"tiers": ["static"]}}, {})
    assert warnings == []
    return FolderIndex(root, settings)


def _repo(root: Path) -> Path:
    repo = make_repo(root)
    files = {
        f"pkg/mod_{n}.py": "".join(
            f"def step_{n}_{j}(value):\n    return value * {j}\n\n" for j in range(6)
        )
        for n in range(12)
    }
    commit(repo, files, "add the modules", ALICE, EPOCH)
    return root


def test_a_pass_runs_with_the_raised_threshold_and_puts_it_back(tmp_path: Path) -> None:
    before = gc.get_threshold()
    seen: list[tuple[str, int]] = []
    index = _index(_repo(tmp_path / "repo"))
    try:
        report = index.refresh(progress=lambda p: seen.append((p.phase, gc.get_threshold()[0])))
        symbols = {c.symbol for c in index.local.chunks_of("pkg/mod_7.py")}
    finally:
        index.close()
    assert report.files_indexed == 12 and report.chunks_added >= 72
    during = {young for phase, young in seen if phase != "done"}  # "done": after the pass
    assert {phase for phase, _ in seen} >= {"scan", "chunk"}
    assert during == {max(before[0], BULK_YOUNG)}
    assert gc.get_threshold() == before
    assert {f"step_7_{j}" for j in range(6)} <= symbols


def test_a_failing_pass_puts_the_threshold_back(tmp_path: Path) -> None:
    before = gc.get_threshold()
    index = _index(_repo(tmp_path / "repo"))

    def fail(progress: Progress) -> None:
        raise RuntimeError("stop here")

    try:
        with pytest.raises(RuntimeError, match="stop here"):
            index.refresh(progress=fail)
    finally:
        index.close()
    assert gc.get_threshold() == before


def test_overlapping_holders_keep_it_raised_until_the_last_leaves() -> None:
    before = gc.get_threshold()
    inside = threading.Event()
    release = threading.Event()

    def other_pass() -> None:
        with fewer_collections():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other_pass)
    with fewer_collections():
        thread.start()
        assert inside.wait(10)
    assert gc.get_threshold()[0] == max(before[0], BULK_YOUNG)  # the other pass still runs
    release.set()
    thread.join(10)
    assert gc.get_threshold() == before
