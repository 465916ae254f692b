"""The folder's open index: opening it, closing it, setting it aside when the folder goes.

A vanished folder's index is never saved back (that would recreate the folder); the poll
reopens it when the folder comes back.
"""

from __future__ import annotations

import logging
from typing import Any

from codeask.core.driver import common
from codeask.core.driver.backlog import Backlog
from codeask.core.driver.common import serving
from codeask.core.driver.listener import Listener
from codeask.core.driver.status import FolderStatus
from codeask.core.driver.writer import note_read_only
from codeask.core.git.repo import head_sha
from codeask.core.indexer import FolderIndex, RootRefused, Workspace
from codeask.core.source.tree_watch import TreeWatch

log = logging.getLogger("codeask.driver")


class IndexSlot:
    """Holds `status.folder`: None until opened, and again once released or set aside."""

    def __init__(
        self,
        status: FolderStatus,
        workspace: Workspace,
        listener: Listener,
        backlog: Backlog,
        kind: str = "serve",
    ) -> None:
        self._kind = kind  # who writes, as other processes see it in the writer lock
        self._status = status
        self._workspace = workspace
        self._listener = listener
        self._backlog = backlog

    def open(self) -> None:
        """Open (or create) the index; refused roots and vanished folders become the state."""
        status = self._status
        if not status.root.is_dir():
            self.missing()
            return
        try:
            folder = self._workspace.add(status.root, status.editor, mode="auto", kind=self._kind)
        except RootRefused as exc:
            log.warning("%s", exc)
            self._listener.warn(f"codeask: {exc}")
            status.state, status.message = "error", str(exc)
            return
        folder.settings = serving(folder.settings)  # before the model loads (lazily)
        for warning in folder.warnings:
            self._listener.warn(f"codeask: {warning}")
        status.folder = folder
        status.head = head_sha(status.root)
        chunks = folder.storage.chunk_count()
        status.state, status.message = ("ready" if chunks else "empty"), ""
        log.info("opened index of %s: %d chunks (%s)", status.root, chunks, folder.folder)
        if folder.read_only:
            note_read_only(status, folder)
        else:  # a long-lived writer: its passes re-check what the file events name
            folder.watch = TreeWatch.start(status.root, folder.folder)

    def reopen(self, editor: dict[str, Any]) -> None:
        """Close the index and open it again under new editor settings."""
        log.info("settings of %s changed: reopening its index", self._status.root)
        self._status.editor = editor
        self.release()
        self.open()

    def release(self) -> None:
        """Forget the open index; saved unless its folder is gone (never recreate it)."""
        self._backlog.stop()
        status = self._status
        folder, status.folder = status.folder, None
        if folder is None:
            return
        if status.root.is_dir():
            self._workspace.remove(status.root)
        else:
            self._workspace.abandon(folder)

    def missing(self) -> None:
        """The folder vanished: set its index aside and say so (once)."""
        status = self._status
        if status.message != common.MISSING:
            log.warning("workspace folder %s disappeared; its index is set aside", status.root)
            self._listener.warn(f"codeask: workspace folder {status.root} no longer exists")
        self.release()
        status.state, status.message, status.percent = "error", common.MISSING, 0

    def present(self) -> FolderIndex | None:
        """The open index to work on; None if there is none or its folder is gone (set aside)."""
        folder = self._status.folder
        if folder is None:
            return None
        if not self._status.root.is_dir():
            self.missing()
            return None
        return folder
