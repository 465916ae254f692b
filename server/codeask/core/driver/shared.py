"""The one registry of folder drivers in a process (issue 43): every session that holds a
folder (a language-server session, an MCP session, in the daemon or in a process of its own)
subscribes to ONE `FolderWorker` per folder and settings instead of running its own loop.

Keyed as the shared indexes are (core/indexer/shared.py `SharedIndexes.key_of`: the resolved
root and everything the folder's settings come out as, trust included), so sessions whose
settings differ never share a driver (nor an index). Each subscriber gives its own `Listener`;
the driver reports to a `FanOut` of them (core/driver/fanout.py). Actions from any session
(a save, reindex all, cancel) go to the one driver: a cancel stops the one pass and every
session's bar ends "cancelled". The first full pass is asked once per driver, by the first
session ready for it; the driver stops when its last subscriber leaves (that session saves and
closes the index, `finish`), and a session whose settings change moves to the driver of its
new settings (or retunes its own when nobody else holds it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeask.config import load_settings
from codeask.core.driver.fanout import FanOut
from codeask.core.driver.listener import Listener
from codeask.core.driver.worker import FolderWorker
from codeask.core.indexer import FolderIndex, SharedIndexes, Workspace

Key = tuple[Path, bytes]
#: The kind of the daemon's own subscription for `codeask index` (core/driver/index_op.py,
#: held after the pass by core/driver/hold.py): it wants no embedding thread of its own.
HELD = "daemon"


@dataclass(eq=False)
class _Driver:
    """A running worker, its fan-out listener and the sessions subscribed to it."""

    key: Key
    worker: FolderWorker
    fan: FanOut
    subscribers: list[Subscription] = field(default_factory=list)
    initial_asked: bool = False

    def watched(self) -> bool:
        """Some session's editor watches the files: no periodic rescan needed."""
        return any(sub.watched() for sub in list(self.subscribers))

    def opened(self, folder: FolderIndex) -> None:
        """On the worker's thread after the open: each session's own warm-up."""
        for sub in list(self.subscribers):
            if sub.on_open is not None:
                sub.on_open(folder)


class Subscription:
    """One session's hold on a folder's shared driver; `worker` reads its state."""

    def __init__(
        self,
        registry: SharedDrivers,
        root: Path,
        listener: Listener,
        watched: Callable[[], bool],
        on_open: Callable[[FolderIndex], None] | None,
        kind: str,
    ) -> None:
        self.root = root
        self.kind = kind
        """Which face holds it (`serve`, `mcp`): also the writer lock's kind of a new driver."""
        self.listener = listener
        self.watched = watched
        self.on_open = on_open
        self.started = False
        self.driver: _Driver | None = None
        self._registry = registry

    @property
    def worker(self) -> FolderWorker:
        driver = self.driver
        assert driver is not None, "a subscription that left has no worker"
        return driver.worker

    def start(self) -> None:
        """This session is ready for indexing: the driver's first full pass, once per driver."""
        self.started = True
        self._registry.start(self)

    def shared(self) -> bool:
        """Other sessions hold this driver too (the daemon's own hold after a pass is none)."""
        driver = self.driver
        subscribers = driver.subscribers if driver is not None else []
        return any(sub is not self and sub.kind != HELD for sub in list(subscribers))

    def reconfigure(self, editor: dict[str, Any]) -> list[str]:
        """New settings for this session's folder; returns the settings' warnings."""
        return self._registry.reconfigure(self, editor)

    def leave(self) -> FolderWorker | None:
        """Unsubscribe; the worker to `finish` when this was its last session (it was told to
        stop), else None (it runs on for the others)."""
        return self._registry.leave(self)


