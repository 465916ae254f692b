"""`codeask index` through the daemon on a folder no session holds (issue 42): the daemon keeps
that folder's driver `daemon.hold_seconds` after the pass, with a file watch, so the next
`codeask index` after an edit re-checks the one changed file (`files_checked` 1, not a stat of
every file) and the search after it finds the new function; a rename and a delete the same way;
a poll of the held driver indexes an edit with no `codeask index` at all; an in-process
`codeask index` defers to the held driver; the daemon's searches read the held index (no
second load of the snapshot it wrote); an edit made while the daemon is down is found by
the next pass (it walks). Real processes: `codeask index`, `codeask search`, the daemon."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import codeask, stop_daemon
from mcp_agents import agent_env

from support.gitrepo import write_tree

pytestmark = pytest.mark.slow

TREE = {f"pkg/mod{i}.py": f"def helper_{i}(value):\n    return value + {i}\n" for i in range(40)}


def index_json(root: Path, env: dict[str, str], *argv: str) -> dict[str, Any]:
    done = codeask("index", "--json", *argv, str(root), cwd=root, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "daemon unavailable" not in done.stderr, done.stderr
    [row] = json.loads(done.stdout)
    return row  # type: ignore[no-any-return]


def found(root: Path, env: dict[str, str], word: str) -> list[str]:
    done = codeask("search", "--json", "-k", "5", "--root", str(root), word, cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    return [hit["relative_path"] for hit in json.loads(done.stdout)["results"]]


def add_function(path: Path, name: str) -> None:
    """A function appended, the file replaced (an agent's or an editor's atomic save)."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(path.read_text() + f"\n\ndef {name}(budget):\n    return budget * 2\n")
    os.replace(temporary, path)


def held(root: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    info = json.loads(codeask("daemon", "--status", cwd=root, env=env).stdout)
    return [d for d in info["drivers"] if Path(d["root"]) == root.resolve()]


def indexed(tmp_path: Path, env: dict[str, str]) -> Path:
    """The project written and given its first pass (it runs in the client)."""
    root = tmp_path / "proj"
    write_tree(root, TREE)
    assert index_json(root, env)["files_indexed"] == len(TREE)
    return root


def held_after_an_edit(tmp_path: Path, env: dict[str, str]) -> Path:
    """The project indexed, then an edit indexed through the daemon: it opens the index, sets
    its watch and walks (every file checked), and holds the driver after the pass."""
    root = indexed(tmp_path, env)
    add_function(root / "pkg/mod3.py", "walked_probe")
    walked = index_json(root, env)
    assert walked["files_checked"] == len(TREE) and walked["files_indexed"] == 1
    return root


def test_the_held_folder_rechecks_only_what_changed(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    env = agent_env(daemon_env)
    root = held_after_an_edit(tmp_path, env)
    assert found(root, env, "walked_probe")[0] == "pkg/mod3.py"
    [driver] = held(root, env)
    assert driver["sessions"] == ["daemon"], "held after the pass"

    add_function(root / "pkg/mod7.py", "watched_probe")
    watched = index_json(root, env)
    assert watched["files_checked"] <= 1, "the events named the file: no stat of every file"
    assert watched["files_seen"] == len(TREE) and watched["files_unchanged"] >= len(TREE) - 1
    assert found(root, env, "watched_probe")[0] == "pkg/mod7.py"

    os.rename(root / "pkg/mod7.py", root / "pkg/renamed.py")
    (root / "pkg/mod8.py").unlink()
    moved = index_json(root, env)
    assert moved["files_checked"] <= 1 and moved["files_seen"] == len(TREE) - 1
    assert found(root, env, "watched_probe")[0] == "pkg/renamed.py"
    assert "pkg/mod8.py" not in found(root, env, "helper_8")

    info = json.loads(codeask("daemon", "--status", cwd=root, env=env).stdout)
    assert info["loads"] == 0, "every search read the held index: no snapshot loaded again"

    alone = codeask("index", "--no-daemon", str(root), cwd=root, env=env, timeout=300)
    assert alone.returncode == 0 and "which keeps it current; nothing to do" in alone.stderr

    add_function(root / "pkg/mod9.py", "polled_probe")  # no `codeask index`: the poll's pass
    deadline = time.monotonic() + 60
    while "pkg/mod9.py" not in found(root, env, "polled_probe") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "pkg/mod9.py" in found(root, env, "polled_probe")


def test_an_edit_while_the_daemon_is_down_is_found_by_the_next_pass(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    env = agent_env(daemon_env)
    root = held_after_an_edit(tmp_path, env)
    stop_daemon(env)  # its held driver saves and closes the index
    add_function(root / "pkg/mod2.py", "unseen_probe")
    again = index_json(root, env)  # a new daemon: a new watch, not yet trusted: it walks
    assert again["files_checked"] == len(TREE) and again["files_indexed"] == 1
    assert found(root, env, "unseen_probe")[0] == "pkg/mod2.py"


def test_no_hold_when_set_to_zero(tmp_path: Path, daemon_env: dict[str, str]) -> None:
    env = agent_env(daemon_env) | {"CODEASK_DAEMON__HOLD_SECONDS": "0"}
    root = indexed(tmp_path, env)
    add_function(root / "pkg/mod1.py", "first_probe")
    assert index_json(root, env)["files_indexed"] == 1
    assert held(root, env) == [], "closed right after the pass, as before the hold"


def test_new_settings_take_the_held_folder_over(tmp_path: Path, daemon_env: dict[str, str]) -> None:
    """The project file changes while the daemon holds the folder: the next `codeask index`
    runs under the new settings (the old hold lets the writer lock go), not 'nothing to do'."""
    env = agent_env(daemon_env)
    root = held_after_an_edit(tmp_path, env)
    (root / ".codeask.toml").write_text('[index]\nexclude = ["pkg/mod1.py"]\n')
    done = codeask("index", "--json", str(root), cwd=root, env=env, timeout=300)
    assert done.returncode == 0 and "nothing to do" not in done.stderr, done.stderr
    [row] = json.loads(done.stdout)
    assert row["files_removed"] == 1, row  # pkg/mod1.py, now excluded
    [driver] = held(root, env)
    assert driver["sessions"] == ["daemon"], "one held driver: the new settings'"
