"""What a pass run for a face answers (`codeask index` through the daemon): the report and
the folder's status after it, or why it did not run here."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from codeask.config import Settings
from codeask.core.indexer import IndexReport, IndexStatus
from codeask.core.storage.writer_lock import LockInfo


@dataclass
class PassDone:
    """The pass ran on the folder's driver: what `FolderIndex.refresh` (or `rebuild`)
    reported and `FolderIndex.status()` after it, as in a process of its own."""

    report: IndexReport
    status: IndexStatus
    settings: Settings
    warnings: list[str] = field(default_factory=list)
    """The folder's settings warnings (its process would have logged them at the open)."""


@dataclass
class PassBusy:
    """Another process writes the index (the driver follows it read-only): nothing ran."""

    index_dir: Path
    holder: LockInfo | None


class PassRefused(Exception):
    """The driver has no index to run the pass on (a refused root, a vanished folder, an open
    that failed): the folder's state message."""
