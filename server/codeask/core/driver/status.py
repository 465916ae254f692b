"""A folder's status as `indexState` shows it; the worker's parts write it, requests read it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from codeask.core.indexer import FolderIndex, IndexReport, Progress
from codeask.core.source.discover import SkippedFile


class FolderStatus:
    """Plain fields read without locks (each write is one attribute store; `count` locks)."""

    def __init__(self, root: Path, editor: dict[str, Any]) -> None:
        self.root = root
        self.editor = editor
        self.folder: FolderIndex | None = None
        self.state = "loading"
        self.message = ""
        self.percent = 0
        self.updates = 0
        self.full_passes = 0
        """Full passes (not quiet rescans) this driver ran: one per folder, whoever asks."""
        self.head = ""
        self.opened = threading.Event()
        """Set once the first open of the index ended (opened, refused or failed): a search
        sent right after the editor attached waits for it instead of finding nothing."""
        self.progress: Progress | None = None
        """The engine's last progress event (a face without a progress bar shows it)."""
        self.last_pass: IndexReport | None = None
        """The last lexical pass's report (cancelled or not); None before the first."""
        self.skipped: list[SkippedFile] = []
        """Files the last pass left out, and why."""
        self.last_update: tuple[str, ...] = ()
        """The files the last single-file update re-read (a save, a watcher event, a HEAD move)."""
        self.vectors_here = 0
        """Vectors (static and MiniLM) this process computed for the folder; 0 in a follower."""
        self._count_lock = threading.Lock()

    def count(self, report: IndexReport) -> None:
        """Add a run's computed vectors (the worker and the embedding thread both report)."""
        with self._count_lock:
            self.vectors_here += report.vectors_computed + report.static_computed

    def settle(self, folder: FolderIndex, *, busy: bool, done: bool = False) -> None:
        """Idle again (nothing lexical or embedding running): ready or empty."""
        if self.folder is not folder or busy:
            return
        if self.state != "error":
            self.state = "ready" if folder.storage.chunk_count() else "empty"
        if done:
            self.percent = 100