class SharedDrivers:
    """Key → the one running driver every session of this process with that key shares."""

    def __init__(self, indexes: SharedIndexes | None = None) -> None:
        self.indexes = indexes
        self._lock = threading.RLock()
        self._drivers: dict[Key, _Driver] = {}
        self.started = 0
        """How many workers were started (tests tell sharing from a second loop by it)."""

    def acquire(
        self,
        root: Path,
        editor: dict[str, Any],
        listener: Listener,
        *,
        kind: str = "serve",
        watched: Callable[[], bool] = lambda: False,
        on_open: Callable[[FolderIndex], None] | None = None,
    ) -> Subscription:
        """Subscribe to the driver of `root` under `editor` (started when new)."""
        sub = Subscription(self, root.resolve(), listener, watched, on_open, kind)
        self._join(sub, editor)
        return sub

    def _join(self, sub: Subscription, editor: dict[str, Any]) -> None:
        key = SharedIndexes.key_of(sub.root, editor)
        with self._lock:
            driver = self._drivers.get(key)
            new = driver is None
            if driver is None:
                driver = self._new_driver(key, sub.root, editor, sub.kind)
            driver.subscribers.append(sub)
            sub.driver = driver
        driver.fan.subscribe(id(sub), sub.listener)
        if new:
            driver.worker.start()
        elif sub.on_open is not None and driver.worker.folder is not None:
            folder = driver.worker.folder
            hook = sub.on_open
            threading.Thread(target=lambda: hook(folder), daemon=True).start()
        if sub.started:
            self.start(sub)

    def _new_driver(self, key: Key, root: Path, editor: dict[str, Any], kind: str) -> _Driver:
        fan = FanOut()
        holder: list[_Driver] = []
        worker = FolderWorker(
            root,
            editor,
            Workspace(self.indexes),
            fan,
            watched=lambda: holder[0].watched(),
            kind=kind,
            on_open=lambda folder: holder[0].opened(folder),
            backlog_wanted=lambda: any(s.kind != HELD for s in holder[0].subscribers),
        )
        driver = _Driver(key, worker, fan)
        holder.append(driver)
        self._drivers[key] = driver
        self.started += 1
        return driver

    def start(self, sub: Subscription) -> None:
        """The first full pass of the subscription's driver, unless one was asked already."""
        with self._lock:
            driver = sub.driver
            if driver is None or driver.initial_asked:
                return
            driver.initial_asked = True
        driver.worker.request_full("initial")

    def leave(self, sub: Subscription) -> FolderWorker | None:
        with self._lock:
            driver, sub.driver = sub.driver, None
            if driver is None:
                return None
            driver.subscribers.remove(sub)
            last = not driver.subscribers
            if last and self._drivers.get(driver.key) is driver:
                del self._drivers[driver.key]
        driver.fan.unsubscribe(id(sub))
        if not last:
            return None
        driver.worker.stop()
        return driver.worker

    def reconfigure(self, sub: Subscription, editor: dict[str, Any]) -> list[str]:
        """Alone on its driver: the worker applies the settings (in place or by a reopen), as a
        process of its own does. Shared: the session moves to its new settings' driver (the
        others keep theirs)."""
        key = SharedIndexes.key_of(sub.root, editor)
        with self._lock:
            driver = sub.driver
            if driver is None:
                return []
            alone = driver.subscribers == [sub]
            if alone and (key == driver.key or key not in self._drivers):
                self._rekey(driver, key)
                return driver.worker.reconfigure(editor)
            if key == driver.key:
                return load_settings(sub.root, editor)[1]
        left = self.leave(sub)
        if left is not None:
            threading.Thread(target=finish, args=(left,), daemon=True).start()
        self._join(sub, editor)
        return load_settings(sub.root, editor)[1]

    def _rekey(self, driver: _Driver, key: Key) -> None:
        if self._drivers.get(driver.key) is driver:
            del self._drivers[driver.key]
        driver.key = key
        self._drivers[key] = driver

    def describe(self) -> list[dict[str, Any]]:
        """What `codeask daemon --status` shows: each driver, its sessions and its passes."""
        with self._lock:
            drivers = list(self._drivers.values())
        return [
            {
                "root": str(d.worker.root),
                "sessions": sorted(sub.kind for sub in d.subscribers),
                "full_passes": d.worker.full_passes,
                "state": d.worker.state,
            }
            for d in drivers
        ]

    def holds(self, root: Path, editor: dict[str, Any]) -> bool:
        """Whether a driver of `root` under `editor` runs (a session holds the folder)."""
        key = SharedIndexes.key_of(root.resolve(), editor)
        with self._lock:
            return key in self._drivers

    def roots(self, kind: str) -> list[str]:
        """The folders whose driver has a session of this kind (`mcp`: `mcp_folders`)."""
        with self._lock:
            drivers = list(self._drivers.values())
        held = {str(d.worker.root) for d in drivers if any(s.kind == kind for s in d.subscribers)}
        return sorted(held)

    def close(self, timeout: float = 30.0) -> None:
        """The process ends: stop every driver still running, save what stopped in time."""
        with self._lock:
            drivers = list(self._drivers.values())
            self._drivers.clear()
        for driver in drivers:
            driver.worker.stop()
        for driver in drivers:
            finish(driver.worker, timeout)


def finish(worker: FolderWorker, timeout: float = 30.0) -> bool:
    """Wait for a stopped worker, then save and close its index; False when it did not stop
    in time (its index stays open)."""
    if not worker.join(timeout):
        return False
    worker.release()
    return True
