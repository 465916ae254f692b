"""The idle poll: the folder's comings and goings, HEAD moves, the writer lock, rescans, and
the team database coming back (core/indexer/team_retry.py: a switch to the base is followed by
a full pass that trims the local index to the files that differ).

Git changes arrive without editor events (branch switch, pull, commit), so HEAD is polled;
without a client-side file watcher a quiet rescan catches everything else.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from codeask.core.driver import common
from codeask.core.driver.schedule import Schedule
from codeask.core.driver.slot import IndexSlot
from codeask.core.driver.status import FolderStatus
from codeask.core.driver.writer import follow_or_own
from codeask.core.git.repo import changed_between, head_sha
from codeask.core.operations.index import retry_base
from codeask.core.source.tree_watch import TreeWatch

log = logging.getLogger("codeask.driver")


class Poller:
    """Runs `Poll`: turns what changed on disk since the last poll into queued work."""

    def __init__(
        self,
        status: FolderStatus,
        slot: IndexSlot,
        schedule: Schedule,
        watched: Callable[[], bool],
        on_changed: Callable[[], None] = lambda: None,
    ) -> None:
        self._status = status
        self._slot = slot
        self._schedule = schedule
        self._watched = watched  # the client watches files: no periodic rescan needed
        self._on_changed = on_changed  # a lexical pass over what the file watch names

    def poll(self) -> None:
        """One look: missing or back, follower or writer, team base back, HEAD moved, rescan
        due."""
        status, schedule = self._status, self._schedule
        root = status.root
        if not root.is_dir():
            if status.message != common.MISSING:
                self._slot.missing()
            return
        if status.message == common.MISSING:  # it came back
            log.info("workspace folder %s is back", root)
            self._slot.open()
            schedule.request_full("initial")
            return
        if status.folder is None:
            return
        if not follow_or_own(status, status.folder, schedule):
            return
        if retry_base(status.folder):
            schedule.request_full("rescan")
        head = head_sha(root)
        if head != status.head:
            old, status.head = status.head, head
            log.info("HEAD of %s moved %s → %s", root, old[:10] or "-", head[:10] or "-")
            changed = changed_between(root, old, head)
            if changed:
                schedule.add(changed, 0.0)
            schedule.request_full("rescan")  # history, and anything the diff cannot tell
        elif not self._watched() and status.folder.watch is not None:
            self._watched_rescan(status.folder.watch)
        elif not self._watched() and time.monotonic() - schedule.last_full > common.RESCAN_SECONDS:
            schedule.request_full("rescan")

    def _watched_rescan(self, watch: TreeWatch) -> None:
        """With a file watch, no periodic walk: a pass when the events name changes, or, when
        they cannot vouch (an overflow, a new folder), a walk at the rescan interval."""
        schedule = self._schedule
        due = time.monotonic() - schedule.last_full > common.RESCAN_SECONDS
        if watch.pending() or (due and not watch.trusted):
            schedule.last_full = time.monotonic()
            self._on_changed()
