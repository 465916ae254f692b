"""One writer per index folder: an OS file lock held for the writer's whole lifetime.

`<index folder>/writer.lock` is locked with `flock(LOCK_EX | LOCK_NB)`. The kernel drops the
lock when the holder exits for any reason (SIGKILL included), so a crash never leaves a stale
lock to wipe by hand. The file's content (pid, kind, start time) is only for messages: the
lock itself is the truth, and the file is never deleted (unlinking a locked file would let a
second writer lock a fresh inode). flock is POSIX (Linux, macOS); the project targets those.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import msgspec

from codeask.core.runtime import private_files
from codeask.core.runtime.flock_probe import held_note

LOCK_NAME = "writer.lock"
#: Requests other processes leave for the writer (`codeask index --rebuild` under a server).
REQUESTS = "requests"


class LockInfo(msgspec.Struct):
    """Who holds the writer lock: for messages such as "being written by codeask index"."""

    pid: int
    kind: str
    started: float

    def describe(self) -> str:
        """`codeask index (pid 123) since 16:40:02`."""
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started))
        return f"codeask {self.kind} (pid {self.pid}) since {since}"


class WriterLock:
    """A held writer lock; `release()` (or process exit) frees it."""

    def __init__(self, path: Path, fd: int, info: LockInfo) -> None:
        self.path = path
        self.info = info
        self._fd: int | None = fd

    @classmethod
    def try_acquire(cls, folder: Path, kind: str) -> WriterLock | None:
        """Take the lock of `folder` (created owner-only if needed), or None when another
        process has it. The new writer makes the whole folder owner-only: an index written by
        an older version (0644 files) is tightened before anything new is written into it."""
        private_files.make_dir(folder)
        path = folder / LOCK_NAME
        fd = private_files.open_fd(path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        private_files.tighten_tree(folder)
        info = LockInfo(pid=os.getpid(), kind=kind, started=time.time())
        os.ftruncate(fd, 0)
        os.pwrite(fd, msgspec.json.encode(info), 0)
        return cls(path, fd, info)

    @property
    def held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._fd is not None

    def release(self) -> None:
        """Give the lock up (idempotent); the file stays for the next writer."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def request(folder: Path, name: str) -> None:
    """Ask the folder's writer for something (e.g. "rebuild"): a file it takes on its next poll."""
    requests = folder / REQUESTS
    private_files.make_dir(requests)
    private_files.replace_bytes(requests / name, f"{os.getpid()} {time.time()}\n".encode())


def take_request(folder: Path, name: str) -> bool:
    """The writer's side: True (once) when `name` was requested since the last call."""
    try:
        (folder / REQUESTS / name).unlink()
    except FileNotFoundError:
        return False
    return True


def holder(folder: Path) -> LockInfo | None:
    """Who holds the lock of `folder` now; None when nobody does (or the folder has no lock).

    Opens the file read-only and never creates it, so readers stay write-free.
    """
    return held_note(folder / LOCK_NAME, _read_info)


def _read_info(fd: int) -> LockInfo:
    """The holder's note; a holder that has not written it yet is 'unknown'."""
    try:
        return msgspec.json.decode(os.pread(fd, 4096, 0), type=LockInfo)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return LockInfo(pid=0, kind="unknown", started=time.time())
