"""The worker's queue: debounced file updates, one pending full pass, a reopen, stop.

It also holds the cancel token of the running lexical phase, because the queue is what
cancels it: a due update preempts it, a rebuild or a reopen replaces it, the user stops it.
One reentrant `Condition` guards all of it and the embedding thread's flags (`Backlog`),
so a caller may hold it across both.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from codeask.core.driver import common
from codeask.core.driver.actions import Action, Full, Poll, Reopen, Run, Update
from codeask.core.driver.common import FullKind
from codeask.core.indexer import CancelToken

#: rescan < initial < rebuild: a stronger pending pass absorbs a weaker one.
_STRENGTH: dict[FullKind, int] = {"rescan": 0, "initial": 1, "rebuild": 2}


class Schedule:
    """What the worker's thread should do next, and the switches that interrupt it."""

    def __init__(self) -> None:
        self.cond = threading.Condition()  # an RLock inside: nested `with` is fine
        self._paths: dict[str, tuple[float, float]] = {}  # rel → (first asked, due)
        self._full: FullKind | None = None
        self._reopen: dict[str, Any] | None = None
        self._jobs: list[Run] = []
        self._token: CancelToken | None = None
        self._preempted = False
        self.stopped = False
        self.user_cancelled = False
        self.lexical_running = False
        self.last_full = time.monotonic()  # start of the last full pass (rescan timer)

    # ---- requests (any thread) -------------------------------------------------------------
    def add(self, rels: Iterable[str], delay: float) -> None:
        """Reindex these files after `delay` s of quiet; repeated calls coalesce per file."""
        now = time.monotonic()
        with self.cond:
            for rel in rels:
                first = self._paths[rel][0] if rel in self._paths else now
                due = min(now + delay, first + max(2.0, common.MAX_DELAY_FACTOR * delay))
                self._paths[rel] = (first, due)
            self.cond.notify()

    def request_full(self, kind: FullKind) -> None:
        """Queue a full pass; a stronger kind (rebuild > initial > rescan) wins."""
        with self.cond:
            if self._full is None or _STRENGTH[kind] > _STRENGTH[self._full]:
                self._full = kind
            if kind == "rebuild" and self._token is not None:
                self.user_cancelled = True  # a running pass gives way to the rebuild
                self._token.cancel()
            self.cond.notify()

    def request_reopen(self, editor: dict[str, Any], *, interrupt: bool) -> None:
        """Reopen the index with these editor settings; `interrupt` stops a running pass."""
        with self.cond:
            self._reopen = editor
            if interrupt and self._token is not None:
                self._token.cancel()
            self.cond.notify()

    def submit(self, run: Run) -> None:
        """Run a job on the worker's thread (after due updates, before a queued full pass);
        its future is cancelled if the worker stops first."""
        with self.cond:
            if self.stopped:
                run.future.cancel()
                return
            self._jobs.append(run)
            self.cond.notify()

    def cancel_by_user(self) -> None:
        """Stop the lexical phase and drop a queued pass (a queued rebuild stays)."""
        with self.cond:
            self.user_cancelled = True
            if self._full != "rebuild":
                self._full = None
            if self._token is not None:
                self._token.cancel()

    def stop(self) -> None:
        """The worker ends after its current step."""
        with self.cond:
            self.stopped = True
            if self._token is not None:
                self._token.cancel()
            jobs, self._jobs = self._jobs, []
            self.cond.notify()
        for run in jobs:  # never run: whoever waits for them is told at once
            run.future.cancel()

    def full_pending(self) -> bool:
        """A full pass is queued (not started yet)."""
        return self._full is not None

    # ---- the worker's thread ---------------------------------------------------------------
    def next_action(self, last_poll: float) -> Action | None:
        """Block until something is due; None once stopped. Reopen > updates > jobs > full >
        poll."""
        with self.cond:
            while True:
                if self.stopped:
                    return None
                now = time.monotonic()
                if self._reopen is not None:
                    editor, self._reopen = self._reopen, None
                    return Reopen(editor)
                due = self._take_due(now)
                if due:
                    return Update(tuple(due))
                if self._jobs:
                    return self._jobs.pop(0)
                if self._full is not None:
                    kind, self._full = self._full, None
                    return Full(kind)
                if now - last_poll >= common.POLL_SECONDS:
                    return Poll()
                timeout = common.POLL_SECONDS - (now - last_poll)
                for _, at in self._paths.values():
                    timeout = min(timeout, at - now)
                self.cond.wait(max(0.01, timeout))

    def _take_due(self, now: float) -> list[str]:
        due = [rel for rel, (_, at) in self._paths.items() if at <= now]
        for rel in due:
            del self._paths[rel]
        return due

    def has_due(self) -> bool:
        """Some file's debounce ran out (checked between files of the lexical phase)."""
        now = time.monotonic()
        with self.cond:
            return any(at <= now for _, at in self._paths.values())

    def new_token(self) -> CancelToken:
        """The token of the next run of the lexical phase."""
        with self.cond:
            self._token = CancelToken()
            self._preempted = False
            return self._token

    def clear_token(self) -> None:
        """The lexical phase ended: nothing left to cancel."""
        self._token = None

    def preempt(self) -> None:
        """A due update interrupts the lexical phase (it resumes after the update)."""
        with self.cond:
            if self._token is not None:
                self._preempted = True
                self._token.cancel()

    def resume_after_cancel(self) -> list[str] | None:
        """After a cancelled lexical run: the due files to update before resuming, or None
        when the cancel was a stop (user, shutdown, reopen) rather than a preemption."""
        with self.cond:
            stop = self.stopped or self.user_cancelled or self._reopen is not None
            preempted, self._preempted = self._preempted, False
            due = self._take_due(time.monotonic() + 0.05) if preempted and not stop else []
        if stop or not preempted:
            return None
        return due
