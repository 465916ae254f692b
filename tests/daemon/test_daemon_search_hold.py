"""A search through the daemon on a folder no session holds (issue 42): the daemon then runs
the folder's pass in the background and holds its driver (`daemon.hold_seconds`), with a file
watch, so the first `codeask index` after an edit re-checks the changed file only (before, it
opened the writer and stat'ed every file), and an edit is found with no `codeask index` at all.
It leaves alone a folder another writer holds, and every folder when `daemon.hold_seconds` is
0. Real processes: `codeask index`, `codeask search`, the daemon."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import codeask, daemon_log, kept_now, kept_outcome, wait_until
from mcp_agents import agent_env
from test_daemon_first_edit import TAKEN
from test_daemon_index_hold import TREE, add_function, found, held, index_json, indexed

from codeask.config import load_settings
from codeask.core.driver.keep_current import MAX_HELD
from codeask.core.indexer.location import index_dir_for
from codeask.core.storage.writer_lock import WriterLock
from support.gitrepo import write_tree

pytestmark = pytest.mark.slow

#: Generous: the poll's pass on a loaded machine.
SETTLE_S = 120.0


def status(root: Path, env: dict[str, str]) -> dict[str, Any]:
    done = codeask("daemon", "--status", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_a_search_leaves_the_folder_held_and_its_edits_found(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    env = agent_env(daemon_env)
    root = indexed(tmp_path, env)
    assert found(root, env, "pkg/mod3.py helper_3")[0] == "pkg/mod3.py"  # builds the path table
    assert kept_outcome(root, env) == "held"
    [driver] = held(root, env)
    assert driver["sessions"] == ["daemon"]
    info = status(root, env)
    assert info["folders"] == [], "the searches' read copy was let go for the writer"
    assert [i["writer"] for i in info["indexes"]] == [True], "one index open: the writer"
    assert found(root, env, "pkg/mod5.py helper_5")[0] == "pkg/mod5.py"
    info = status(root, env)
    assert info["loads"] == 1, "the search read the writer: no snapshot loaded again"
    assert daemon_log(env).count(TAKEN) == 1, "the writer took the read copy's path table"

    add_function(root / "pkg/mod7.py", "first_edit_probe")
    row = index_json(root, env)
    assert row["files_checked"] <= 1, "the watch named the file: no stat of every file"
    assert row["files_seen"] == len(TREE)
    assert found(root, env, "first_edit_probe")[0] == "pkg/mod7.py"

    add_function(root / "pkg/mod9.py", "unasked_probe")  # no `codeask index`: the poll's pass
    deadline = time.monotonic() + SETTLE_S
    while "pkg/mod9.py" not in found(root, env, "unasked_probe") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert found(root, env, "unasked_probe")[0] == "pkg/mod9.py"
    renewed = wait_until(lambda: kept_now(root, env) == "held (renewed)", SETTLE_S)
    assert renewed, "each search renews the hold"


def test_nothing_is_held_when_set_to_zero(tmp_path: Path, daemon_env: dict[str, str]) -> None:
    env = agent_env(daemon_env) | {"CODEASK_DAEMON__HOLD_SECONDS": "0"}
    root = indexed(tmp_path, env)
    assert found(root, env, "helper_3")[0] == "pkg/mod3.py"
    assert kept_outcome(root, env) == "left alone: daemon.hold_seconds is 0"
    assert held(root, env) == []
    add_function(root / "pkg/mod1.py", "walked_probe")
    row = index_json(root, env)
    assert row["files_checked"] == len(TREE), "no watch: the pass stat'ed every file"


def test_a_folder_another_writer_holds_is_left_alone(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    """A writer in another process (here the test's own, holding the real lock as a language
    server would) keeps the folder current: the daemon's search takes nothing from it."""
    env = agent_env(daemon_env)
    root = indexed(tmp_path, env)
    settings = load_settings(root.resolve(), {})[0]
    lock = WriterLock.try_acquire(index_dir_for(root.resolve(), settings), "serve")
    assert lock is not None
    try:
        assert found(root, env, "helper_3")[0] == "pkg/mod3.py"
        said = kept_outcome(root, env)
        assert said.startswith("left alone: codeask serve (pid ") and said.endswith(" writes it")
        assert held(root, env) == []
    finally:
        lock.release()


def test_searches_hold_a_few_folders_at_most(tmp_path: Path, daemon_env: dict[str, str]) -> None:
    """Each held folder is an open writer: one more folder searched than `MAX_HELD` lets the
    least recently searched go (it is read again as a read copy, and held again if searched)."""
    env = agent_env(daemon_env)
    roots = []
    for n in range(MAX_HELD + 1):
        root = tmp_path / f"proj{n}"
        write_tree(root, {"mod.py": f"def only_{n}(value):\n    return value\n"})
        assert codeask("index", str(root), cwd=root, env=env, timeout=300).returncode == 0
        roots.append(root.resolve())
    for n, root in enumerate(roots):
        assert found(root, env, f"only_{n}") == ["mod.py"]
        assert kept_outcome(root, env) == "held"
    holding = {Path(d["root"]) for d in status(roots[0], env)["drivers"]}
    assert holding == set(roots[1:]), "the first folder searched was let go"


def test_a_long_pass_on_a_folder_only_the_hold_keeps_runs_in_the_client(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    """`--rebuild` after a search: the daemon lets its hold go (no session shares the driver)
    and the asking CLI runs the pass, with its progress line, as on a folder nobody holds."""
    env = agent_env(daemon_env)
    root = indexed(tmp_path, env)
    assert found(root, env, "helper_3")[0] == "pkg/mod3.py"
    assert kept_outcome(root, env) == "held"
    done = codeask("index", "--rebuild", str(root), cwd=root, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"{root.name}: scanning" in done.stderr, "the rebuild ran in the CLI, with its line"
    assert f"({len(TREE)} indexed, 0 unchanged, 0 removed" in done.stderr, done.stderr
    assert held(root, env) == []
    assert found(root, env, "helper_5")[0] == "pkg/mod5.py"
