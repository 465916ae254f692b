"""Opening the repository that holds a workspace folder, and what it says about its files.

The workspace folder may sit below the working tree's top (monorepos): `Scope` maps paths
between the two, and files outside the workspace folder are left out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from codeask.core.git.head import Unknown, find_git_dirs, read_head

if TYPE_CHECKING:
    import pygit2

# pygit2 (~20 MB of RSS) is imported by the functions that use it, not with this module: a
# language server imports `head_sha` at start, and on a folder with no repository (or with
# history off) it never needs more than the files `core/git/head.py` reads.


@functools.cache
def git_errors() -> tuple[type[Exception], ...]:
    """What a missing, corrupt or unreadable repository raises; callers turn it into "no
    history". A function so that naming it does not import pygit2."""
    import pygit2

    return (pygit2.GitError, KeyError, ValueError, OSError)


def __getattr__(name: str) -> tuple[type[Exception], ...]:
    """`GIT_ERRORS`, as before: pygit2 is imported by the first module that asks for it."""
    if name == "GIT_ERRORS":
        return git_errors()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _uncommitted_flags() -> int:
    """Status flags of a file that differs from HEAD (deletions are left out by the caller)."""
    from pygit2.enums import FileStatus

    return int(
        FileStatus.INDEX_NEW
        | FileStatus.INDEX_MODIFIED
        | FileStatus.INDEX_RENAMED
        | FileStatus.INDEX_TYPECHANGE
        | FileStatus.WT_NEW
        | FileStatus.WT_MODIFIED
        | FileStatus.WT_RENAMED
        | FileStatus.WT_TYPECHANGE
        | FileStatus.CONFLICTED
    )


@dataclass(frozen=True)
class Scope:
    """Where the workspace folder sits inside the repository's working tree."""

    prefix: str
    """POSIX path of the workspace folder relative to the working tree ('' at the top)."""

    def to_workspace(self, repo_path: str) -> str | None:
        """A repository path as a workspace path, None when outside the workspace."""
        if not self.prefix:
            return repo_path
        head = self.prefix + "/"
        return repo_path[len(head) :] if repo_path.startswith(head) else None

    def to_repo(self, rel_path: str) -> str:
        """A workspace path as a repository path."""
        rel = rel_path.replace("\\", "/").strip("/")
        if not self.prefix:
            return rel
        return f"{self.prefix}/{rel}" if rel else self.prefix


def open_repo(root: Path) -> pygit2.Repository | None:
    """The repository containing `root`, or None (not a repo, bare, broken): history off."""
    opened = open_scoped(root)
    return opened[0] if opened else None


def open_scoped(root: Path) -> tuple[pygit2.Repository, Scope] | None:
    """The repository containing `root` and where `root` sits in it; None as for `open_repo`.
    A folder with no `.git` on its way up to `/` is answered without importing pygit2."""
    if _certainly_none(root):
        return None
    import pygit2

    try:
        found = pygit2.discover_repository(str(root))
        if not found:
            return None
        repo = pygit2.Repository(found)
        if repo.is_bare or not repo.workdir:
            return None
        rel = Path(root).resolve().relative_to(Path(repo.workdir).resolve()).as_posix()
    except git_errors():
        return None
    return repo, Scope("" if rel == "." else rel)


def _certainly_none(root: Path) -> bool:
    """No repository can hold `root` (the files say so; unsure is False)."""
    try:
        return find_git_dirs(root) is None
    except (Unknown, OSError, UnicodeDecodeError):  # pygit2 decides
        return False


def head_commit(repo: pygit2.Repository) -> pygit2.Commit | None:
    """HEAD as a commit; None when unborn or unreadable (broken ref)."""
    import pygit2

    try:
        if repo.head_is_unborn:
            return None
        return repo.head.peel(pygit2.Commit)
    except git_errors():
        return None


def head_sha(root: Path) -> str:
    """The HEAD commit of the repository holding `root`; '' without one (or unborn, broken).
    Read from the repository's files when their layout is the plain one (`head.read_head`:
    a poll costs no pygit2), else through pygit2."""
    sha = read_head(root)
    if sha is not None:
        return sha
    repo = open_repo(root)
    commit = head_commit(repo) if repo is not None else None
    return str(commit.id) if commit is not None else ""


def resolve(repo: pygit2.Repository, rev: str) -> pygit2.Commit | None:
    """The commit a revision names (sha, ref, `HEAD~2`); None when it names none."""
    import pygit2

    errors: tuple[type[Exception], ...] = (*git_errors(), pygit2.InvalidSpecError)
    try:
        return repo.revparse_single(rev).peel(pygit2.Commit)
    except errors:
        return None


def shallow_boundary(repo: pygit2.Repository) -> set[str]:
    """Commits whose parents were cut off by a shallow clone (.git/shallow)."""
    if not repo.is_shallow:
        return set()
    try:
        text = (Path(repo.path) / "shallow").read_text(encoding="ascii")
    except OSError:
        return set()
    return {line.strip() for line in text.splitlines() if line.strip()}


def changed_between(root: Path, old: str, new: str) -> list[str] | None:
    """Workspace-relative paths that differ between two commits' trees; None if unknowable.

    A branch switch then re-checks exactly the files git says changed."""
    opened = open_scoped(root)
    if opened is None or not old or not new:
        return None
    repo, scope = opened
    import pygit2

    try:
        old_tree = repo.revparse_single(old).peel(pygit2.Commit).tree
        new_tree = repo.revparse_single(new).peel(pygit2.Commit).tree
        diff = old_tree.diff_to_tree(new_tree)
    except git_errors():
        return None
    return sorted(_delta_paths(diff, scope))


def uncommitted_paths(root: Path) -> set[str]:
    """Files modified, staged or new (not ignored) relative to HEAD; deleted files left out."""
    opened = open_scoped(root)
    if opened is None:
        return set()
    repo, scope = opened
    try:
        status = repo.status(untracked_files="all", ignored=False)
    except git_errors():
        return set()
    from pygit2.enums import FileStatus

    uncommitted = _uncommitted_flags()
    paths: set[str] = set()
    for repo_path, flags in status.items():
        rel = scope.to_workspace(repo_path)
        if rel is not None and flags & uncommitted and not flags & FileStatus.WT_DELETED:
            paths.add(rel)
    return paths


def diff_to_workdir(root: Path, base: str) -> set[str] | None:
    """Workspace paths whose working-tree content differs from commit `base`'s tree (later
    commits on any branch, staged, unstaged, untracked but not ignored, deleted; both sides of
    a rename); None if unknowable (no repository, unknown commit).

    The tree is compared with the working tree itself, not with HEAD, so `base` need not be an
    ancestor of HEAD (a revision published from another branch)."""
    opened = open_scoped(root)
    if opened is None or not base:
        return None
    repo, scope = opened
    commit = resolve(repo, base)
    if commit is None:
        return None
    from pygit2.enums import DiffOption

    flags = DiffOption.INCLUDE_UNTRACKED | DiffOption.RECURSE_UNTRACKED_DIRS
    try:
        diff = commit.tree.diff_to_workdir(flags=flags)
    except git_errors():
        return None
    return _delta_paths(diff, scope)


def _delta_paths(diff: pygit2.Diff, scope: Scope) -> set[str]:
    """Workspace paths on either side of a diff's deltas (both sides of a rename)."""
    paths: set[str] = set()
    for delta in diff.deltas:
        for path in (delta.old_file.path, delta.new_file.path):
            rel = scope.to_workspace(path) if path else None
            if rel is not None:
                paths.add(rel)
    return paths
