"""Build real git repositories with pygit2 for tests: explicit authors and dates, no git CLI.

Commits go through the working tree and the repository's index, so after `commit()` the
working tree is clean (status tests rely on that). `commit_tree()` skips the working tree
for the big generated histories used by performance checks.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

#: A fixed clock so dates in tests are exact: 2024-03-01T12:00:00Z.
EPOCH = int(datetime(2024, 3, 1, 12, 0, tzinfo=UTC).timestamp())

ALICE = ("Alice Liddell", "alice@example.com")
BOB = ("Bob Builder", "bob@example.com")
CAROL = ("Carol Danvers", "carol@example.com")

Files = Mapping[str, str | bytes | None]
"""path -> new content (str is UTF-8 text, bytes is written as is, None deletes the file)."""


def make_repo(path: Path, branch: str = "main") -> pygit2.Repository:
    """A fresh non-bare repository with `branch` as the unborn HEAD."""
    path.mkdir(parents=True, exist_ok=True)
    return pygit2.init_repository(str(path), bare=False, initial_head=branch)


def signature(who: tuple[str, str], when: int, offset: int = 0) -> pygit2.Signature:
    """A signature at `when` (epoch seconds) with a UTC offset in minutes."""
    return pygit2.Signature(who[0], who[1], when, offset)


def iso(when: int) -> str:
    """The ISO-8601 UTC form codeask.core.git reports for `when`."""
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _workdir(repo: pygit2.Repository) -> Path:
    return Path(repo.workdir)


def write_files(repo: pygit2.Repository, files: Files) -> None:
    """Change the working tree only (for uncommitted-change tests)."""
    write_tree(_workdir(repo), files)


def write_tree(root: Path, files: Files) -> None:
    """Write `files` under `root` (str as UTF-8, bytes as they are; None deletes the file or
    folder), with their folders: a tree for a test, in a repository or not."""
    for rel, content in files.items():
        target = root / rel
        if content is None:
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        target.write_bytes(data)


def stage(repo: pygit2.Repository, paths: Iterable[str]) -> None:
    """Bring the index in line with the working tree for `paths`."""
    index = repo.index
    root = _workdir(repo)
    for rel in paths:
        if (root / rel).exists():
            index.add(rel)
        elif rel in index:
            index.remove(rel)
    index.write()


def _parents(repo: pygit2.Repository) -> list[pygit2.Oid]:
    return [] if repo.head_is_unborn else [repo.head.peel(pygit2.Commit).id]


def commit(
    repo: pygit2.Repository,
    files: Files,
    message: str,
    author: tuple[str, str] = ALICE,
    when: int = EPOCH,
    *,
    offset: int = 0,
    committer: tuple[str, str] | None = None,
    parents: list[pygit2.Oid] | None = None,
) -> str:
    """Write `files`, stage them and commit on HEAD's branch (or detached HEAD); returns the sha."""
    write_files(repo, files)
    stage(repo, files)
    tree = repo.index.write_tree()
    author_sig = signature(author, when, offset)
    committer_sig = signature(committer or author, when, offset)
    parent_ids = _parents(repo) if parents is None else parents
    oid = repo.create_commit("HEAD", author_sig, committer_sig, message, tree, parent_ids)
    return str(oid)


def commit_tree(
    repo: pygit2.Repository,
    index: pygit2.Index,
    files: Files,
    message: str,
    author: tuple[str, str] = ALICE,
    when: int = EPOCH,
) -> str:
    """Commit via an in-memory index, leaving the working tree alone (fast, for big histories)."""
    for rel, content in files.items():
        if content is None:
            if rel in index:
                index.remove(rel)
            continue
        data = content.encode("utf-8") if isinstance(content, str) else content
        index.add(pygit2.IndexEntry(rel, repo.create_blob(data), FileMode.BLOB))
    tree = index.write_tree(repo)
    sig = signature(author, when)
    return str(repo.create_commit("HEAD", sig, sig, message, tree, _parents(repo)))


def add_gitlink(repo: pygit2.Repository, path: str, url: str, target: str, message: str) -> str:
    """Commit a submodule entry (a gitlink plus .gitmodules) without cloning anything."""
    gitmodules = f'[submodule "{path}"]\n\tpath = {path}\n\turl = {url}\n'
    write_files(repo, {".gitmodules": gitmodules})
    index = repo.index
    index.add(".gitmodules")
    index.add(pygit2.IndexEntry(path, pygit2.Oid(hex=target), FileMode.COMMIT))
    index.write()
    tree = index.write_tree()
    sig = signature(ALICE, EPOCH + 10_000)
    return str(repo.create_commit("HEAD", sig, sig, message, tree, _parents(repo)))


def amend(repo: pygit2.Repository, message: str) -> str:
    """Replace HEAD by a commit with the same tree and parents, new message (commit --amend)."""
    head = repo.head.peel(pygit2.Commit)
    oid = repo.amend_commit(head, "HEAD", message=message)
    return str(oid)


def rewrite(repo: pygit2.Repository, base: str, prefix: str = "reworded: ") -> list[str]:
    """A rebase-like rewrite: replay every commit after `base` with a new message; returns new shas.

    The branch is moved to the new tip, so the old commits become unreachable (as after
    `git rebase -i` with reword), while the trees stay the same.
    """
    old = [c for c in repo.walk(repo.head.target, pygit2.enums.SortMode.TOPOLOGICAL)]
    keep: list[pygit2.Commit] = []
    for c in old:
        if str(c.id) == base:
            break
        keep.append(c)
    parent = pygit2.Oid(hex=base)
    new: list[str] = []
    for c in reversed(keep):
        message = prefix + c.message
        parent = repo.create_commit(None, c.author, c.committer, message, c.tree_id, [parent])
        new.append(str(parent))
    _move_head(repo, parent)
    return new


def _move_head(repo: pygit2.Repository, target: pygit2.Oid) -> None:
    if repo.head_is_detached:
        repo.set_head(target)
    else:
        repo.head.set_target(target)


def detach(repo: pygit2.Repository, sha: str) -> None:
    """Point HEAD directly at `sha` (detached HEAD) and check it out."""
    oid = pygit2.Oid(hex=sha)
    repo.checkout_tree(repo[oid], strategy=pygit2.enums.CheckoutStrategy.FORCE)
    repo.set_head(oid)


def shallow_clone(source: Path, dest: Path, depth: int = 1) -> Path:
    """`git clone --depth N file://source dest` via the git CLI (pygit2 cannot clone shallow)."""
    subprocess.run(
        ["git", "clone", "--quiet", "--depth", str(depth), f"file://{source}", str(dest)],
        check=True,
        capture_output=True,
    )
    return dest
