"""All workspace folders of one editor window (multi-root), each with its own index (in the
daemon, shared with the other sessions that would open the same: `shared.SharedIndexes`)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Unpack

from codeask.config import Settings
from codeask.core.indexer.folder import FolderIndex
from codeask.core.indexer.location import OpenOptions
from codeask.core.indexer.shared import SharedIndexes


class Workspace:
    """All workspace folders of one editor window (multi-root), each with its own index (in the
    daemon, shared with the other sessions that would open the same: `shared.SharedIndexes`)."""

    def __init__(self, shared: SharedIndexes | None = None) -> None:
        self.folders: dict[Path, FolderIndex] = {}
        self.shared = shared
        self._lock = threading.Lock()

    def add(
        self, root: Path, editor: dict[str, object] | None = None, **options: Unpack[OpenOptions]
    ) -> FolderIndex:
        """Open (or return) the index of a folder; `options` (mode, kind) as FolderIndex.open."""
        root = root.resolve()
        with self._lock:
            if root not in self.folders:
                opener = self.shared.open if self.shared is not None else FolderIndex.open
                self.folders[root] = opener(root, editor, **options)
            return self.folders[root]

    def remove(self, root: Path) -> None:
        """Close a folder's index (its files stay on disk; a shared one stays open for the
        other sessions)."""
        with self._lock:
            folder = self.folders.pop(root.resolve(), None)
        if folder is None:
            return
        if self.shared is not None:
            self.shared.close(folder)
        else:
            folder.close()

    def abandon(self, folder: FolderIndex) -> None:
        """The folder vanished: release its index without saving (that would recreate it)."""
        with self._lock:
            self.folders.pop(folder.root, None)
        if self.shared is not None:
            self.shared.abandon(folder)
        else:
            folder.abandon()

    def retune(self, folder: FolderIndex, settings: Settings) -> bool:
        """Apply new settings to an open index in place; False when it is shared with other
        sessions (the caller reopens it: their settings stay theirs)."""
        if folder.settings == settings:
            return True
        if self.shared is not None:
            return self.shared.retune(folder, settings)
        folder.settings = settings
        return True

    def all(self) -> list[FolderIndex]:
        """Every open folder index."""
        return list(self.folders.values())

    def close(self) -> None:
        """Save and close every folder."""
        for root in list(self.folders):
            self.remove(root)
