"""After a search through the daemon on a folder no session holds, the daemon runs `codeask
index` on it in the background and holds its driver (`daemon.hold_seconds`, core/driver/hold.py).

Why (issue 42): the first `codeask index` after an edit through a daemon that had only searched
opened the folder's writer and stat'ed every file (1.2-2.3 s on the kernel); the held driver's
file watch names the changed file (0.3 s). So a search leaves the watch in place for the edit
that usually follows it, and the held driver's poll indexes an edit even without `codeask
index`. A search never waits for any of this: the folders queue for one thread, one at a time, and
a pass starts once searches paused (`QUIET_S`).

A folder is left alone when `daemon.hold_seconds` is 0, when it has no index (its first pass is
the client's own), or when a writer holds its index (a server or an agent's session keeps it
current; another process's `codeask index`). A folder held already has its hold renewed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from pathlib import Path

from codeask.core.driver.hold import holds_of
from codeask.core.driver.index_op import run_pass
from codeask.core.driver.passes import PassBusy
from codeask.core.driver.shared import Key, SharedDrivers

log = logging.getLogger("codeask.driver")

#: Folders whose last outcome `outcomes` remembers.
OUTCOMES = 32
#: Seconds without a search before a folder's pass starts: a burst of searches (an agent's, a
#: script's) is answered first; the pass (~1.5 CPU-s of stat'ing on the kernel) runs after it.
QUIET_S = 1.0
#: Folders held after searches at most (each an open writer): a search of one more lets the
#: least recently searched go (a pass or a session holds its folders as before).
MAX_HELD = 4


class KeepCurrent:
    """The daemon's queue of searched folders to hold; `forget(root)` lets go of the read copy
    the searches kept once the folder's writer is open (it loaded the same snapshot)."""

    def __init__(
        self, drivers: Callable[[], SharedDrivers], forget: Callable[[Path], None]
    ) -> None:
        self._drivers = drivers
        self._forget = forget
        self._cond = threading.Condition()
        self._queue: deque[Path] = deque()
        self._thread: threading.Thread | None = None
        self._outcomes: OrderedDict[str, str] = OrderedDict()
        self._last_search = time.monotonic()
        self._held: OrderedDict[Key, None] = OrderedDict()  # by last search, on the thread

    def outcomes(self) -> dict[str, str]:
        """Each recent folder's last outcome (`codeask daemon --status`: why one is not held)."""
        with self._cond:
            return dict(self._outcomes)

    def searched(self, roots: Iterable[Path]) -> None:
        """Queue the folders a request read (each once); returns at once."""
        with self._cond:
            self._last_search = time.monotonic()
            for root in roots:
                if root not in self._queue:
                    self._queue.append(root)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="codeask-keep-current", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._queue and not self._cond.wait_for(lambda: bool(self._queue), 60.0):
                    self._thread = None  # idle: the next search starts another
                    return
                while (wait := self._last_search + QUIET_S - time.monotonic()) > 0:
                    self._cond.wait(wait)
                root = self._queue.popleft()
            try:
                outcome = self._one(root)
            except Exception as exc:  # one folder's failure never stops the others'
                log.warning("keeping %s current failed", root, exc_info=True)
                outcome = f"failed: {exc}"
            with self._cond:
                self._outcomes.pop(str(root), None)
                self._outcomes[str(root)] = outcome
                while len(self._outcomes) > OUTCOMES:
                    self._outcomes.popitem(last=False)

    def _one(self, root: Path) -> str:
        from codeask.config import load_settings
        from codeask.core.indexer import SharedIndexes, has_index, index_dir_for
        from codeask.core.storage.writer_lock import holder

        if not root.is_dir():
            return "left alone: the folder is gone"
        settings = load_settings(root, {})[0]
        seconds = settings.daemon.hold_seconds
        drivers = self._drivers()
        if seconds <= 0:
            return "left alone: daemon.hold_seconds is 0"
        key, holds = SharedIndexes.key_of(root, {}), holds_of(drivers)
        if drivers.holds(root, {}):  # held after a pass (renewed), or a session's
            renewed = holds.renew(key, seconds)
            if renewed and key in self._held:
                self._held.move_to_end(key)
            return "held (renewed)" if renewed else "held by a session"
        if not has_index(root, settings):
            return "left alone: no index yet"
        writer = holder(index_dir_for(root, settings))
        if writer is not None:
            return f"left alone: {writer.describe()} writes it"
        done = run_pass(drivers, root, rebuild=False, embed=False, after_open=self._forget)
        if isinstance(done, PassBusy):
            return "left alone: another writer took it first"
        self._held[key] = None
        while len(self._held) > MAX_HELD:
            holds.let_go(self._held.popitem(last=False)[0])
        return "held"
