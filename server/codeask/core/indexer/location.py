"""Where a folder's index lives, which roots may be indexed, and who may write the index.

Decided before anything is read or written, so a refused root or a busy index costs nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Literal, TypedDict

from codeask.config import Settings, cache_dir
from codeask.core.runtime import private_files
from codeask.core.source.names import display_path, is_utf8
from codeask.core.storage import writer_lock
from codeask.core.storage.writer_lock import LockInfo, WriterLock

#: Who may write an index folder: "write" takes the writer lock (IndexBusy if another process
#: has it), "read" creates and writes nothing, "auto" writes when the lock is free, else reads.
Mode = Literal["write", "read", "auto"]

#: Set to 1 to allow indexing `$HOME` or `/` as a workspace root (CLI: --allow-broad-root).
ALLOW_BROAD_ROOT_ENV = "CODEASK_ALLOW_BROAD_ROOT"


class OpenOptions(TypedDict, total=False):
    """How a folder index is opened, passed on unchanged by whoever opens one for a caller."""

    mode: Mode
    kind: str
    """Who writes (`index`, `serve`), as the writer lock tells other processes."""


class IndexBusy(Exception):
    """Another process is the writer of this index folder."""

    def __init__(self, folder: Path, holder: LockInfo | None) -> None:
        self.folder = folder
        self.holder = holder
        who = holder.describe() if holder else "another process"
        super().__init__(f"index at {folder} is being written by {who}")


class RootRefused(Exception):
    """A root too broad to index (the home folder or `/`) without an explicit opt-in."""


def check_root(root: Path, *, allow_broad: bool = False) -> None:
    """Refuse `/`, the home folder and every folder that holds it (`/home`, `/Users`, ...):
    indexing them reads every file the user owns."""
    if allow_broad or os.environ.get(ALLOW_BROAD_ROOT_ENV) == "1":
        return
    resolved = root.resolve()
    for home in _homes():
        if resolved == home or resolved in home.parents:
            raise RootRefused(
                f"refusing to index {root}: it is your home folder, a folder holding it, or the "
                "file-system root. Open a project folder instead, or opt in with "
                f"--allow-broad-root ({ALLOW_BROAD_ROOT_ENV}=1)"
            )


def _homes() -> set[Path]:
    """`/`, `$HOME` and the account's home from the password database (they may differ)."""
    homes = {Path("/").resolve(), Path.home().resolve()}
    with contextlib.suppress(KeyError, ImportError):
        import pwd

        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir).resolve())
    return homes


def resolved_root(root: Path) -> Path:
    """`root` resolved; refused when its path is not UTF-8 (nothing could store, search or
    send its paths)."""
    resolved = root.resolve()
    if not is_utf8(str(resolved)):
        shown = display_path(str(resolved))
        raise RootRefused(f"refusing to index {shown}: its path is not valid UTF-8; rename it")
    return resolved


def index_dir_for(root: Path, settings: Settings) -> Path:
    """Where a folder's index lives: `<root>/.codeask`, the user cache, or a configured path."""
    location = settings.index.location
    tag = f"{root.name or 'root'}-{hashlib.blake2b(os.fsencode(root), digest_size=4).hexdigest()}"
    if not location:
        return root / ".codeask"
    if location == "cache":
        return cache_dir(settings) / "indexes" / tag
    path = Path(location).expanduser()
    return path / tag if path.is_absolute() else root / path


def has_index(root: Path, settings: Settings) -> bool:
    """Whether `root` has a saved index (a CURRENT pointer); checks without creating anything."""
    return (index_dir_for(root.resolve(), settings) / "CURRENT").is_file()


def take_writer(
    root: Path, folder: Path, kind: str, mode: Mode, *, allow_broad_root: bool = False
) -> WriterLock | None:
    """The writer lock of `folder` as `mode` allows (None: this process only reads).

    Mode "write" raises IndexBusy when another process holds the lock; "read" never takes it.
    A new writer keeps the index out of `git status` without touching the repository.
    """
    if mode == "read":
        return None
    check_root(root, allow_broad=allow_broad_root)
    writer = WriterLock.try_acquire(folder, kind)
    if writer is None and mode == "write":
        raise IndexBusy(folder, writer_lock.holder(folder))
    if writer is not None:
        ignore = folder / ".gitignore"
        if not ignore.exists():
            text = "# created by codeask: the index is local and rebuildable\n*\n"
            private_files.write_bytes(ignore, text.encode())
    return writer
