"""One folder's worker: the public face the server calls, the thread loop, the dispatch.

The parts do the work (`Schedule` queues, `Indexing` and `Poller` run actions, `IndexSlot`
opens and closes, `Backlog` embeds); this class wires them and routes each action with a
`match` over the action types, so every path is visible to grep and mypy.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Literal, assert_never

from codeask.config import load_settings
from codeask.core.driver.actions import Action, Full, Poll, Reopen, Run, Update
from codeask.core.driver.backlog import Backlog
from codeask.core.driver.common import INDEX_SECTIONS, FullKind, serving
from codeask.core.driver.indexing import Indexing
from codeask.core.driver.listener import Listener
from codeask.core.driver.passes import PassBusy, PassDone
from codeask.core.driver.poll import Poller
from codeask.core.driver.schedule import Schedule
from codeask.core.driver.slot import IndexSlot
from codeask.core.driver.status import FolderStatus
from codeask.core.indexer import FolderIndex, Workspace

log = logging.getLogger("codeask.driver")


class FolderWorker(FolderStatus):
    """The indexing threads of one workspace folder, and its status for `indexState`.

    It is its own `FolderStatus` (requests read `worker.state`, `worker.folder`, ... as
    before); the parts it builds get that status, never the worker.
    """

    def __init__(
        self,
        root: Path,
        editor: dict[str, Any],
        workspace: Workspace,
        listener: Listener,
        *,
        watched: Callable[[], bool] = lambda: False,
        kind: str = "serve",
        on_open: Callable[[FolderIndex], None] | None = None,
        backlog_wanted: Callable[[], bool] = lambda: True,
    ) -> None:
        super().__init__(root, editor)
        self._backlog_wanted = backlog_wanted  # False: only the daemon's hold keeps it open
        self._changed_queued = threading.Event()
        self._workspace = workspace
        self._on_open = on_open  # on this thread, after the open (MCP: the static model)
        self._schedule = Schedule()
        self._backlog = Backlog(self, self._schedule)
        self._slot = IndexSlot(self, workspace, listener, self._backlog, kind)
        self._indexing = Indexing(
            self, self._slot, self._schedule, self._backlog, listener, self.cancel_indexing
        )
        self._poller = Poller(self, self._slot, self._schedule, watched, self._changed_pass)
        self.thread = threading.Thread(
            target=self._main, name=f"codeask-index-{root.name}", daemon=True
        )

    # ---- called from the event loop ----------------------------------------------------------
    def start(self) -> None:
        """Open the index (in the thread); nothing is indexed until `request_full`."""
        self.thread.start()

    def schedule(self, rels: Iterable[str], delay: float) -> None:
        """Reindex these files after `delay` s of quiet; repeated calls coalesce per file."""
        self._schedule.add(rels, delay)

    def request_full(self, kind: FullKind = "initial") -> None:
        """Queue a full pass; a stronger kind (rebuild > initial > rescan) wins."""
        self._schedule.request_full(kind)

    def index_pass(
        self, *, rebuild: bool, embed: bool, backlog: bool
    ) -> Future[PassDone | PassBusy]:
        """A pass run on this worker's thread for a face that waits for its report (see
        `Indexing.requested`); cancelled if the worker stops before it starts."""
        future: Future[PassDone | PassBusy] = Future()
        job = functools.partial(
            self._indexing.requested, rebuild=rebuild, embed=embed, backlog=backlog
        )
        self._schedule.submit(Run(job, future))
        return future

    def _changed_pass(self) -> None:
        """The file watch names changes: a lexical pass over them (queued once at a time; the
        embedding thread after it only when a session, not just the daemon's hold, has it)."""
        if self._changed_queued.is_set():
            return
        self._changed_queued.set()
        backlog = self._backlog_wanted()

        def job() -> PassDone | PassBusy:
            self._changed_queued.clear()
            return self._indexing.requested(rebuild=False, embed=False, backlog=backlog)

        self._schedule.submit(Run(job, Future()))

    def cancel_indexing(self) -> None:
        """The user cancelled (progress UI or command): stop the full pass, keep what is done."""
        with self._schedule.cond:
            self._schedule.cancel_by_user()
            self._backlog.cancel()

    def reconfigure(self, editor: dict[str, Any]) -> list[str]:
        """New editor settings: applied in place, or the index is reopened; returns warnings."""
        settings, warnings = load_settings(self.root, editor)
        settings = serving(settings)
        folder = self.folder
        if folder is None:  # still opening (or gone): reopen only if the settings differ
            if editor != self.editor:
                self._schedule.request_reopen(editor, interrupt=False)
            return warnings
        same_index = all(
            getattr(folder.settings, s) == getattr(settings, s) for s in INDEX_SECTIONS
        )
        if same_index and self._workspace.retune(folder, settings):
            self.editor = editor
            return warnings
        self._schedule.request_reopen(editor, interrupt=True)
        return warnings

    def stop(self) -> None:
        """Stop after the current step (a file or one embedding batch)."""
        with self._schedule.cond:
            self._schedule.stop()
            self._backlog.cancel()

    def activity(self) -> Literal["indexing", "embedding", "idle"]:
        """What runs now: a lexical pass (or one queued), the embedding backlog, or nothing."""
        if self._schedule.lexical_running or self._schedule.full_pending():
            return "indexing"
        alive = any(thread.is_alive() for thread in self._backlog.threads)
        return "embedding" if alive else "idle"  # alive: till the query model is loaded too

    def running(self) -> bool:
        """Whether the index thread still runs (after `stop` + `join`: it did not stop)."""
        return self.thread.is_alive()

    def threads(self) -> list[threading.Thread]:
        """The folder's index thread and its embedding threads (a daemon session routes their
        log records to its own editor by them)."""
        return [self.thread, *self._backlog.threads]

    def join(self, timeout: float) -> bool:
        """Wait for both threads; True when they have ended."""
        deadline = time.monotonic() + timeout
        threads = self.threads()
        for thread in threads:
            if thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in threads)

    def release(self) -> None:
        """Save and close the index (after `join`: nothing else touches it any more)."""
        self._slot.release()

    # ---- the thread ----------------------------------------------------------------------------
    def _main(self) -> None:
        """Open the index, then run one action at a time until stopped."""
        try:
            self._guarded(self._slot.open)
        finally:
            self.opened.set()
        on_open, folder = self._on_open, self.folder
        if on_open is not None and folder is not None:
            self._guarded(lambda: on_open(folder))
        last_poll = time.monotonic()
        while (action := self._schedule.next_action(last_poll)) is not None:
            if isinstance(action, Poll):
                last_poll = time.monotonic()
            self._guarded(functools.partial(self._run, action))

    def _run(self, action: Action) -> None:
        """The dispatch: one case per action type (mypy checks that none is missing)."""
        match action:
            case Update(rels=rels):
                self._indexing.update(list(rels))
            case Full(kind=kind):
                self._indexing.full(kind)
            case Reopen(editor=editor):
                self._slot.reopen(editor)
                if self.folder is not None:
                    self._schedule.request_full("initial")
            case Poll():
                self._poller.poll()
            case Run(job=job, future=future):
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(job())
                    except Exception as exc:  # the face that waits for it gets it
                        future.set_exception(exc)
            case _:
                assert_never(action)

    def _guarded(self, step: Callable[[], None]) -> None:
        """A worker never dies: errors are logged and shown in the folder's state."""
        try:
            step()
        except Exception as exc:
            if not self.root.is_dir():
                self._slot.missing()
                return
            log.exception("indexing %s failed", self.root)
            self.state, self.message = "error", f"{type(exc).__name__}: {exc}"
