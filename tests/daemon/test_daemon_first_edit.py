"""The first `codeask index` through a daemon that so far only searched, the folder's writer
elsewhere at the time (else the daemon holds the folder after a search: test_daemon_search_hold.py)
(issue 42): the daemon lets its searches' read copy go before the pass opens the writer on the
same snapshot, and the
writer takes that copy's path table (what a question naming a file looks up) instead of
building it again over every file; a pass that adds a file builds it afresh, so the new file is
found by its name. Real processes: `codeask index`, `codeask search`, the daemon."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from daemon_helpers import codeask, daemon_log, kept_outcome
from mcp_agents import agent_env
from test_daemon_index_hold import add_function, found, index_json, indexed

from codeask.config import load_settings
from codeask.core.indexer.location import index_dir_for
from codeask.core.storage.writer_lock import WriterLock

pytestmark = pytest.mark.slow

TAKEN = "taken over from a closed copy"


def hits(root: Path, env: dict[str, str], query: str, *extra: str) -> list[str]:
    argv = ("search", "--json", "-k", "10", "--root", str(root), query, *extra)
    done = codeask(*argv, cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    return [hit["relative_path"] for hit in json.loads(done.stdout)["results"]]


def searched(tmp_path: Path, daemon_env: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """The project indexed in the client, then searched through a fresh daemon by a question
    naming a file while another process (the test's, as an editor's server would) held the
    writer lock: the daemon held nothing, and its read copy has built the path table."""
    env = agent_env(daemon_env)
    root = indexed(tmp_path, env).resolve()
    lock = WriterLock.try_acquire(index_dir_for(root, load_settings(root, {})[0]), "serve")
    assert lock is not None
    try:
        assert found(root, env, "pkg/mod3.py helper_3")[0] == "pkg/mod3.py"
        assert kept_outcome(root, env).startswith("left alone: codeask serve")
    finally:
        lock.release()
    assert TAKEN not in daemon_log(env)
    return root, env


def test_the_writer_takes_the_read_copys_path_table(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    root, env = searched(tmp_path, daemon_env)

    add_function(root / "pkg/mod3.py", "first_probe")
    walked = index_json(root, env)  # the writer opens on the snapshot the read copy loaded
    assert walked["files_indexed"] == 1
    assert found(root, env, "first_probe")[0] == "pkg/mod3.py"
    assert daemon_log(env).count(TAKEN) == 1, "the writer's first search built no path table"

    for query in ("mod5.py helper_5", "pkg/mod12.py", "first_probe mod3"):
        assert hits(root, env, query) == hits(root, env, query, "--no-daemon"), query


def test_a_pass_that_adds_a_file_builds_the_table_again(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    root, env = searched(tmp_path, daemon_env)

    (root / "pkg/newcomer.py").write_text("def arrival(value):\n    return value - 1\n")
    added = index_json(root, env)
    assert added["files_indexed"] == 1
    assert hits(root, env, "newcomer.py")[0] == "pkg/newcomer.py"
    assert TAKEN not in daemon_log(env), "the paths changed: the old table does not serve"
    assert hits(root, env, "newcomer.py") == hits(root, env, "newcomer.py", "--no-daemon")
