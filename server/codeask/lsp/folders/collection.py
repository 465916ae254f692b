"""Every workspace folder of the editor window, each subscribed to its folder's one driver
(core/driver/shared.py: shared with the daemon's other sessions on the same folder)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeask.config import Settings
from codeask.core.driver import FolderWorker, Listener, SharedDrivers, Subscription, finish
from codeask.core.indexer import FolderIndex
from codeask.core.operations.paths import innermost

log = logging.getLogger("codeask.lsp")
#: How long a search or ask waits for the folders' indexes to open (a snapshot load, seconds on
#: a large index; not indexing): MCP's tools wait as long (mcp/tools.py OPEN_WAIT).
OPEN_WAIT = 15.0


class Folders:
    """Every workspace folder of the editor window, each with its (shared) worker."""

    def __init__(
        self,
        host: Listener,
        *,
        watched: Callable[[], bool] = lambda: False,
        drivers: SharedDrivers | None = None,
    ) -> None:
        self.drivers = drivers if drivers is not None else SharedDrivers()
        self._subs: dict[Path, Subscription] = {}
        self._host = host
        self._watched = watched
        self.indexing_started = False

    @property
    def workers(self) -> dict[Path, FolderWorker]:
        """Root → the folder's worker now (a settings change may move a folder to another)."""
        return {root: sub.worker for root, sub in list(self._subs.items()) if sub.driver}

    def add(self, root: Path, editor: dict[str, Any]) -> FolderWorker:
        """Subscribe to a folder's driver (started when new: opens its index in the
        background)."""
        root = root.resolve()
        if root in self._subs:
            return self._subs[root].worker
        sub = self.drivers.acquire(root, editor, self._host, watched=self._watched)
        self._subs[root] = sub
        if self.indexing_started:
            sub.start()
        return sub.worker

    def remove(self, root: Path) -> None:
        """A folder left the workspace: unsubscribe; the last session stops its driver, saves
        and closes its index (off the event loop)."""
        sub = self._subs.pop(root.resolve(), None)
        worker = sub.leave() if sub is not None else None
        if worker is not None:
            threading.Thread(target=finish, args=(worker,), daemon=True).start()

    def reconfigure(self, root: Path, editor: dict[str, Any]) -> list[str]:
        """New editor settings for a folder; returns their warnings."""
        sub = self._subs.get(root)
        return sub.reconfigure(editor) if sub is not None else []

    def start_indexing(self) -> None:
        """After `initialized`: every folder gets its first full pass."""
        self.indexing_started = True
        for sub in list(self._subs.values()):
            sub.start()

    def worker_for(self, path: Path) -> FolderWorker | None:
        """The innermost folder containing `path` (None when outside every folder)."""
        workers = dict(self.workers)
        root = innermost(path, workers)  # the path guard's rule (core/operations/paths.py)
        return workers[root] if root is not None else None

    def ready(self) -> list[FolderIndex]:
        """Open indexes with something in them (what requests search)."""
        out = []
        for worker in list(self.workers.values()):
            folder = worker.folder
            if folder is not None and folder.storage.chunk_count():
                out.append(folder)
        return out

    def wait_open(self, timeout: float = OPEN_WAIT) -> None:
        """Wait (at most `timeout` s in all) until every folder's index has been opened, or
        could not be: the first search after the editor attached reads the index on disk
        instead of answering "no results" while the snapshot loads. Indexing is not waited
        for. Called on a request thread, never on the event loop."""
        deadline = time.monotonic() + timeout
        for worker in list(self.workers.values()):
            worker.opened.wait(max(0.0, deadline - time.monotonic()))

    def opened(self) -> list[FolderIndex]:
        """Every open index, empty or not (ask takes its LLM settings from the first)."""
        return [w.folder for w in list(self.workers.values()) if w.folder is not None]

    def settings(self) -> Settings:
        """Settings of the first open folder (retrieval defaults for cross-folder requests)."""
        for worker in list(self.workers.values()):
            if worker.folder is not None:
                return worker.folder.settings
        return Settings()

    def stop(self, timeout: float = 10.0) -> None:
        """Shutdown: unsubscribe from every folder; the drivers this session was the last on
        stop, and what stopped in time is saved and closed."""
        subs = list(self._subs.values())
        self._subs.clear()
        stopping = [w for w in (sub.leave() for sub in subs) if w is not None]
        deadline = time.monotonic() + timeout
        for worker in stopping:
            try:
                finish(worker, max(0.0, deadline - time.monotonic()))
            except Exception:
                log.exception("closing the index of %s failed", worker.root)
