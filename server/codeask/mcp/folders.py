"""Each workspace folder's index behind the MCP server, held by the engine's one index driver
(core/driver: `FolderWorker`, the language server's too).

Tools never wait for indexing: they read whatever the folder's `FolderIndex` holds now. The
driver opens the index (`mode="auto"`: the writer when the lock is free, else a reader of the
writer's snapshots), runs full passes when it writes (the first once the server answers, a
rescan every `RESCAN_SECONDS`, a rebuild another process asked for), re-reads the files a HEAD
move changed (`changed_between`), retries an unreachable team database (`retry_base`), takes
over the writer lock when it frees, fills the MiniLM backlog at background priority and then
warms the query path. This module only adds what MCP shows: `phase` for `index_status`, the
static model loaded right after the open, and the query model asked for by a search.

So a second `codeask mcp`, or an editor's `codeask serve`, on the same folder never indexes
or embeds it twice: in one process (the daemon) they subscribe to the same driver
(core/driver/shared.py); across processes one writes, the others follow
(core/storage/writer_lock.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from codeask.core.driver import (
    Bar,
    FolderStatus,
    FolderWorker,
    QuietBar,
    SharedDrivers,
    Subscription,
    finish,
)
from codeask.core.indexer import FolderIndex, IndexReport, Progress
from codeask.core.operations import has_model_tier, query_model
from codeask.core.operations.index import load_static_embedder
from codeask.core.source.discover import SkippedFile
from codeask.core.storage.writer_lock import LockInfo, holder

log = logging.getLogger("codeask.mcp")

#: Who writes, as other processes see it in the writer lock.
KIND = "mcp"


class Quiet:
    """MCP's listener: no progress bar (`index_status` reads the driver's last event), and
    warnings go to the log (stderr), never to stdout, which is the protocol's."""

    def work_done(self, title: str, on_cancel: Callable[[], None] | None) -> Bar:
        return QuietBar(title)

    def warn(self, message: str) -> None:
        log.warning("%s", message)


def _load_static(folder: FolderIndex) -> None:
    """Every search uses the static tier: load it while the first pass has not started."""
    if "static" in folder.settings.embed.tiers:
        load_static_embedder(folder.settings)


class FolderDriver:
    """One workspace folder for MCP: its subscription to the folder's one driver
    (core/driver/shared.py), and what `index_status` shows of it."""

    def __init__(
        self, root: Path, refused: str = "", *, drivers: SharedDrivers | None = None
    ) -> None:
        self.root = root
        self.refused = refused
        self._drivers = drivers if drivers is not None else SharedDrivers()
        self._sub: Subscription | None = None
        self._left: FolderWorker | None = None
        self._idle = FolderStatus(root, {})  # what is shown while not subscribed
        self._opened = threading.Event()
        if refused:
            self._opened.set()

    @property
    def opened(self) -> threading.Event:
        """Set once the open ended (opened, refused or failed): tools wait for it."""
        sub = self._sub
        return sub.worker.opened if sub is not None and sub.driver else self._opened

    @property
    def _worker(self) -> FolderStatus:
        """The shared worker's state (a blank one while not subscribed)."""
        sub = self._sub
        return sub.worker if sub is not None and sub.driver is not None else self._idle

    # ---- called by the server ------------------------------------------------------------------
    def start(self) -> None:
        """Subscribe to the folder's driver (opening its index in the background when new;
        nothing is indexed before `serving`)."""
        if not self.refused and self._sub is None:
            self._sub = self._drivers.acquire(
                self.root, {}, Quiet(), kind=KIND, on_open=_load_static
            )

    def serving(self) -> None:
        """The server answers requests: the driver's first full pass may start (once per
        driver; followers skip it)."""
        if self._sub is not None:
            self._sub.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Leave the driver; the last session stops it after the current file or batch, then
        saves and releases the index."""
        sub, self._sub = self._sub, None
        worker = sub.leave() if sub is not None else None
        if worker is not None and not finish(worker, timeout):
            self._left = worker

    def running(self) -> bool:
        """Whether this driver's last index thread still runs after `stop` (the index was not
        released), or, before it, whether it runs at all."""
        if self._left is not None:
            return self._left.running()
        return self._sub is not None and self._sub.worker.running()

    # ---- what index_status shows ---------------------------------------------------------------
    @property
    def folder(self) -> FolderIndex | None:
        return self._worker.folder

    @property
    def message(self) -> str:
        return self.refused or self._worker.message

    @property
    def phase(self) -> str:
        """refused, opening, error, following, indexing, embedding or ready."""
        if self.refused:
            return "refused"
        if self._sub is None or self._sub.driver is None:
            return "opening"
        worker = self._sub.worker
        if not worker.opened.is_set():
            return "opening"
        folder = worker.folder
        if worker.state == "error" or folder is None:
            return "error"
        if folder.read_only:
            return "following"
        activity = worker.activity()
        if activity != "idle":
            return activity
        if worker.last_pass is None:
            return "indexing"  # the first pass is queued once the server answers
        if folder.minilm_tier and not query_model.built(folder):
            return "embedding"  # between the pass and its backlog thread: ready means searchable
        return "ready"

    @property
    def progress(self) -> Progress | None:
        return self._worker.progress

    @property
    def vectors_here(self) -> int:
        return self._worker.vectors_here

    @property
    def skipped(self) -> list[SkippedFile]:
        return self._worker.skipped

    @property
    def last_pass(self) -> IndexReport | None:
        return self._worker.last_pass

    @property
    def last_update(self) -> tuple[str, ...]:
        return self._worker.last_update

    def writer(self) -> LockInfo | None:
        """Who writes this folder's index now (None: nobody, or this folder is not open)."""
        folder = self.folder
        return holder(folder.folder) if folder is not None else None

    def want_query_model(self) -> bool:
        """Whether searches may use MiniLM now (its query path is built); if not, build it in
        the background (~1-2 s; the first time on a machine ~5 s more for the int8 copy:
        query_model.start) and let searches use the other tiers until then."""
        folder = self.folder
        if folder is None:
            return False
        if query_model.built(folder):
            return True
        if has_model_tier(folder):
            query_model.start(folder)
        return False
