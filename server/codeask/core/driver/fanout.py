"""One driver, many faces: the listener a shared folder driver reports to, which passes each
progress bar and warning on to every session subscribed to the folder (core/driver/shared.py).

A session that subscribes while a pass runs gets its own bar for it (opened on a thread of its
own: a language server's bar asks the editor for a token, which must not hold the caller) and
the warnings the folder gave so far; a session that leaves has its bars ended. A cancel from
any session's bar stops the one pass, and every session's bar ends "cancelled": nobody's pass
is stopped without its bar saying so.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from codeask.core.driver.listener import Bar, Listener


class FanBar:
    """One pass's progress, shown on a bar of every subscribed session."""

    def __init__(self, fan: FanOut, title: str, on_cancel: Callable[[], None] | None) -> None:
        self.final_message = "done"
        self._fan = fan
        self._title = title
        self._on_cancel = on_cancel
        self._lock = threading.Lock()
        self._bars: dict[int, Bar] = {}
        self._last: tuple[str, int | None] | None = None
        self._ended = False

    def open_for(self, key: int, listener: Listener) -> None:
        """A bar of this pass on `listener` (blocks while its face creates it)."""
        bar = listener.work_done(self._title, self._on_cancel)
        bar.__enter__()
        with self._lock:
            ended, last = self._ended, self._last
            if not ended:
                self._bars[key] = bar
        if ended:
            bar.final_message = self.final_message
            bar.__exit__(None, None, None)
        elif last is not None:
            bar.report(*last)

    def close_for(self, key: int) -> None:
        """The session left: its bar ends (the pass goes on for the others)."""
        with self._lock:
            bar = self._bars.pop(key, None)
        if bar is not None:
            bar.__exit__(None, None, None)

    def __enter__(self) -> FanBar:
        self._fan.began(self)
        return self

    def report(self, message: str, percent: int | None = None) -> None:
        with self._lock:
            self._last = (message, percent)
            bars = list(self._bars.values())
        for bar in bars:
            bar.report(message, percent)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with self._lock:
            self._ended = True
            bars = list(self._bars.values())
            self._bars.clear()
        self._fan.ended(self)
        for bar in bars:
            bar.final_message = self.final_message
            bar.__exit__(exc_type, exc, tb)


class FanOut:
    """The shared driver's `Listener`: every subscribed session's listener, keyed by id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[int, Listener] = {}
        self._bars: list[FanBar] = []
        self._warned: list[str] = []

    def subscribe(self, key: int, listener: Listener) -> None:
        """A session joins: the running passes' bars and the warnings so far reach it too."""
        with self._lock:
            self._listeners[key] = listener
            bars, warned = list(self._bars), list(self._warned)
        for message in warned:
            listener.warn(message)
        for bar in bars:
            _on_thread(functools.partial(bar.open_for, key, listener))

    def unsubscribe(self, key: int) -> None:
        with self._lock:
            self._listeners.pop(key, None)
            bars = list(self._bars)
        for bar in bars:
            bar.close_for(key)

    def work_done(self, title: str, on_cancel: Callable[[], None] | None) -> Bar:
        return FanBar(self, title, on_cancel)

    def warn(self, message: str) -> None:
        with self._lock:
            if message not in self._warned:
                self._warned.append(message)
            listeners = list(self._listeners.values())
        for listener in listeners:
            listener.warn(message)

    def began(self, bar: FanBar) -> None:
        """A pass began: a bar on every session subscribed now (each face creates its own)."""
        with self._lock:
            self._bars.append(bar)
            listeners = list(self._listeners.items())
        for key, listener in listeners:
            bar.open_for(key, listener)

    def ended(self, bar: FanBar) -> None:
        with self._lock:
            if bar in self._bars:
                self._bars.remove(bar)


def _on_thread(work: Callable[[], Any]) -> None:
    threading.Thread(target=work, name="codeask-progress-join", daemon=True).start()
