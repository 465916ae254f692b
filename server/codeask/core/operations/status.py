"""Status: what each folder's index holds, read without taking the writer lock."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from codeask.config import Settings
from codeask.core.indexer import FolderIndex, IndexStatus
from codeask.core.indexer.status import TeamStatus, ignore_note_of, model_tier_of, team_status

__all__ = [
    "IndexStatus",
    "TeamStatus",
    "ignore_note_of",
    "model_tier_of",
    "open_for_reading",
    "read_statuses",
    "team_status",
]


def open_for_reading(root: Path) -> FolderIndex:
    """A folder's index as a reader (search, status, ask): never the writer lock."""
    return FolderIndex.open(root, mode="read")


def read_statuses(roots: Sequence[Path]) -> tuple[list[IndexStatus], Settings | None]:
    """Each folder's status, and the first folder's settings (what `ask` would use); every
    folder is closed again."""
    statuses: list[IndexStatus] = []
    settings: Settings | None = None
    for root in roots:
        folder = open_for_reading(root)
        try:
            statuses.append(folder.status())
            settings = settings or folder.settings
        finally:
            folder.close()
    return statuses, settings
