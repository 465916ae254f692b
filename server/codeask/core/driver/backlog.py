"""The embedding backlog on its own thread, so a saved file is searchable and embedded at
once instead of after the backlog (`FolderIndex.embed_pending` orders prioritized files
first; an update restarts the run to pick them up)."""

from __future__ import annotations

import logging
import threading
import time

from codeask.core.driver import reporting
from codeask.core.driver.listener import Bar
from codeask.core.driver.schedule import Schedule
from codeask.core.driver.status import FolderStatus
from codeask.core.indexer import CancelToken, FolderIndex
from codeask.core.operations import query_model
from codeask.core.runtime import background

log = logging.getLogger("codeask.driver")


class Backlog:
    """At most one embedding thread per folder; its flags live under the schedule's lock."""

    def __init__(self, status: FolderStatus, schedule: Schedule) -> None:
        self._status = status
        self._schedule = schedule
        self._cond = schedule.cond
        self._thread: threading.Thread | None = None
        self._token: CancelToken | None = None
        self._again = False  # new chunks arrived while a run was going
        self._restart = False  # the cancel was a restart, not a stop
        self._halt = False  # stop for good (release, rebuild)
        self.threads: list[threading.Thread] = []  # every one started and maybe alive

    def running(self) -> bool:
        """An embedding thread is running and will look at new pending chunks."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def cancel(self) -> None:
        """Stop the current batch run (user cancel, shutdown); the loop decides what next."""
        with self._cond:
            if self._token is not None:
                self._token.cancel()

    def start(self, folder: FolderIndex, bar: Bar, *, quiet: bool) -> None:
        """Hand the vectors to the embedding thread (or to the one already running)."""
        with self._cond:
            running = self.running()
            if running:
                self._again = True
        if running:
            bar.__exit__(None, None, None)  # the running embedder reports on its own bar
            return
        thread = threading.Thread(
            target=self._loop,
            args=(folder, bar, quiet),
            name=f"codeask-embed-{self._status.root.name}",
            daemon=True,
        )
        with self._cond:
            self._again, self._halt, self._thread = False, False, thread
        self.threads = [t for t in self.threads if t.is_alive()] + [thread]
        thread.start()

    def restart(self) -> None:
        """Stop the current batch run; the loop starts over with prioritized files first."""
        with self._cond:
            self._restart = True
            if self._token is not None:
                self._token.cancel()

    def stop(self, timeout: float = 30.0) -> None:
        """Cancel the embedding thread(s) and wait for them (one batch at most)."""
        with self._cond:
            self._halt = True
            if self._token is not None:
                self._token.cancel()
        for thread in self.threads:
            if thread is not threading.current_thread():
                thread.join(timeout)

    def _loop(self, folder: FolderIndex, bar: Bar, quiet: bool) -> None:
        """Embed until nothing is pending (new chunks may arrive meanwhile), then load the model.
        At background priority: the editor's requests win the cores (core/runtime/background.py)."""
        background.lower_this_thread()
        started = time.perf_counter()
        completed, failure = False, None
        schedule = self._schedule
        try:
            while True:
                with self._cond:
                    if schedule.stopped or schedule.user_cancelled or self._halt:
                        self._thread = None  # decided under the lock: see `start`
                        break
                    token = self._token = CancelToken()
                    self._restart = False
                outcome = folder.embed_pending(
                    progress=lambda event: reporting.report(event, bar, self._status, schedule),
                    cancel=token,
                )
                self._status.count(outcome)
                with self._cond:
                    if outcome.cancelled and not self._restart:
                        self._thread = None
                        break
                    idle = not outcome.cancelled and not self._again
                    # no MiniLM tier: nothing is ever pending for it (its ids never empty)
                    pending = folder.model_pending()
                    if idle and not pending:
                        completed, self._thread = True, None
                        break
                    self._again = False
            if completed and folder.minilm_tier:
                query_model.load(folder)  # now, so the first dense query does not wait
        except Exception as exc:
            failure = exc
            log.exception("embedding %s failed", self._status.root)
        finally:
            bar.final_message = "done" if completed else "cancelled"
            bar.__exit__(type(failure) if failure else None, failure, None)
            with self._cond:
                if self._thread is threading.current_thread():
                    self._thread, self._token = None, None
            busy = schedule.lexical_running or self.running()
            self._status.settle(folder, busy=busy, done=completed)
        done, total = folder.embedded_counts()
        log.log(
            logging.DEBUG if quiet else logging.INFO,
            "%s %s: %d chunks, %d embedded (%.1f s of embedding)",
            "indexed" if completed else "stopped embedding",
            self._status.root,
            total,
            done,
            time.perf_counter() - started,
        )
