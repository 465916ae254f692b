"""HEAD read from the repository's files, as pygit2 reads it (issue 29: a language server polls
HEAD; on a folder with no repository, or with history off, pygit2's ~20 MB are not needed).

Every layout below is made by the real `git`; the file reading must agree with pygit2 on each
and must not have fallen back to it (`read_head` is not `UNKNOWN`). Fresh interpreters show that
the server's modules, a poll and a refresh of a folder with no repository import no pygit2."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from fresh import last_json

from codeask.core.git.head import UNKNOWN, read_head
from codeask.core.git.repo import head_commit, head_sha, open_repo

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "A",
    "GIT_AUTHOR_EMAIL": "a@example.com",
    "GIT_COMMITTER_NAME": "A",
    "GIT_COMMITTER_EMAIL": "a@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def commit(repo: Path, name: str) -> str:
    (repo / name).write_text(f"{name}\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return git(repo, "rev-parse", "HEAD")


def pygit2_head(root: Path) -> str:
    """What head_sha answered before: HEAD peeled to a commit through pygit2."""
    repo = open_repo(root)
    found = head_commit(repo) if repo is not None else None
    return str(found.id) if found is not None else ""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "a.txt")
    return root


def agrees(root: Path, expected: str) -> None:
    assert read_head(root) is not UNKNOWN, "fell back to pygit2"
    assert read_head(root) == expected
    assert pygit2_head(root) == expected
    assert head_sha(root) == expected


def test_a_branch_loose_then_packed(repo: Path) -> None:
    sha = commit(repo, "b.txt")
    agrees(repo, sha)
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    agrees(repo, sha)
    (repo / "sub").mkdir()
    agrees(repo / "sub", sha)  # a workspace folder below the working tree's top


def test_detached_head_and_a_symbolic_ref_chain(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    second = commit(repo, "b.txt")
    git(repo, "checkout", "-q", "--detach", first)
    agrees(repo, first)
    git(repo, "checkout", "-q", "main")
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
    git(repo, "symbolic-ref", "HEAD", "refs/heads/alias")
    agrees(repo, second)


def test_unborn_branches(tmp_path: Path, repo: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    agrees(empty, "")
    git(repo, "checkout", "-q", "--orphan", "fresh")
    agrees(repo, "")


def test_a_linked_worktree_reads_the_shared_refs(tmp_path: Path, repo: Path) -> None:
    main = git(repo, "rev-parse", "HEAD")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    assert (linked / ".git").is_file()
    agrees(linked, main)
    side = commit(linked, "c.txt")
    git(repo, "pack-refs", "--all")
    agrees(linked, side)
    agrees(repo, main)


def test_no_repository_and_odd_layouts(tmp_path: Path, repo: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    agrees(plain, "")
    # a bare repository is left to pygit2, which answers as before
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    assert read_head(bare) is UNKNOWN
    assert head_sha(bare) == pygit2_head(bare) == ""
    # core.worktree elsewhere: pygit2 decides
    git(repo, "config", "core.worktree", str(tmp_path))
    assert read_head(repo) is UNKNOWN
    assert head_sha(repo) == pygit2_head(repo)


PROBE = """
import json, sys
from pathlib import Path
import codeask.lsp.server
from codeask.core.git.repo import head_sha, open_scoped, uncommitted_paths
from codeask.core.git.sync import sync_history
from codeask.config import HistorySettings
repo, plain = Path(sys.argv[1]), Path(sys.argv[2])
seen = {"head": head_sha(repo), "plain": head_sha(plain)}
seen["opened"] = open_scoped(plain) is not None
seen["uncommitted"] = sorted(uncommitted_paths(plain))
seen["delta"] = sync_history(plain, HistorySettings(), {"abc"}).removed
seen["before"] = "pygit2" in sys.modules
seen["history"] = len(sync_history(repo, HistorySettings(), set()).added)
seen["after"] = "pygit2" in sys.modules
print(json.dumps(seen))
"""


def test_polling_and_a_folder_without_repository_import_no_pygit2(
    tmp_path: Path, repo: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    seen = last_json(["-c", PROBE, str(repo), str(plain)])
    assert seen == {
        "head": git(repo, "rev-parse", "HEAD"),
        "plain": "",
        "opened": False,
        "uncommitted": [],
        "delta": ["abc"],
        "before": False,
        "history": 1,  # a repository's history still goes through pygit2
        "after": True,
    }
