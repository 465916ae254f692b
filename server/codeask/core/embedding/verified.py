"""Which pinned model files this user's codeask has already hashed, so a later load can skip it.

Hashing potion's 15 MB matrix was ~11 ms of every one-shot `codeask search` (issue 29). A file
whose sha256 matched its pin is remembered with the identity of the exact file that was hashed
(`os.fstat` of the open handle: device, inode, size, mtime and ctime in ns); a load that finds
the same identity skips the hash. Any write to the file changes its ctime (which no program can
set back), a replaced file has another inode, so a different file is hashed again and refused
as before. What this gives up: bytes changed without any write through the filesystem (disk
rot) are no longer noticed after the first check. The record is one small JSON file in the
user's cache folder, written atomically; unreadable or unwritable, every load hashes.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from codeask.core.runtime import private_files


def identity(stat: os.stat_result) -> list[int]:
    """What changes when a file is written or replaced."""
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


class VerifiedFiles:
    """A record of (file, pinned sha256) pairs found to match, keyed by the file's identity."""

    def __init__(self, record: Path) -> None:
        self.record = record

    def _read(self) -> dict[str, list[object]]:
        try:
            data = json.loads(self.record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def known(self, path: Path, stat: os.stat_result, sha256: str) -> bool:
        """Whether this very file (its identity now) was hashed and matched `sha256`."""
        entry = self._read().get(str(path))
        return entry == [*identity(stat), sha256]

    def remember(self, path: Path, stat: os.stat_result, sha256: str) -> None:
        """Note that the file with this identity matched `sha256` (best effort)."""
        data = self._read()
        data[str(path)] = [*identity(stat), sha256]
        with contextlib.suppress(OSError):
            private_files.make_dir(self.record.parent)
            private_files.replace_bytes(self.record, json.dumps(data).encode())
