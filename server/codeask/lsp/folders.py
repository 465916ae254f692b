"""Background indexing: two threads per workspace folder; requests never wait for them.

The worker thread owns the folder's `FolderIndex` and runs, one at a time: single-file
updates (editor saves and opens, watcher events, files a HEAD change touched; debounced and
coalesced), the lexical phase of full passes (`refresh(embed=False)`: the initial index,
`codeask.reindex`, quiet rescans) and a cheap idle poll (folder still there? HEAD moved?).
A due update preempts the lexical phase (cancelled between files, resumed after; the engine
is incremental). The embedding backlog (`embed_pending`) runs on a second thread, so a saved
file is chunked, searchable and embedded at once instead of after the backlog.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal, Protocol

from codeask.config import Settings, load_settings
from codeask.core.git.repo import changed_between, head_sha
from codeask.core.indexer import (
    CancelToken,
    FolderIndex,
    IndexReport,
    Progress,
    RootRefused,
    Workspace,
)
from codeask.core.writer_lock import holder, take_request
from codeask.lsp.progress import WorkDone

log = logging.getLogger("codeask.lsp")

#: Idle poll: is the folder still there, did HEAD move (branch switch, commit, pull)?
POLL_SECONDS = 2.0
#: Without a client-side file watcher, a quiet incremental rescan this often (stat only).
RESCAN_SECONDS = 60.0
#: A file saved continuously is still reindexed at least this often.
MAX_DELAY_FACTOR = 5
MISSING = "folder no longer exists"
#: Settings sections whose change needs the index reopened (the others apply in place).
INDEX_SECTIONS = ("index", "chunk", "embed", "history")

#: `embed.threads = 0` (auto) under the server means this many ONNX threads: on two cores,
#: two embedding threads starve the requests (measured on sphinx: hover p95 150 → 69 ms,
#: search p95 326 → 89 ms) for almost no indexing speed.
SERVER_EMBED_THREADS = 1

FullKind = Literal["initial", "rebuild", "rescan"]


def serving(settings: Settings) -> Settings:
    """Settings as the server runs them: background embedding leaves a core to requests."""
    if settings.embed.threads == 0:
        settings.embed.threads = SERVER_EMBED_THREADS
    return settings


class Host(Protocol):
    """What a worker needs from the server (all thread-safe)."""

    def work_done(self, title: str, on_cancel: Callable[[], None] | None) -> WorkDone:
        """A `$/progress` session (a no-op when the client has no progress support)."""
        ...

    def warn(self, message: str) -> None:
        """Tell the user (window/showMessage, once per distinct text)."""
        ...


def _summary(rels: list[str], limit: int = 3) -> str:
    shown = ", ".join(rels[:limit])
    return shown + (f" (+{len(rels) - limit} more)" if len(rels) > limit else "")


class FolderWorker:
    """The indexing threads of one workspace folder, and its status for `indexState`."""

    def __init__(
        self,
        root: Path,
        editor: dict[str, Any],
        workspace: Workspace,
        host: Host,
        *,
        watched: Callable[[], bool] = lambda: False,
    ) -> None:
        self.root = root
        self.editor = editor
        self._workspace = workspace
        self._host = host
        self._watched = watched
        self._cond = threading.Condition()
        self._paths: dict[str, tuple[float, float]] = {}
        self._full: FullKind | None = None
        self._reopen: dict[str, Any] | None = None
        self._stop = False
        self._token: CancelToken | None = None
        self._preempted = False
        self._user_cancelled = False
        self._lexical_running = False
        self._embed_thread: threading.Thread | None = None
        self._embed_token: CancelToken | None = None
        self._embed_again = False
        self._embed_restart = False
        self._embed_halt = False
        self._embed_threads: list[threading.Thread] = []
        self._last_rescan = time.monotonic()
        self.folder: FolderIndex | None = None
        self.state = "loading"
        self.message = ""
        self.percent = 0
        self.updates = 0
        self.head = ""
        self.thread = threading.Thread(
            target=self._main, name=f"codeask-index-{root.name}", daemon=True
        )

    # ---- called from the event loop ----------------------------------------------------------
    def start(self) -> None:
        """Open the index (in the thread); nothing is indexed until `request_full`."""
        self.thread.start()

    def schedule(self, rels: Iterable[str], delay: float) -> None:
        """Reindex these files after `delay` s of quiet; repeated calls coalesce per file."""
        now = time.monotonic()
        with self._cond:
            for rel in rels:
                first = self._paths[rel][0] if rel in self._paths else now
                due = min(now + delay, first + max(2.0, MAX_DELAY_FACTOR * delay))
                self._paths[rel] = (first, due)
            self._cond.notify()

    def request_full(self, kind: FullKind = "initial") -> None:
        """Queue a full pass; a stronger kind (rebuild > initial > rescan) wins."""
        order = {"rescan": 0, "initial": 1, "rebuild": 2}
        with self._cond:
            if self._full is None or order[kind] > order[self._full]:
                self._full = kind
            if kind == "rebuild" and self._token is not None:
                self._user_cancelled = True  # a running pass gives way to the rebuild
                self._token.cancel()
            self._cond.notify()

    def cancel_indexing(self) -> None:
        """The user cancelled (progress UI or command): stop the full pass, keep what is done."""
        with self._cond:
            self._user_cancelled = True
            if self._full != "rebuild":
                self._full = None
            for token in (self._token, self._embed_token):
                if token is not None:
                    token.cancel()

    def reconfigure(self, editor: dict[str, Any]) -> list[str]:
        """New editor settings: applied in place, or the index is reopened; returns warnings."""
        settings, warnings = load_settings(self.root, editor)
        settings = serving(settings)
        folder = self.folder
        if folder is None:  # still opening (or gone): reopen only if the settings differ
            if editor != self.editor:
                with self._cond:
                    self._reopen = editor
                    self._cond.notify()
            return warnings
        if all(getattr(folder.settings, s) == getattr(settings, s) for s in INDEX_SECTIONS):
            folder.settings = settings
            self.editor = editor
            return warnings
        with self._cond:
            self._reopen = editor
            if self._token is not None:
                self._token.cancel()
            self._cond.notify()
        return warnings

    def stop(self) -> None:
        """Stop after the current step (a file or one embedding batch)."""
        with self._cond:
            self._stop = True
            for token in (self._token, self._embed_token):
                if token is not None:
                    token.cancel()
            self._cond.notify()

    def join(self, timeout: float) -> bool:
        """Wait for both threads; True when they have ended."""
        deadline = time.monotonic() + timeout
        threads = [self.thread, *self._embed_threads]
        for thread in threads:
            if thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in threads)

    def _embedding(self) -> bool:
        """An embedding thread is running and will look at new pending chunks."""
        thread = self._embed_thread
        return thread is not None and thread.is_alive()

    # ---- the thread ----------------------------------------------------------------------------
    def _main(self) -> None:
        self._guarded(self._open)
        last_poll = time.monotonic()
        while True:
            action = self._next_action(last_poll)
            if action is None:
                return
            name, arg = action
            if name == "poll":
                last_poll = time.monotonic()
            self._guarded(getattr(self, f"_do_{name}"), arg)

    def _guarded(self, fn: Callable[..., None], *args: Any) -> None:
        """A worker never dies: errors are logged and shown in the folder's state."""
        try:
            fn(*args)
        except Exception as exc:
            if not self.root.is_dir():
                self._missing()
                return
            log.exception("indexing %s failed", self.root)
            self.state, self.message = "error", f"{type(exc).__name__}: {exc}"

    def _next_action(self, last_poll: float) -> tuple[str, Any] | None:
        with self._cond:
            while True:
                if self._stop:
                    return None
                now = time.monotonic()
                if self._reopen is not None:
                    editor, self._reopen = self._reopen, None
                    return "reopen", editor
                due = self._take_due(now)
                if due:
                    return "update", due
                if self._full is not None:
                    kind, self._full = self._full, None
                    return "full", kind
                if now - last_poll >= POLL_SECONDS:
                    return "poll", None
                timeout = POLL_SECONDS - (now - last_poll)
                for _, at in self._paths.values():
                    timeout = min(timeout, at - now)
                self._cond.wait(max(0.01, timeout))

    def _take_due(self, now: float) -> list[str]:
        due = [rel for rel, (_, at) in self._paths.items() if at <= now]
        for rel in due:
            del self._paths[rel]
        return due

    def _has_due(self) -> bool:
        now = time.monotonic()
        with self._cond:
            return any(at <= now for _, at in self._paths.values())

    # ---- actions ---------------------------------------------------------------------------------
    def _open(self) -> None:
        if not self.root.is_dir():
            self._missing()
            return
        try:
            folder = self._workspace.add(self.root, self.editor, mode="auto", kind="serve")
        except RootRefused as exc:
            log.warning("%s", exc)
            self._host.warn(f"codeask: {exc}")
            self.state, self.message = "error", str(exc)
            return
        folder.settings = serving(folder.settings)  # before the model loads (lazily)
        for warning in folder.warnings:
            self._host.warn(f"codeask: {warning}")
        self.folder = folder
        self.head = head_sha(self.root)
        chunks = len(folder.store.chunks)
        self.state, self.message = ("ready" if chunks else "empty"), ""
        log.info("opened index of %s: %d chunks (%s)", self.root, chunks, folder.folder)
        if folder.read_only:
            self._note_read_only(folder)

    def _note_read_only(self, folder: FolderIndex) -> None:
        """Another process writes this index: answer from its snapshots, index nothing (once)."""
        who = holder(folder.folder)
        self.message = (
            f"read-only: {folder.folder} is written by "
            f"{who.describe() if who else 'another process'}; edits are indexed by it, "
            "and this server takes over when it exits"
        )
        log.warning("%s", self.message)

    def _writable(self, folder: FolderIndex) -> bool:
        """Whether this server may index now (the writer); read-only workers only follow."""
        return not folder.read_only

    def _do_reopen(self, editor: dict[str, Any]) -> None:
        log.info("settings of %s changed: reopening its index", self.root)
        self.editor = editor
        self._release()
        self._open()
        if self.folder is not None:
            self.request_full("initial")

    def _release(self) -> None:
        """Forget the open index; saved unless its folder is gone (never recreate it)."""
        self._stop_embedding()
        folder, self.folder = self.folder, None
        if folder is None:
            return
        if self.root.is_dir():
            self._workspace.remove(self.root)
        else:
            self._workspace.folders.pop(folder.root, None)
            folder.abandon()

    def _missing(self) -> None:
        if self.message != MISSING:
            log.warning("workspace folder %s disappeared; its index is set aside", self.root)
            self._host.warn(f"codeask: workspace folder {self.root} no longer exists")
        self._release()
        self.state, self.message, self.percent = "error", MISSING, 0

    def _present(self) -> FolderIndex | None:
        """The open index to work on; None if there is none or its folder is gone (set aside)."""
        folder = self.folder
        if folder is None:
            return None
        if not self.root.is_dir():
            self._missing()
            return None
        return folder

    def _do_poll(self, _: None) -> None:
        if not self.root.is_dir():
            if self.message != MISSING:
                self._missing()
            return
        if self.message == MISSING:  # it came back
            log.info("workspace folder %s is back", self.root)
            self._open()
            self.request_full("initial")
            return
        if self.folder is None:
            return
        if not self._follow_or_own(self.folder):
            return
        head = head_sha(self.root)
        if head != self.head:
            old, self.head = self.head, head
            log.info("HEAD of %s moved %s → %s", self.root, old[:10] or "-", head[:10] or "-")
            changed = changed_between(self.root, old, head)
            if changed:
                self.schedule(changed, 0.0)
            self.request_full("rescan")  # history, and anything the diff cannot tell
        elif not self._watched() and time.monotonic() - self._last_rescan > RESCAN_SECONDS:
            self.request_full("rescan")

    def _follow_or_own(self, folder: FolderIndex) -> bool:
        """Each poll: a reader reloads new snapshots and takes the lock once it is free; the
        writer honours requests other processes left (`codeask index --rebuild`). True when
        this worker is the writer."""
        if folder.read_only:
            if not folder.try_promote():
                if folder.reload_if_changed():
                    self.state = "ready" if folder.store.chunks else "empty"
                return False
            self.message = ""
            log.info("%s: now the writer of its index", self.root)
            self.head = head_sha(self.root)
            self.request_full("initial")
        if take_request(folder.folder, "rebuild"):
            log.info("%s: rebuild requested by `codeask index --rebuild`", self.root)
            self.request_full("rebuild")
        return True

    def _do_update(self, rels: list[str]) -> None:
        folder = self._present()
        if folder is None or not self._writable(folder):
            return
        rels = self._expand(folder, rels)
        if not rels:
            return
        folder.prioritize(rels)
        started = time.perf_counter()
        if self._embedding():
            # searchable now; the embedding thread restarts with these files first (the
            # engine orders prioritized files ahead of the backlog)
            report = folder.update_paths(rels, embed=False)
            self._restart_embedding()
        else:
            report = folder.update_paths(rels)
        self.updates += 1
        changed = report.files_indexed or report.files_removed
        log.log(
            logging.INFO if changed else logging.DEBUG,
            "reindexed %s in %.0f ms: %d chunks new, %d removed, %d embedded",
            _summary(rels),
            1000 * (time.perf_counter() - started),
            report.chunks_added,
            report.chunks_removed,
            report.chunks_embedded,
        )
        if self.state == "empty" and folder.store.chunks:
            self.state = "ready"

    def _expand(self, folder: FolderIndex, rels: list[str]) -> list[str]:
        """A deleted folder → the files known under it; a new folder → a quiet rescan."""
        with folder.store.lock:
            known = list(folder.store.files)
        present = set(known)
        out: list[str] = []
        for rel in rels:
            path = self.root / rel
            if path.is_dir():
                self.request_full("rescan")
            elif rel in present or path.exists():
                out.append(rel)
            else:
                under = [k for k in known if k.startswith(rel + "/")]
                out.extend(under or [rel])
        return list(dict.fromkeys(out))

    def _do_full(self, kind: FullKind) -> None:
        folder = self._present()
        if folder is None or not self._writable(folder):
            return  # the writer keeps it current; on promotion a full pass is queued
        if kind == "rebuild":
            self._stop_embedding()  # the rebuild clears the store under it
        self._last_rescan = time.monotonic()
        self._user_cancelled = False
        self._lexical_running = True
        self.state, self.percent = "indexing", 0
        quiet = kind == "rescan"
        title = f"codeask: indexing {self.root.name}"
        bar = WorkDone(None, title) if quiet else self._host.work_done(title, self.cancel_indexing)
        bar.__enter__()
        try:
            completed = self._lexical_pass(folder, bar, rebuild=kind == "rebuild")
        except BaseException as exc:
            self._lexical_running = False
            bar.__exit__(type(exc), exc, None)
            raise
        finally:
            self._token = None
        self._lexical_running = False
        if not completed:
            bar.final_message = "cancelled"
            bar.__exit__(None, None, None)
            self._settle(folder)
            log.info("stopped indexing %s", self.root)
            return
        # the lexical tables in memory, off this queue: the first searches are fast at once
        threading.Thread(target=folder.lexical.warm_up, name="codeask-bm25", daemon=True).start()
        self._embed_in_background(folder, bar, quiet=quiet)

    def _lexical_pass(self, folder: FolderIndex, bar: WorkDone, *, rebuild: bool) -> bool:
        """Files → chunks → lexical index (searchable at once); False if stopped."""
        first = True
        while True:
            run = folder.rebuild if rebuild and first else folder.refresh
            first = False
            token = self._new_token()
            report: IndexReport = run(
                progress=lambda event: self._on_progress(event, bar), cancel=token, embed=False
            )
            if not report.cancelled:
                return True
            if not self._resume_after_cancel():
                return False

    def _embed_in_background(self, folder: FolderIndex, bar: WorkDone, *, quiet: bool) -> None:
        """Hand the vectors to the embedding thread (or to the one already running)."""
        with self._cond:
            running = self._embedding()
            if running:
                self._embed_again = True
        if running:
            bar.__exit__(None, None, None)  # the running embedder reports on its own bar
            return
        thread = threading.Thread(
            target=self._embed_loop,
            args=(folder, bar, quiet),
            name=f"codeask-embed-{self.root.name}",
            daemon=True,
        )
        with self._cond:
            self._embed_again, self._embed_halt, self._embed_thread = False, False, thread
        self._embed_threads = [t for t in self._embed_threads if t.is_alive()] + [thread]
        thread.start()

    def _restart_embedding(self) -> None:
        """Stop the current batch run; the loop starts over with prioritized files first."""
        with self._cond:
            self._embed_restart = True
            if self._embed_token is not None:
                self._embed_token.cancel()

    def _embed_loop(self, folder: FolderIndex, bar: WorkDone, quiet: bool) -> None:
        """Embed until nothing is pending (new chunks may arrive meanwhile), then load the model."""
        started = time.perf_counter()
        completed, failure = False, None
        try:
            while True:
                with self._cond:
                    if self._stop or self._user_cancelled or self._embed_halt:
                        self._embed_thread = (
                            None  # decided under the lock: see _embed_in_background
                        )
                        break
                    token = self._embed_token = CancelToken()
                    self._embed_restart = False
                report = folder.embed_pending(
                    progress=lambda event: self._on_progress(event, bar), cancel=token
                )
                with self._cond:
                    if report.cancelled and not self._embed_restart:
                        self._embed_thread = None
                        break
                    idle = not report.cancelled and not self._embed_again
                    if idle and not folder.store.pending_ids():
                        completed, self._embed_thread = True, None
                        break
                    self._embed_again = False
            if completed:
                _ = folder.embedder  # loaded now, so the first dense query does not wait
        except Exception as exc:
            failure = exc
            log.exception("embedding %s failed", self.root)
        finally:
            bar.final_message = "done" if completed else "cancelled"
            bar.__exit__(type(failure) if failure else None, failure, None)
            with self._cond:
                if self._embed_thread is threading.current_thread():
                    self._embed_thread, self._embed_token = None, None
            self._settle(folder, done=completed)
        done, total = folder.embedded_counts()
        log.log(
            logging.DEBUG if quiet else logging.INFO,
            "%s %s: %d chunks, %d embedded (%.1f s of embedding)",
            "indexed" if completed else "stopped embedding",
            self.root,
            total,
            done,
            time.perf_counter() - started,
        )

    def _stop_embedding(self, timeout: float = 30.0) -> None:
        """Cancel the embedding thread(s) and wait for them (one batch at most)."""
        with self._cond:
            self._embed_halt = True
            if self._embed_token is not None:
                self._embed_token.cancel()
        for thread in self._embed_threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def _settle(self, folder: FolderIndex, *, done: bool = False) -> None:
        """Idle again (nothing lexical or embedding running): ready or empty."""
        if self.folder is not folder or self._lexical_running or self._embedding():
            return
        if self.state != "error":
            self.state = "ready" if folder.store.chunks else "empty"
        if done:
            self.percent = 100

    def _new_token(self) -> CancelToken:
        with self._cond:
            self._token = CancelToken()
            self._preempted = False
            return self._token

    def _resume_after_cancel(self) -> bool:
        """After a cancelled lexical pass: run the due updates and go on, unless told to stop."""
        with self._cond:
            stop = self._stop or self._user_cancelled or self._reopen is not None
            preempted, self._preempted = self._preempted, False
            due = self._take_due(time.monotonic() + 0.05) if preempted and not stop else []
        if stop or not preempted:
            return False
        if due:
            self._do_update(due)
        return True

    def _on_progress(self, event: Progress, bar: WorkDone) -> None:
        """Engine progress → `$/progress`; in the lexical phase, the moment to let a save in."""
        if event.phase == "scan":
            found = f" ({event.files_done} found)" if event.files_done else ""
            message, percent = f"discovering files{found}", None
        elif event.phase == "chunk":
            message = f"{event.files_done}/{event.files_total} files"
            percent = event.percent
        elif event.phase == "static":
            message = f"{event.chunks_embedded}/{event.chunks_total} chunks: static vectors"
            percent = event.percent
        elif event.phase == "embed":
            message = f"{event.chunks_embedded}/{event.chunks_total} chunks embedded"
            percent = event.percent
        else:
            return
        self.percent = max(self.percent, percent or 0)
        bar.report(message, percent)
        if event.phase != "embed" and self._has_due():
            with self._cond:
                if self._token is not None:
                    self._preempted = True
                    self._token.cancel()


class Folders:
    """Every workspace folder of the editor window, each with its worker."""

    def __init__(self, host: Host, *, watched: Callable[[], bool] = lambda: False) -> None:
        self.workspace = Workspace()
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
            worker._release()

    def start_indexing(self) -> None:
        """After `initialized`: every folder gets its first full pass."""
        self.indexing_started = True
        for worker in self.workers.values():
            worker.request_full("initial")

    def worker_for(self, path: Path) -> FolderWorker | None:
        """The innermost folder containing `path` (None when outside every folder)."""
        best: FolderWorker | None = None
        for root, worker in list(self.workers.items()):
            if (path == root or root in path.parents) and (
                best is None or len(root.parts) > len(best.root.parts)
            ):
                best = worker
        return best

    def ready(self) -> list[FolderIndex]:
        """Open indexes with something in them (what requests search)."""
        out = []
        for worker in list(self.workers.values()):
            folder = worker.folder
            if folder is not None and folder.store.chunks:
                out.append(folder)
        return out

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
                    worker._release()
                except Exception:
                    log.exception("closing the index of %s failed", worker.root)
