"""The MCP server's path guard: which files a tool may name and read.

A path from an agent (absolute, or relative to the first workspace folder) counts only when
its real path (symlinks and `..` resolved) lies inside a workspace folder, and the folder's
discovery rules would index it (ignore files, `index.exclude`, credential file names, binary
and size caps): `../../etc/passwd`, `/etc/passwd`, an in-workspace symlink to a file outside,
or a `.env` are refused with a tool error. Reads never follow a symlink swapped in since. A path
shown with a token redacted (`keys/«redacted:github-pat».txt`) names the one file it stands for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codeask.core.indexer import FolderIndex
from codeask.core.operations import redact_path, unredact_path
from codeask.core.source.discover import SourceFile, check_file
from codeask.core.source.limits import MAX_DISK_READ
from codeask.core.source.safe_read import read_regular_text
from codeask.mcp.arguments import ArgumentError


@dataclass(frozen=True)
class WorkspaceFile:
    """A file a tool may use: its folder index and its path relative to that folder."""

    folder: FolderIndex
    rel: str
    path: Path


def resolve(raw: str, folders: list[FolderIndex]) -> WorkspaceFile:
    """The workspace file `raw` names, or ArgumentError saying why it is refused."""
    if not folders:
        raise ArgumentError("no workspace folder is open")
    given = Path(raw).expanduser()
    shown = given if given.is_absolute() else folders[0].root / given
    candidate = unredact_path(shown)  # a path shown with a token redacted (results.py)
    if candidate is None:
        raise ArgumentError(f"`path` {raw!r} names no file (or more than one) in the workspace")
    try:
        real = candidate.resolve(strict=False)
    except (OSError, RuntimeError, ValueError) as exc:  # symlink loops, NUL
        raise ArgumentError(f"`path` cannot be resolved: {exc}") from None
    folder = innermost(real, folders)
    if folder is None:
        raise ArgumentError(
            f"`path` {raw!r} is outside every workspace folder (after resolving symlinks); "
            f"folders: {', '.join(str(f.root) for f in folders)}"
        )
    rel = real.relative_to(folder.root).as_posix()
    verdict = check_file(folder.root, rel, folder.settings.index)
    if not isinstance(verdict, SourceFile):
        why = verdict.reason if verdict is not None else "ignored by the workspace's ignore rules"
        shown_rel = redact_path(rel)
        raise ArgumentError(f"`path` {shown_rel!r} is not indexed here ({why}), so it is not read")
    return WorkspaceFile(folder, rel, real)


def innermost(path: Path, folders: list[FolderIndex]) -> FolderIndex | None:
    """The innermost workspace folder containing `path` (None when outside all)."""
    inside = [f for f in folders if path == f.root or f.root in path.parents]
    return max(inside, key=lambda f: len(f.root.parts), default=None)


def read_text(path: Path) -> str:
    """A regular file's text ('' when missing, too large or a symlink swapped in since)."""
    return read_regular_text(path, MAX_DISK_READ)
