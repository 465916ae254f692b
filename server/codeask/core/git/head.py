"""HEAD's commit read from the repository's files, without pygit2 (issue 29).

A language server polls HEAD to notice a branch switch, and a folder with no repository at all
must not pay ~20 MB of RSS for a library that would only say so. Git keeps HEAD as a short
file: a `ref: refs/heads/<branch>` line (the branch is a loose file or a line of `packed-refs`,
and may itself be a symbolic ref) or, detached, a sha. A linked worktree's `.git` is a
`gitdir: <path>` file, and its refs live in the main repository (`commondir`).

Only what git's documented layout says for certain is answered here; anything else (a bare
repository on the way up, `core.bare` or `core.worktree` set, the reftable format, a file that
does not parse) answers `UNKNOWN`, and the caller asks pygit2 (`repo.head_sha`). Not checked, as
pygit2 would: that the sha names a commit present in the object store (a branch naming a
missing or non-commit object gives its sha here, '' from pygit2) and libgit2's ownership check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

#: `read_head`'s answer when the files alone cannot say (ask pygit2).
UNKNOWN: Final = None
#: A sha-1 or sha-256 object name.
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
#: How many symbolic refs are followed (git's own limit is 5).
_MAX_LINKS = 5
#: `core.*` settings under which the working tree is not the folder holding `.git`.
_ODD_CONFIG = re.compile(r"^\s*(bare\s*=\s*true|worktree\s*=|refstorage\s*=)", re.I | re.M)


class Unknown(Exception):
    """The files alone cannot say: a layout or a value this module does not read."""


@dataclass(frozen=True)
class GitDirs:
    """Where a working tree's repository keeps HEAD (`gitdir`) and its refs (`commondir`)."""

    gitdir: Path
    commondir: Path


def find_git_dirs(root: Path) -> GitDirs | None:
    """The repository holding `root`; None when there is certainly none: no `.git` and no
    repository-like folder from `root` up to `/` (raises `Unknown` when unsure)."""
    start = root.resolve()
    for folder in (start, *start.parents):
        if (folder / "HEAD").exists():
            raise Unknown(f"{folder} may itself be a repository")
        dotgit = folder / ".git"
        if dotgit.is_dir():
            return _dirs(dotgit)
        if dotgit.exists():
            return _linked(dotgit)
    return None


def _linked(dotgit: Path) -> GitDirs:
    """A `.git` file (`gitdir: <path>`): a linked worktree or a submodule."""
    line = dotgit.read_text(encoding="utf-8").strip()
    if not line.startswith("gitdir:") or "\n" in line:
        raise Unknown(f"{dotgit} is not a gitdir link")
    target = Path(line[len("gitdir:") :].strip())
    return _dirs(target if target.is_absolute() else dotgit.parent / target)


def _dirs(gitdir: Path) -> GitDirs:
    """The dirs of a `.git` folder whose layout is the plain one."""
    common = gitdir
    if (gitdir / "commondir").exists():
        named = Path((gitdir / "commondir").read_text(encoding="utf-8").strip())
        common = named if named.is_absolute() else gitdir / named
    config = (common / "config").read_text(encoding="utf-8", errors="replace")
    plain = (gitdir / "HEAD").is_file() and (common / "objects").is_dir()
    if not plain or (common / "reftable").exists() or _ODD_CONFIG.search(config):
        raise Unknown(f"{gitdir}: not the plain layout")
    return GitDirs(gitdir, common)


def read_head(root: Path) -> str | None:
    """HEAD's sha for the repository holding `root`; '' when there is no repository or HEAD is
    unborn (a branch with no commit yet); `UNKNOWN` when only pygit2 can tell."""
    try:
        found = find_git_dirs(root)
        return _resolve(found, "HEAD") if found is not None else ""
    except (Unknown, OSError, UnicodeDecodeError):
        return UNKNOWN


def _resolve(dirs: GitDirs, name: str) -> str:
    """The sha a ref names, following symbolic refs; '' when the branch does not exist yet."""
    for _ in range(_MAX_LINKS + 1):
        value = _ref_value(dirs, name)
        if value is None and name != "HEAD":
            return ""  # unborn: HEAD names a branch with no commit yet
        if value is not None and value.startswith("ref:"):
            name = value[len("ref:") :].strip()
            if name.startswith("refs/"):
                continue
        if value is not None and _SHA.fullmatch(value):
            return value
        raise Unknown(f"{name}: {value!r}")
    raise Unknown(f"more than {_MAX_LINKS} symbolic refs")


def _ref_value(dirs: GitDirs, name: str) -> str | None:
    """A ref's stored value (`ref: ...` or a sha): its loose file (the worktree's own first,
    then the shared one), else its `packed-refs` line; None when neither has it."""
    for folder in (dirs.gitdir, dirs.commondir):
        path = folder / name
        if path.is_file():
            return path.read_text(encoding="utf-8").strip()
    packed = dirs.commondir / "packed-refs"
    if not packed.is_file():
        return None
    for line in packed.read_text(encoding="utf-8").splitlines():
        sha, _, ref = line.partition(" ")
        if ref.strip() == name and not line.startswith(("#", "^")):
            return sha.strip()
    return None
