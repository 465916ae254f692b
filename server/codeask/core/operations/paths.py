"""The one path guard, for every face: which files a request may name and read from disk.

A path from a client (an editor's `file:` URI, an agent's absolute path or one relative to the
first workspace folder) counts only when its real path (symlinks and `..` resolved) lies inside
a workspace folder, and that folder's discovery rules would index it (ignore files,
`index.exclude`, credential file names, binary and size caps): `../../etc/passwd`,
`/etc/passwd`, an in-workspace symlink to a file outside, or a `.env` are refused, saying why.
What the index would skip, a request cannot read either. Reads take a regular file only, never
through a symlink swapped in since the check, and at most `MAX_DISK_READ`. A path shown with a
token redacted (`keys/«redacted:github-pat».txt`) names the one file it stands for.

The language server turns URIs into paths (pygls) and uses the editor's own text for open
documents (any scheme, any place: the user opened it); everything it reads from disk, and
every path an MCP tool takes, goes through here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codeask.config import IndexSettings
from codeask.core.indexer import FolderIndex
from codeask.core.operations.context import redact_path, unredact_path
from codeask.core.source.discover import SourceFile, check_file
from codeask.core.source.limits import MAX_DISK_READ
from codeask.core.source.safe_read import read_regular_text


class PathRefused(ValueError):
    """A path a request may not use; the message says why and names it."""


@dataclass(frozen=True)
class WorkspaceFile:
    """A file a request may use: its folder index and its path relative to that folder."""

    folder: FolderIndex
    rel: str
    path: Path


def innermost(path: Path, roots: Iterable[Path]) -> Path | None:
    """The innermost workspace root containing `path` (None when outside all)."""
    inside = [root for root in roots if path == root or root in path.parents]
    return max(inside, key=lambda root: len(root.parts), default=None)


def refusal(root: Path, path: Path, index: IndexSettings) -> str | None:
    """Why `path` (inside `root`) is not to be read: the index's skip rules bind requests too
    (None when discovery would index it)."""
    verdict = check_file(root, path.relative_to(root).as_posix(), index)
    if isinstance(verdict, SourceFile):
        return None
    return verdict.reason if verdict is not None else "ignored by the workspace's ignore rules"


def resolve(raw: str, folders: Sequence[FolderIndex]) -> WorkspaceFile:
    """The workspace file a client's path names, or PathRefused saying why not."""
    if not folders:
        raise PathRefused("no workspace folder is open")
    given = Path(raw).expanduser()
    shown = given if given.is_absolute() else folders[0].root / given
    candidate = unredact_path(shown)  # a path shown with a token redacted (results.py)
    if candidate is None:
        raise PathRefused(f"`path` {raw!r} names no file (or more than one) in the workspace")
    try:
        real = candidate.resolve(strict=False)
    except (OSError, RuntimeError, ValueError) as exc:  # symlink loops, NUL
        raise PathRefused(f"`path` cannot be resolved: {exc}") from None
    by_root = {folder.root: folder for folder in folders}
    root = innermost(real, by_root)
    if root is None:
        raise PathRefused(
            f"`path` {raw!r} is outside every workspace folder (after resolving symlinks); "
            f"folders: {', '.join(str(f.root) for f in folders)}"
        )
    folder = by_root[root]
    why = refusal(root, real, folder.settings.index)
    rel = real.relative_to(root).as_posix()
    if why is not None:
        raise PathRefused(
            f"`path` {redact_path(rel)!r} is not indexed here ({why}), so it is not read"
        )
    return WorkspaceFile(folder, rel, real)


def read_text(path: Path) -> str:
    """A guarded file's text ('' when missing, too large or a symlink swapped in since)."""
    return read_regular_text(path, MAX_DISK_READ)
