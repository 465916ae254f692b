"""A glob that makes a backtracking regex run for hours (issue "Round 3", item 1).

`*a*a*a*a*a*a*a*a*a*a*a*a*b` against a 60-character name of `a`s: Python's `re` tries every way
of spreading the a's over the stars. The same line in a cloned repository's `.gitignore`, in
`.codeaskignore` or in `index.exclude` made `codeask index` never finish; as `--path` it made a
search never answer. Real CLI processes on a real git repository; each has a timeout far above
what the work takes (well under a second), so a regression fails instead of hanging.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from codeask.core.source.globs import path_spec
from support import codeask as run_cli
from support import gitrepo, in_process_env
from support.mcp_harness import call, complete, mcp_session, server_env, tool_error

HOSTILE = "*a*a*a*a*a*a*a*a*a*a*a*a*b"
LONG_NAME = "a" * 60
#: Far above the seconds an index or a search of three files takes on a loaded machine.
TIMEOUT = 120


def codeask(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, offline, with `env` on top of this environment minus CODEASK_*."""
    return run_cli(*args, cwd=cwd, env=in_process_env(HF_HUB_OFFLINE="1", **env), timeout=TIMEOUT)


@pytest.fixture
def hostile_repo(tmp_path: Path) -> Path:
    """A git repository whose ignore files carry the line, beside a file with the long name."""
    root = tmp_path / "repo"
    repo = gitrepo.make_repo(root)
    files = {
        LONG_NAME: "def ledger_balance(entries):\n    return sum(entries)\n",
        "good.py": "def ledger_total(entries):\n    return len(entries)\n",
        ".gitignore": f"{HOSTILE}\n*.log\n",
        ".codeaskignore": f"{HOSTILE}\n",
    }
    gitrepo.commit(repo, files, "A repository with a hostile ignore line")
    (root / "debug.log").write_text("ledger noise\n")
    return root


def _paths(search: subprocess.CompletedProcess[str]) -> set[str]:
    """The hits' paths; exit code 1 is `codeask search`'s "no results", like grep's."""
    paths = {hit["relative_path"] for hit in json.loads(search.stdout)["results"]}
    assert search.returncode == (0 if paths else 1), search.stderr
    return paths


def test_index_finishes_with_hostile_ignore_lines_and_exclude(hostile_repo: Path) -> None:
    """`.gitignore`, `.codeaskignore` and `index.exclude` all carry the line: the index
    finishes, the lines match nothing (no name ends in b), the file's other rules still hold."""
    exclude = json.dumps([HOSTILE, "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*/**"])
    started = time.monotonic()
    indexed = codeask(
        "index",
        "--lexical-only",
        str(hostile_repo),
        cwd=hostile_repo,
        CODEASK_INDEX__EXCLUDE=exclude,
    )
    assert indexed.returncode == 0, indexed.stderr
    assert time.monotonic() - started < TIMEOUT
    found = _paths(codeask("search", "ledger", "--json", "--no-daemon", cwd=hostile_repo))
    assert {LONG_NAME, "good.py"} <= found
    assert "debug.log" not in found, "the .gitignore's other line still applies"


def test_search_with_hostile_path_glob_answers(hostile_repo: Path) -> None:
    """`--path HOSTILE` answers (nothing matches); a plain glob still filters."""
    indexed = codeask("index", "--lexical-only", str(hostile_repo), cwd=hostile_repo)
    assert indexed.returncode == 0, indexed.stderr
    search = ("search", "ledger", "--json", "--no-daemon", "--path")
    assert _paths(codeask(*search, HOSTILE, cwd=hostile_repo)) == set()
    assert _paths(codeask(*search, "a*", cwd=hostile_repo)) == {LONG_NAME}
    assert _paths(codeask(*search, "*.py", cwd=hostile_repo)) == {"good.py"}


@pytest.mark.timeout(60)
def test_path_spec_is_linear_in_the_path() -> None:
    """Twice the stars and a 4,000-character name: RE2 answers in microseconds, where `re`
    would not answer in this universe's lifetime; same answers as pathspec's own matching."""
    spec = path_spec(HOSTILE * 2)
    assert not spec.match_file("a" * 4000)
    assert spec.match_file(("a" * 13 + "b") * 2)
    assert path_spec("src/**/*.py").match_file("src/x/y/z.py")
    assert not path_spec("src/**/*.py").match_file("lib/src.py")
    assert path_spec("/top.txt").match_file("top.txt")
    assert not path_spec("/top.txt").match_file("sub/top.txt")


def test_names_that_are_not_utf8_meet_the_ignore_rules(tmp_path: Path) -> None:
    """A name that is not UTF-8 still meets the ignore rules (RE2 takes UTF-8 only)."""
    from codeask.config import IndexSettings
    from codeask.core.source.discover import discover

    (tmp_path / os.fsdecode(b"junk\xff.tmp")).write_text("x")
    (tmp_path / os.fsdecode(b"keep\xff.py")).write_text("x")
    (tmp_path / ".gitignore").write_text("*.tmp\n")
    found = discover(tmp_path, IndexSettings())
    assert [s.rel for s in found.skipped] == ["keep\\xff.py"], "ignored silently; kept reported"


@pytest.mark.timeout(120)
def test_long_hostile_lines_are_bounded_and_the_rest_still_holds(tmp_path: Path) -> None:
    """32 hostile lines of the longest accepted length (too much for one RE2 set: it is split)
    and a 100,000-character line (refused before pathspec spends seconds translating it): the
    walk finishes, and the ordinary lines between them still decide, in order."""
    from codeask.config import IndexSettings
    from codeask.core.source.discover import discover
    from codeask.core.source.globs import MAX_GLOB_CHARS

    longest = "*a" * (MAX_GLOB_CHARS // 2 - 1) + "b"
    lines = [longest] * 16 + ["*.log"] + [longest] * 15 + ["*a" * 50_000 + "b", "!keep.log"]
    (tmp_path / ".gitignore").write_text("\n".join(lines) + "\n")
    (tmp_path / ("a" * 200)).write_text("x")
    (tmp_path / "drop.log").write_text("x")
    (tmp_path / "keep.log").write_text("x")
    (tmp_path / "ab").write_text("x")
    found = {f.rel for f in discover(tmp_path, IndexSettings()).files}
    assert found == {".gitignore", "a" * 200, "ab", "keep.log"}


def test_overlong_path_glob_is_a_clear_error(hostile_repo: Path) -> None:
    indexed = codeask("index", "--lexical-only", str(hostile_repo), cwd=hostile_repo)
    assert indexed.returncode == 0, indexed.stderr
    search = codeask("search", "ledger", "--no-daemon", "--path", "*a" * 600, cwd=hostile_repo)
    assert search.returncode != 0
    assert "the path glob is 1,200 characters; the maximum is 1,024" in search.stderr


async def test_mcp_names_the_bad_path_argument(hostile_repo: Path) -> None:
    """An agent's overlong or invalid glob is its argument error naming `path`; the hostile
    one answers (empty)."""
    async with mcp_session(hostile_repo, env=server_env()) as agent:
        await complete(agent)
        too_long = await tool_error(agent, "search_code", query="ledger", path="*a" * 600)
        assert "`path` is not a usable glob: the path glob is 1,200 characters" in too_long
        invalid = await tool_error(agent, "search_code", query="ledger", path="!")
        assert "`path` is not a usable glob: Invalid git pattern" in invalid
        answer = await call(agent, "search_code", query="ledger", path=HOSTILE)
        assert answer["results"] == []
