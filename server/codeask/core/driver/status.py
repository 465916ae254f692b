"""A folder's status as `indexState` shows it; the worker's parts write it, requests read it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from codeask.core.indexer import FolderIndex


class FolderStatus:
    """Plain fields read without locks (each write is one attribute store)."""

    def __init__(self, root: Path, editor: dict[str, Any]) -> None:
        self.root = root
        self.editor = editor
        self.folder: FolderIndex | None = None
        self.state = "loading"
        self.message = ""
        self.percent = 0
        self.updates = 0
        self.head = ""
        self.opened = threading.Event()
        """Set once the first open of the index ended (opened, refused or failed): a search
        sent right after the editor attached waits for it instead of finding nothing."""

    def settle(self, folder: FolderIndex, *, busy: bool, done: bool = False) -> None:
        """Idle again (nothing lexical or embedding running): ready or empty."""
        if self.folder is not folder or busy:
            return
        if self.state != "error":
            self.state = "ready" if folder.storage.chunk_count() else "empty"
        if done:
            self.percent = 100
