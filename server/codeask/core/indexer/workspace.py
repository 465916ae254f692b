"""All workspace folders of one editor window (multi-root), each with its own index."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Unpack

from codeask.core.indexer.folder import FolderIndex
from codeask.core.indexer.location import OpenOptions


class Workspace:
    """All workspace folders of one editor window (multi-root), each with its own index."""

    def __init__(self) -> None:
        self.folders: dict[Path, FolderIndex] = {}
        self._lock = threading.Lock()

    def add(
        self, root: Path, editor: dict[str, object] | None = None, **options: Unpack[OpenOptions]
    ) -> FolderIndex:
        """Open (or return) the index of a folder; `options` (mode, kind) as FolderIndex.open."""
        root = root.resolve()
        with self._lock:
            if root not in self.folders:
                self.folders[root] = FolderIndex.open(root, editor, **options)
            return self.folders[root]

    def remove(self, root: Path) -> None:
        """Close a folder's index (its files stay on disk)."""
        with self._lock:
            folder = self.folders.pop(root.resolve(), None)
        if folder:
            folder.close()

    def all(self) -> list[FolderIndex]:
        """Every open folder index."""
        return list(self.folders.values())

    def close(self) -> None:
        """Save and close every folder."""
        for root in list(self.folders):
            self.remove(root)
