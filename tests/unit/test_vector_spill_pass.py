"""Issue 42, TAIL: a first pass spills its static vectors to a file as they come, publishes the
same base as one that held them in memory, and a SIGKILL mid-pass leaves the last snapshot.

Real processes: each pass is a child `python` running codeask's own `FolderIndex.refresh`, with
one constant lowered (`VectorIndex.spill_rows`, so a small folder spills as the kernel would);
the kill is a real SIGKILL of that child while its static tier is spilled.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np
from test_chunk_spill import (
    FILES,
    FUNCTIONS,
    NO_TIMED_SAVES,
    kill_mid_pass,
    pass_script,
    run_pass,
    write_folder,
)

from codeask.core.source.walk_cache import WALK_CACHE
from support import codeask
from support.env import in_process_env
from support.writers import live_snapshot

#: Static rows spill past `VectorIndex.spill_rows`, to an unlinked file.
PASS = pass_script(
    "from codeask.core.storage.vectors import VectorIndex\n"
    "VectorIndex.spill_rows = int(sys.argv[2])",
    "folder.storage.parts()[0].tiers.static._tail.spill is not None",
)


def static_base(index_folder: Path) -> dict[str, np.ndarray]:
    """The live snapshot's static tier, member by member (ids, rows, scales, lists)."""
    current = (index_folder / "CURRENT").read_text(encoding="utf-8").strip()
    with zipfile.ZipFile(index_folder / current / "static.npz") as archive:
        return {
            name: np.lib.format.read_array(archive.open(name), allow_pickle=False)
            for name in archive.namelist()
        }


def index_files(index_folder: Path) -> list[str]:
    """The index folder's names but the walk cache (a walk writes it once its folders settle,
    which on a loaded machine can be during the killed pass: it is a cache, not the index)."""
    return sorted(name for name in os.listdir(index_folder) if name != WALK_CACHE)


def same_arrays(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> bool:
    return ours.keys() == theirs.keys() and all(
        ours[k].dtype == theirs[k].dtype and np.array_equal(ours[k], theirs[k]) for k in ours
    )


def test_a_spilled_first_pass_publishes_the_same_static_base(tmp_path: Path) -> None:
    env = in_process_env(XDG_CACHE_HOME=str(tmp_path / "xdg"))
    kept = write_folder(tmp_path / "kept", 0)
    spilled = write_folder(tmp_path / "spilled", 0)
    in_memory = run_pass(kept, env, 10**9, PASS)  # never spills: the tail as it always was
    on_disk = run_pass(spilled, env, 40, PASS)
    assert not in_memory["spilled"] and on_disk["spilled"]
    assert on_disk["chunks"] == in_memory["chunks"] >= FILES * FUNCTIONS
    ours = static_base(Path(str(on_disk["folder"])))
    theirs = static_base(Path(str(in_memory["folder"])))
    assert len(ours["ids.npy"]) == on_disk["chunks"]
    assert same_arrays(ours, theirs)  # the same ids, int8 rows and scales, in the same order
    # searches read the spilled pass's index as any other
    found = codeask("search", "--json", "--no-daemon", "job 77 step 3", cwd=spilled, env=env)
    assert found.returncode == 0, found.stderr[-2000:]
    assert json.loads(found.stdout)["results"]


def test_a_pass_killed_with_its_vectors_spilled_leaves_the_last_snapshot(tmp_path: Path) -> None:
    # no timed save: on a loaded machine a checkpoint could publish the killed pass's files
    # before the kill, and the test is of the snapshot the kill leaves, not of when saves run
    env = in_process_env(XDG_CACHE_HOME=str(tmp_path / "xdg"), **NO_TIMED_SAVES)
    root = write_folder(tmp_path / "repo", 0)
    first = run_pass(root, env, 10**9, PASS)
    index_folder = Path(str(first["folder"]))
    before, files_before = static_base(index_folder), index_files(index_folder)
    _, chunks_before = live_snapshot(index_folder)
    write_folder(root, 1)  # every file changed: the next pass spills
    # killed while its static rows are spilled: their file is unlinked, so nothing shows
    kill_mid_pass(root, env, 40, PASS, lambda: index_files(index_folder) == files_before)
    assert same_arrays(static_base(index_folder), before)  # the previous generation, exactly
    assert index_files(index_folder) == files_before  # the spill file left nothing
    status = codeask("status", "--json", "--root", str(root), cwd=root, env=env, check=True)
    assert json.loads(status.stdout)[0]["chunks"] == len(chunks_before)
    # the next pass indexes everything again, and its base is one a pass in memory writes
    again = run_pass(root, env, 40, PASS)
    assert again["chunks"] == len(chunks_before)
    fresh = write_folder(tmp_path / "fresh", 1)
    reference = run_pass(fresh, env, 10**9, PASS)
    after, expected = static_base(index_folder), static_base(Path(str(reference["folder"])))
    assert len(after["ids.npy"]) == len(chunks_before)
    assert np.array_equal(after["rows.npy"], expected["rows.npy"])
    assert np.array_equal(after["scales.npy"], expected["scales.npy"])
