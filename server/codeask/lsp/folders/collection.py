"""Every workspace folder of the editor window, each with its worker (one `Workspace`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeask.config import Settings
from codeask.core.driver import FolderWorker, Listener
from codeask.core.indexer import FolderIndex, SharedIndexes, Workspace
from codeask.core.operations.paths import innermost

log = logging.getLogger("codeask.lsp")
#: How long a search or ask waits for the folders' indexes to open (a snapshot load, seconds on
#: a large index; not indexing): MCP's tools wait as long (mcp/tools.py OPEN_WAIT).
OPEN_WAIT = 15.0


class Folders:
    """Every workspace folder of the editor window, each with its worker."""

    def __init__(
        self,
        host: Listener,
        *,
        watched: Callable[[], bool] = lambda: False,
        shared: SharedIndexes | None = None,
    ) -> None:
        self.workspace = Workspace(shared)
        self.workers: dict[Path, FolderWorker] = {}
        self._host = host
        self._watched = watched
        self.indexing_started = False

    def add(self, root: Path, editor: dict[str, Any]) -> FolderWorker:
        """Start a folder's worker (opens its index in the background)."""
        root = root.resolve()
        if root in self.workers:
            return self.workers[root]
        worker = FolderWorker(root, editor, self.workspace, self._host, watched=self._watched)
        self.workers[root] = worker
        worker.start()
        if self.indexing_started:
            worker.request_full("initial")
        return worker

    def remove(self, root: Path) -> None:
        """A folder left the workspace: stop its worker, save and close its index."""
        worker = self.workers.pop(root.resolve(), None)
        if worker is None:
            return
        worker.stop()
        threading.Thread(target=self._close_after, args=(worker,), daemon=True).start()

    def _close_after(self, worker: FolderWorker, timeout: float = 30.0) -> None:
        if worker.join(timeout):
            worker.release()

    def start_indexing(self) -> None:
        """After `initialized`: every folder gets its first full pass."""
        self.indexing_started = True
        for worker in self.workers.values():
            worker.request_full("initial")

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
        """Shutdown: stop every worker, then save and close what stopped in time."""
        workers = list(self.workers.values())
        for worker in workers:
            worker.stop()
        deadline = time.monotonic() + timeout
        for worker in workers:
            if worker.join(max(0.0, deadline - time.monotonic())):
                try:
                    worker.release()
                except Exception:
                    log.exception("closing the index of %s failed", worker.root)
