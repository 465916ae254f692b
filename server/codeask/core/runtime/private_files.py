"""Owner-only folders and files for everything that holds indexed text (issue round 3, item 9).

An index stores the text of every file it read: a 0600 source must not land in a 0644
`chunks.rec` that another local user can grep. So every folder codeask writes for an index
or its caches is created 0700 and every file 0600, whatever the umask, and an index made by an
older version (0755/0644) loses its group and other bits on the next write (`tighten_tree`).

SQLite creates a database's -wal, -shm and -journal files with the database file's own mode,
so `sqlite_file` (the file made 0600 before SQLite opens it) covers them too.

Only files this user owns are changed (chmod on another user's file would fail anyway), and a
failure to change a mode is logged, never raised: privacy is best-effort on a file system
without modes (FAT, some network mounts), and indexing must not stop over it.
A leaf: imports only the standard library.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

log = logging.getLogger("codeask.core.runtime")

DIR_MODE = 0o700
FILE_MODE = 0o600
#: Group and other permission bits: none may be set on anything an index writes.
OTHERS = 0o077
#: Files SQLite keeps beside a database.
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def tighten(path: Path | str) -> None:
    """Drop the group/other bits of `path` (never follows a symlink; missing: nothing)."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode) or not info.st_mode & OTHERS or info.st_uid != os.getuid():
        return
    try:
        os.chmod(path, stat.S_IMODE(info.st_mode) & ~OTHERS)
    except OSError as exc:
        log.warning("could not make %s owner-only: %s", path, exc)


def tighten_tree(folder: Path) -> None:
    """`tighten` the folder and everything under it: an older index made 0644 files."""
    tighten(folder)
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            tighten(os.path.join(top, name))


def make_dir(path: Path) -> Path:
    """Create `path` and its missing parents 0700; an existing `path` is made owner-only."""
    missing: list[Path] = []
    at = path
    while not at.exists() and at != at.parent:
        missing.append(at)
        at = at.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            os.mkdir(folder, DIR_MODE)
    tighten(path)
    return path


def open_fd(path: Path | str, flags: int) -> int:
    """`os.open(path, flags | O_CREAT | O_CLOEXEC)` as 0600; an existing wider file is
    narrowed through the descriptor (no window where a new file is readable by others)."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        info = os.fstat(fd)
        if info.st_mode & OTHERS and info.st_uid == os.getuid():
            os.fchmod(fd, stat.S_IMODE(info.st_mode) & ~OTHERS)
    except OSError as exc:
        log.warning("could not make %s owner-only: %s", path, exc)
    return fd


def write_bytes(path: Path, data: bytes, *, fsync: bool = False) -> None:
    """Write `data` to `path` (created 0600, truncated), fsynced when asked."""
    fd = open_fd(path, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        if fsync:
            os.fsync(handle.fileno())


def replace_bytes(path: Path, data: bytes) -> None:
    """Atomically replace `path` by `data`: an owner-only temp file beside it, then rename
    (a reader never sees half a file; a failed write leaves no temp file behind)."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        write_bytes(temporary, data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def sqlite_file(path: Path) -> None:
    """Make a database file (created empty if missing) and its sidecars owner-only before
    SQLite opens it: SQLite gives a new -wal/-shm/-journal the database file's mode."""
    make_dir(path.parent)
    os.close(open_fd(path, os.O_RDWR))
    for suffix in SQLITE_SIDECARS:
        tighten(f"{path}{suffix}")
