"""The two indexing actions: single-file updates and the lexical phase of full passes.

Both run on the worker's thread. A full pass ends by handing its vectors to the embedding
thread (`Backlog`); an update embeds its own files unless that thread is running, which
then restarts with them first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from codeask.core.driver import reporting
from codeask.core.driver.backlog import Backlog
from codeask.core.driver.common import FullKind, summary
from codeask.core.driver.listener import Bar, Listener, QuietBar
from codeask.core.driver.passes import PassBusy, PassDone, PassRefused
from codeask.core.driver.schedule import Schedule
from codeask.core.driver.slot import IndexSlot
from codeask.core.driver.status import FolderStatus
from codeask.core.driver.writer import writable
from codeask.core.indexer import FolderIndex, IndexReport
from codeask.core.runtime import background
from codeask.core.storage.writer_lock import holder

log = logging.getLogger("codeask.driver")


class Indexing:
    """Runs `Update` and `Full` against the open index (writers only; followers skip)."""

    def __init__(
        self,
        status: FolderStatus,
        slot: IndexSlot,
        schedule: Schedule,
        backlog: Backlog,
        listener: Listener,
        on_cancel: Callable[[], None],
    ) -> None:
        self._status = status
        self._slot = slot
        self._schedule = schedule
        self._backlog = backlog
        self._listener = listener
        self._on_cancel = on_cancel  # the progress bar's cancel button

    def update(self, rels: list[str]) -> None:
        """Reindex these files now: searchable at once, embedded here or by the backlog."""
        folder = self._slot.present()
        if folder is None or not writable(folder):
            return
        rels = self._expand(folder, rels)
        if not rels:
            return
        folder.prioritize(rels)
        started = time.perf_counter()
        if self._backlog.running():
            # searchable now; the embedding thread restarts with these files first (the
            # engine orders prioritized files ahead of the backlog)
            report = folder.update_paths(rels, embed=False)
            self._backlog.restart()
        else:
            report = folder.update_paths(rels)
        status = self._status
        status.updates += 1
        status.last_update = tuple(rels)
        status.count(report)
        changed = report.files_indexed or report.files_removed
        log.log(
            logging.INFO if changed else logging.DEBUG,
            "reindexed %s in %.0f ms: %d chunks new, %d removed, %d embedded",
            summary(rels),
            1000 * (time.perf_counter() - started),
            report.chunks_added,
            report.chunks_removed,
            report.chunks_embedded,
        )
        if status.state == "empty" and folder.storage.chunk_count():
            status.state = "ready"

    def _expand(self, folder: FolderIndex, rels: list[str]) -> list[str]:
        """A deleted folder → the files known under it; a new folder → a quiet rescan."""
        known = folder.storage.paths()
        present = set(known)
        out: list[str] = []
        for rel in rels:
            path = self._status.root / rel
            if path.is_dir():
                self._schedule.request_full("rescan")
            elif rel in present or path.exists():
                out.append(rel)
            else:
                under = [k for k in known if k.startswith(rel + "/")]
                out.extend(under or [rel])
        return list(dict.fromkeys(out))

    def full(self, kind: FullKind) -> None:
        """The lexical phase of a full pass here; the embedding goes to the backlog thread."""
        folder = self._slot.present()
        if folder is None or not writable(folder):
            return  # the writer keeps it current; on promotion a full pass is queued
        if kind == "rebuild":
            self._backlog.stop()  # the rebuild clears the store under it
        schedule, status = self._schedule, self._status
        schedule.last_full = time.monotonic()
        schedule.user_cancelled = False
        schedule.lexical_running = True
        status.state, status.percent = "indexing", 0
        quiet = kind == "rescan"
        status.full_passes += 0 if quiet else 1
        title = f"codeask: indexing {status.root.name}"
        bar = QuietBar(title) if quiet else self._listener.work_done(title, self._on_cancel)
        bar.__enter__()
        try:
            completed = self._lexical_pass(folder, bar, rebuild=kind == "rebuild")
        except BaseException as exc:
            schedule.lexical_running = False
            bar.__exit__(type(exc), exc, None)
            raise
        finally:
            schedule.clear_token()
        schedule.lexical_running = False
        if not completed:
            bar.final_message = "cancelled"
            bar.__exit__(None, None, None)
            status.settle(folder, busy=schedule.lexical_running or self._backlog.running())
            log.info("stopped indexing %s", status.root)
            return
        # the lexical tables in memory, off this queue: the first searches are fast at once
        background.start(folder.storage.warm_up, name="codeask-bm25")
        self._backlog.start(folder, bar, quiet=quiet)

    def _lexical_pass(self, folder: FolderIndex, bar: Bar, *, rebuild: bool) -> bool:
        """Files → chunks → lexical index (searchable at once); False if stopped."""
        first = True
        while True:
            run = folder.rebuild if rebuild and first else folder.refresh
            first = False
            token = self._schedule.new_token()
            report: IndexReport = run(
                progress=lambda event: reporting.report(event, bar, self._status, self._schedule),
                cancel=token,
                embed=False,
            )
            self._status.count(report)
            self._status.skipped, self._status.last_pass = report.skipped, report
            if not report.cancelled:
                return True
            due = self._schedule.resume_after_cancel()
            if due is None:
                return False
            if due:
                self.update(due)

    def requested(self, *, rebuild: bool, embed: bool, backlog: bool) -> PassDone | PassBusy:
        """A pass a face waits for (`codeask index` through the daemon): the engine's `refresh`
        (or `rebuild`) called as the CLI calls it (`embed`: the model tier too), shown on every
        session's bar, never preempted by a due update (they run right after it). `backlog`:
        other sessions hold the folder, so the embedding thread fills the model tier after it,
        as after their own passes."""
        status = self._status
        folder = self._slot.present()
        if folder is None:
            raise PassRefused(status.message or f"the index of {status.root} is not open")
        if not writable(folder):
            return PassBusy(folder.folder, holder(folder.folder))
        if rebuild or embed:
            self._backlog.stop()  # a rebuild clears the store under it; `embed` embeds it all
        bar = self._listener.work_done(f"codeask: indexing {status.root.name}", self._on_cancel)
        bar.__enter__()
        report = self._requested_pass(folder, bar, rebuild=rebuild, embed=embed)
        done = PassDone(report, folder.status(), folder.settings, list(folder.warnings))
        if backlog and not embed and not report.cancelled:
            background.start(folder.storage.warm_up, name="codeask-bm25")
            self._backlog.start(folder, bar, quiet=False)
        else:
            bar.final_message = "cancelled" if report.cancelled else "done"
            bar.__exit__(None, None, None)
            status.settle(folder, busy=self._backlog.running(), done=not report.cancelled)
        return done

    def _requested_pass(
        self, folder: FolderIndex, bar: Bar, *, rebuild: bool, embed: bool
    ) -> IndexReport:
        """The one engine call of a requested pass, cancellable as the driver's own (a stop,
        a user's cancel, a rebuild asked meanwhile)."""
        schedule, status = self._schedule, self._status
        schedule.user_cancelled = False
        schedule.lexical_running = True
        status.state, status.percent = "indexing", 0
        token = schedule.new_token()
        run = folder.rebuild if rebuild else folder.refresh
        try:
            report: IndexReport = run(
                progress=lambda event: reporting.report(
                    event, bar, status, schedule, preempt=False
                ),
                cancel=token,
                embed=embed,
            )
        except BaseException as exc:
            bar.__exit__(type(exc), exc, None)
            raise
        finally:
            schedule.lexical_running = False
            schedule.clear_token()
        status.count(report)
        status.skipped, status.last_pass = report.skipped, report
        return report
