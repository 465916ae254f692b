"""Who holds an flock, asked without taking it: the index's writer lock
(core/storage/writer_lock.py) and the daemon's lock (daemon/server.py) both say who holds them
this way. A shared lock that cannot be had means a holder; its note (a JSON record, a pid) is
read then. The file is opened read-only and never created, so asking writes nothing."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

Note = TypeVar("Note")


def held_note(path: Path, read: Callable[[int], Note]) -> Note | None:
    """`read(fd)` of the lock file at `path` while another process holds it; None when nobody
    holds it or there is no file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return read(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
