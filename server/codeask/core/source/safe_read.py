"""Reading one workspace file for a request (hover, related code, an agent's `find_related`):
a regular file only, never through a symlink swapped in since the path was checked, bounded."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from codeask.core.source.limits import MAX_DISK_READ


def read_regular_text(path: Path, limit: int = MAX_DISK_READ) -> str:
    """A regular file's text, undecodable bytes replaced ('' when missing, larger than `limit`,
    not a regular file, or a symlink: O_NOFOLLOW, and O_NONBLOCK so a FIFO never blocks)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return ""
        return handle.read(limit).decode("utf-8", errors="replace")
