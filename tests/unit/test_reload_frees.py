"""A reader that follows the writer (the daemon after each `codeask index`) frees the index it
replaced at once: its mapped vectors and chunk records are unmapped by reference counting, not
kept until a full garbage collection (issue 42: a daemon held 6 generations' static tiers, 36 MB
each at 149k chunks, after 6 one-file edits)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeask.core.indexer import SharedIndexes
from codeask.core.search.retrieve import search
from codeask.daemon.folders import FolderCache
from support.cli import codeask
from support.env import in_process_env
from support.gitrepo import write_tree


@pytest.fixture
def no_collector() -> Iterator[None]:
    """Only reference counting frees objects here: a cycle would keep them."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _maps_of(generation: str) -> list[str]:
    return [line for line in Path("/proc/self/maps").read_text().splitlines() if generation in line]


@pytest.mark.usefixtures("no_collector")
def test_the_daemons_reload_after_an_edit_unmaps_the_replaced_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "work"
    write_tree(
        root, {f"pkg/mod_{n}.py": f"def handler_{n}():\n    return {n}\n" for n in range(20)}
    )
    env = in_process_env(
        XDG_CACHE_HOME=str(tmp_path / "cache"), CODEASK_INDEX__LOCATION=str(tmp_path / "index")
    )
    for key, value in env.items():
        if key.startswith(("CODEASK_", "XDG_")):
            monkeypatch.setenv(key, value)
    codeask("index", str(root), env=env, check=True)
    cache = FolderCache(SharedIndexes())
    folder = cache.open(root)
    assert search([folder], "handler_3", mode="hybrid").hits
    cache.release(folder)
    first = folder.local
    old_generation = f"gen-{first.generation:06d}"
    assert _maps_of(old_generation)
    replaced = [weakref.ref(first), weakref.ref(folder), weakref.ref(folder.embedding)]
    del first, folder
    (root / "pkg/mod_3.py").write_text("def renamed_handler():\n    return 3\n")
    codeask("index", str(root), env=env, check=True)
    again = cache.open(root)  # the daemon's next request: CURRENT moved, a new load
    assert search([again], "renamed_handler", mode="hybrid").hits
    cache.release(again)
    assert [ref() for ref in replaced] == [None, None, None]
    assert _maps_of(old_generation) == []
