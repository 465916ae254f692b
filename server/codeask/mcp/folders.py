"""Each workspace folder's index behind the MCP server, kept current in the background.

Tools never wait for indexing: they read whatever the folder's `FolderIndex` holds now. Two
threads per folder, as the language server runs them (lsp/folders) but without its editor
plumbing (saves, `$/progress`, settings):

- the index thread opens the index (`mode="auto"`: the writer when the lock is free, else a
  reader of the writer's snapshots), runs full passes when it writes (the first, a rescan when
  HEAD moves or every `RESCAN_SECONDS`, a rebuild another process asked for), and polls every
  `POLL_SECONDS`: a reader reloads new snapshots and becomes the writer once the lock frees;
- the embedding thread fills the MiniLM backlog after each pass, then loads the query path,
  at background priority (core/runtime/background.py). The index thread is not lowered: an agent
  waits for its first pass, while the editor's server lowers it to keep hovers fast.

So a second `codeask mcp`, or an editor's `codeask serve`, on the same folder never indexes
or embeds it twice: one writes, the others follow (core/storage/writer_lock.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from codeask.core.git.repo import head_sha
from codeask.core.indexer import (
    CancelToken,
    FolderIndex,
    IndexReport,
    Progress,
    RootRefused,
    SharedIndexes,
)
from codeask.core.operations import has_model_tier, query_model
from codeask.core.operations.index import load_static_embedder
from codeask.core.runtime import background
from codeask.core.source.discover import SkippedFile
from codeask.core.storage.writer_lock import LockInfo, holder, take_request

log = logging.getLogger("codeask.mcp")

POLL_SECONDS = 2.0
#: Without file events from the agent, a quiet incremental rescan this often (stat only).
RESCAN_SECONDS = 60.0
#: ONNX threads for background embedding when `embed.threads = 0` (auto): one core stays free
#: for the agent's calls (the language server's rule, lsp/folders/common.py).
EMBED_THREADS = 1
#: Who writes, as other processes see it in the writer lock.
KIND = "mcp"


class FolderDriver:
    """One workspace folder: its index, its two threads, and what `index_status` shows.

    Fields are plain attributes written by the threads and read by tools without locks (each
    write is one attribute store).
    """

    def __init__(
        self, root: Path, refused: str = "", *, shared: SharedIndexes | None = None
    ) -> None:
        self.root = root
        self.folder: FolderIndex | None = None
        self._shared = shared
        """In the daemon: the open indexes its editor sessions share (one copy per folder)."""
        self.phase = "refused" if refused else "opening"
        self.message = refused
        self.progress: Progress | None = None
        self.vectors_here = 0
        """Vectors (static and MiniLM) this process computed; 0 in a reader."""
        self.skipped: list[SkippedFile] = []
        self.last_pass: IndexReport | None = None
        self.opened = threading.Event()
        self._stop = threading.Event()
        self._serving = threading.Event()
        self._token = CancelToken()
        self._embed_thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._head = ""
        self._last_full = 0.0
        self._thread = threading.Thread(
            target=self._main, name=f"codeask-mcp-{root.name}", daemon=True
        )
        if refused:
            self.opened.set()

    # ---- called by the server ------------------------------------------------------------------
    def start(self) -> None:
        """Open the index and keep it current, in the background."""
        if self.phase != "refused":
            self._thread.start()

    def serving(self) -> None:
        """The server answers requests: indexing may start (opening started at `start`)."""
        self._serving.set()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the current file or batch, then save and release the index."""
        self._stop.set()
        self._serving.set()
        self._token.cancel()
        deadline = time.monotonic() + timeout
        for thread in (self._thread, self._embed_thread):
            if thread is not None and thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))
        folder = self.folder
        if folder is not None and not self._thread.is_alive():
            if self._shared is not None:
                self._shared.close(folder)
            else:
                folder.close()

    def running(self) -> bool:
        """Whether the index thread still runs (after `stop`: the index was not released)."""
        return self._thread.is_alive()

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

    # ---- the index thread ----------------------------------------------------------------------
    def _main(self) -> None:
        try:
            self._open()
        except RootRefused as exc:
            self.phase, self.message = "refused", str(exc)
            return
        except Exception as exc:
            log.exception("opening the index of %s failed", self.root)
            self.phase, self.message = "error", f"{type(exc).__name__}: {exc}"
            return
        finally:
            self.opened.set()  # tools answer from what is on disk from now on
        folder = self.folder
        if folder is not None and "static" in folder.settings.embed.tiers:
            self._guarded(lambda: load_static_embedder(folder.settings))  # every search uses it
        self._serving.wait()  # the server's own start (imports: ~2 s) first, under the GIL
        if self.folder is not None and not self.folder.read_only:
            self._guarded(lambda: self._full(rebuild=False))
        while not self._stop.is_set():
            self._guarded(self._poll)
            self._stop.wait(POLL_SECONDS)

    def _open(self) -> None:
        opener = self._shared.open if self._shared is not None else FolderIndex.open
        folder = opener(self.root, None, mode="auto", kind=KIND)
        if folder.settings.embed.threads == 0:
            folder.settings.embed.threads = EMBED_THREADS  # before the model loads (lazily)
        self.folder = folder
        self._head = head_sha(self.root)
        log.info(
            "%s: %s its index (%d chunks, %s)",
            self.root,
            "following" if folder.read_only else "writing",
            folder.storage.chunk_count(),
            folder.folder,
        )
        self.phase = "following" if folder.read_only else "indexing"

    def _poll(self) -> None:
        """Reader: follow or take over. Writer: rebuild requests, HEAD moves, rescans."""
        folder = self.folder
        if folder is None:
            return
        if folder.read_only:
            if not folder.try_promote():
                folder.reload_if_changed()
                return
            log.info("%s: the writer is gone; now writing its index", self.root)
        head = head_sha(self.root)
        rebuild = take_request(folder.folder, "rebuild")
        due = time.monotonic() - self._last_full > RESCAN_SECONDS
        if rebuild or head != self._head or due or self.phase == "following":
            self._head = head
            self._full(rebuild=rebuild)

    def _full(self, *, rebuild: bool) -> None:
        """A lexical pass (files, static vectors, history), then the MiniLM backlog thread."""
        folder = self.folder
        assert folder is not None
        if rebuild:
            self._stop_embedding()
        self._last_full = time.monotonic()
        self.phase = "indexing"
        run = folder.rebuild if rebuild else folder.refresh
        report = run(progress=self._progress, cancel=self._token, embed=False)
        self._account(report)
        self.skipped = report.skipped
        self.last_pass = report
        if report.cancelled:
            return
        background.start(folder.storage.warm_up, name=f"codeask-bm25-{self.root.name}")
        self._start_embedding(folder)

    # ---- the embedding thread ------------------------------------------------------------------
    def _start_embedding(self, folder: FolderIndex) -> None:
        if not folder.model_pending():
            self.phase = "ready"
            return
        with self._lock:
            if self._embed_thread is not None and self._embed_thread.is_alive():
                return  # it looks for new pending chunks before it ends
            self.phase = "embedding"
            self._embed_thread = background.start(
                self._embed, folder, name=f"codeask-embed-{self.root.name}"
            )

    def _embed(self, folder: FolderIndex) -> None:
        """Embed until nothing is pending, then build the query path (searches use it)."""
        while not self._stop.is_set():
            report = folder.embed_pending(progress=self._progress, cancel=self._token)
            self._account(report)
            if report.cancelled:
                return
            if not folder.model_pending():
                break
        self._guarded(lambda: query_model.load(folder))
        self.phase = "ready"

    def _stop_embedding(self) -> None:
        """Before a rebuild: the backlog must not embed chunks the rebuild clears."""
        thread = self._embed_thread
        if thread is None or not thread.is_alive():
            return
        self._token.cancel()
        thread.join()
        self._token = CancelToken()

    # ---- bookkeeping ---------------------------------------------------------------------------
    def _progress(self, event: Progress) -> None:
        self.progress = event

    def _account(self, report: IndexReport) -> None:
        with self._lock:
            self.vectors_here += report.vectors_computed + report.static_computed

    def _guarded(self, step: Callable[[], object]) -> None:
        """A background thread never dies: errors are logged and shown by `index_status`."""
        try:
            step()
        except Exception as exc:
            log.exception("indexing %s failed", self.root)
            self.phase, self.message = "error", f"{type(exc).__name__}: {exc}"
