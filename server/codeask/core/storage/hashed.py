"""The component hashes this process has computed, by the file's identity, so a second open of
the same snapshot in the same process does not hash the same bytes again (issue 42).

Why: the daemon's searches open a read copy (which hashes the snapshot's components, the big
vector tiers in the background: ~2 CPU-s on the kernel), and `codeask index` then opens the
writer on the same snapshot and hashed every byte again. A component is trusted again only
while its inode, size and mtime_ns are those it had when it was hashed (a write, a truncation
or a file renamed over it moves one of them), for the digest that hash gave, and only when it
was last written clearly before the hash began (SETTLED_NS); a mismatch is never taken for a
match, so damage seen once is seen again. Trusted as much as a writer trusts the bytes it
hashed at its open for the hours it holds them; what the mtime cannot tell (bytes rotting on
the disk, a write with its mtime set back) is the same for both.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, BinaryIO

#: A file is remembered only when it was last written (mtime) this long before its hash
#: began: file times tick in coarse steps (a few ms), so a write in the same step as the last
#: one could leave both unmoved (git's "racy clean" case); a write after the hash began gets a
#: time no earlier than a step before that, which then differs from the one remembered.
SETTLED_NS = 200_000_000

#: Files remembered at most (oldest forgotten first): a snapshot has ~10 components.
LIMIT = 256

_Identity = tuple[int, int, int, int]


def _identity(info: os.stat_result) -> _Identity:
    """Not ctime: a save hard-links an unchanged component into the next snapshot, which moves
    the inode's ctime, not its bytes (the writer's check of the static tier after its first
    pass would hash it again)."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


class HashedFiles:
    """identity -> blake2b of the files this process hashed."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._seen: OrderedDict[_Identity, str] = OrderedDict()
        self._running: dict[_Identity, threading.Event] = {}
        self._lock = threading.Lock()
        self._limit = limit
        self.reused = 0
        """How many hashes were spared (tests tell a reuse from a second hash)."""
        self.waits = 0
        """How many checks waited for another thread's hash of the same file."""

    def digest(self, path: Path) -> str:
        """The file's blake2b (16 bytes, hex), remembered when the file did not change while
        it was read; a check of the same file meanwhile waits for it (`intact`)."""
        digest = hashlib.blake2b(digest_size=16)
        started = time.time_ns()
        with path.open("rb") as handle:
            before = _identity(os.fstat(handle.fileno()))
            done = threading.Event()
            with self._lock:
                mine = self._running.setdefault(before, done) is done
            try:
                self._read(handle, digest)
                after = _identity(os.fstat(handle.fileno()))
                value = digest.hexdigest()
                if before == after and before[3] < started - SETTLED_NS:
                    self._remember(before, value)
            finally:
                if mine:
                    with self._lock:
                        del self._running[before]
                    done.set()
        return value

    def _read(self, handle: BinaryIO, digest: Any) -> None:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)

    def _remember(self, identity: _Identity, value: str) -> None:
        with self._lock:
            self._seen[identity] = value
            self._seen.move_to_end(identity)
            while len(self._seen) > self._limit:
                self._seen.popitem(last=False)

    def intact(self, path: Path, expected: str) -> bool:
        """Whether the file's bytes hash to `expected`: known without reading them when this
        process hashed this very file (same identity) to that digest before, or is hashing
        it now (a released read copy's background check: the writer waits for it)."""
        identity = _identity(path.stat())
        with self._lock:
            running = self._running.get(identity)
            self.waits += running is not None
        if running is not None:
            running.wait()
        with self._lock:
            known = self._seen.get(identity)
        if known == expected:
            self.reused += 1
            return True
        return self.digest(path) == expected


#: The process's one record.
HASHED = HashedFiles()
