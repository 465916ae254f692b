"""After `codeask index` through the daemon on a folder no session holds, its driver stays a
while (`daemon.hold_seconds`): the next `codeask index` then finds the index open and its file
watch (core/source/tree_watch.py) knows what changed, so an agent's edit-index-search loop
costs the changed files, not an open and a stat of every file (issue 42: 1.5 s on the kernel).

One hold per folder and settings: a new pass's subscription replaces the last one's, and the
hold's timer lets the driver go (the registry's rule: the last subscriber saves and closes).
"""

from __future__ import annotations

import threading
import weakref

from codeask.core.driver.shared import Key, SharedDrivers, Subscription, finish


class Holds:
    """The subscriptions kept after passes, each with the timer that lets it go."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Key, tuple[Subscription, threading.Timer]] = {}

    def keep(self, key: Key, sub: Subscription, seconds: float) -> None:
        """Keep `sub` for `seconds` (0: let it go now), letting go of the one it replaces."""
        old = None
        timer = self._timer(key, sub, seconds)
        with self._lock:
            old = self._held.pop(key, None)
            if seconds > 0:
                self._held[key] = (sub, timer)
        if old is not None:
            old[1].cancel()
            _leave(old[0])
        if seconds > 0:
            timer.start()
        else:
            _leave(sub)

    def renew(self, key: Key, seconds: float) -> bool:
        """Restart the hold of `key`'s folder for `seconds` (a search read it again); False
        when none is held."""
        with self._lock:
            held = self._held.get(key)
            if held is None:
                return False
            timer = self._timer(key, held[0], seconds)
            held[1].cancel()
            self._held[key] = (held[0], timer)
            timer.start()
        return True

    def let_go(self, key: Key, *, unless_shared: bool = False) -> bool:
        """Let go of `key`'s hold now (`unless_shared`: only if no session shares its driver);
        True when it did (a driver left alone released the writer lock on return)."""
        with self._lock:
            held = self._held.get(key)
            if held is None or (unless_shared and held[0].shared()):
                return False
            del self._held[key]
        held[1].cancel()
        _leave(held[0])
        return True

    def _timer(self, key: Key, sub: Subscription, seconds: float) -> threading.Timer:
        """The timer that lets `sub` go after `seconds` (not started)."""
        timer = threading.Timer(seconds, self._expire, args=(key, sub))
        timer.daemon = True
        return timer

    def drop_others(self, key: Key) -> None:
        """Let go at once of the holds of the same folder under other settings (a project file
        changed): the new settings' driver needs the writer lock they hold."""
        with self._lock:
            others = [k for k in self._held if k[0] == key[0] and k != key]
            dropped = [self._held.pop(k) for k in others]
        for sub, timer in dropped:
            timer.cancel()
            _leave(sub)

    def _expire(self, key: Key, sub: Subscription) -> None:
        with self._lock:
            held = self._held.get(key)
            if held is None or held[0] is not sub:
                return  # replaced meanwhile: the new one's timer decides
            del self._held[key]
        _leave(sub)


def _leave(sub: Subscription) -> None:
    left = sub.leave()
    if left is not None:
        finish(left)


#: One per registry (the daemon has one `SharedDrivers`); weak, so a registry's id reused after
#: it is gone (tests make many) never finds another registry's holds.
_HOLDS: weakref.WeakKeyDictionary[SharedDrivers, Holds] = weakref.WeakKeyDictionary()
_HOLDS_LOCK = threading.Lock()


def holds_of(drivers: SharedDrivers) -> Holds:
    """The holds of `drivers`' folders."""
    with _HOLDS_LOCK:
        return _HOLDS.setdefault(drivers, Holds())
