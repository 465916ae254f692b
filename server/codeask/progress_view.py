"""What `codeask index` shows while it works: the indexer's Progress events as one line.

`phase · done/total unit · percent · rate · ETA`, for example

    proj: scanning · 1250 files found
    proj: chunking · 300/1609 files · 19% · 120 files/s · ETA 11s
    proj: history · 12/200 commits · 6% · 5.1 commits/s · ETA 37s
    proj: embedding · 320/1609 chunks · 20% · 45 chunks/s · ETA 29s

A percentage, rate or ETA only appears once it means something: no total while scanning, no
rate before the phase has run for a moment, no ETA without a rate. The rate and ETA are the
phase's own (work done in this run over time spent in this phase).

On a terminal the line updates in place (at most ~10 times a second) and is erased at the end;
elsewhere (CI logs, an editor's output pane) a plain line is printed when a phase starts and
then every PROGRESS_INTERVAL seconds (env `CODEASK_PROGRESS_INTERVAL` overrides), never more.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

#: Seconds between two plain progress lines when stderr is not a terminal.
PROGRESS_INTERVAL = 5.0
#: Environment variable overriding PROGRESS_INTERVAL (seconds; tests use a short one).
INTERVAL_ENV = "CODEASK_PROGRESS_INTERVAL"
#: Seconds between two redraws of the terminal line.
TTY_REFRESH = 0.1
#: A phase must have run this long before its rate (and so its ETA) is shown.
RATE_AFTER = 0.5

_CLEAR = "\r\x1b[2K"

#: Indexer phase → (label, unit) shown.
PHASES = {
    "scan": ("scanning", "files"),
    "chunk": ("chunking", "files"),
    "static": ("static vectors", "chunks"),
    "history": ("history", "commits"),
    "embed": ("embedding", "chunks"),
}


def progress_interval(environ: dict[str, str] | None = None) -> float:
    """PROGRESS_INTERVAL, or the environment's override when it is a positive number."""
    raw = (os.environ if environ is None else environ).get(INTERVAL_ENV, "")
    try:
        value = float(raw)
    except ValueError:
        return PROGRESS_INTERVAL
    return value if value > 0 else PROGRESS_INTERVAL


def format_rate(rate: float) -> str:
    """`120`, `45.3`, `0.42`: about three significant digits."""
    return f"{rate:.0f}" if rate >= 100 else f"{rate:.1f}" if rate >= 1 else f"{rate:.2f}"


def format_eta(seconds: float) -> str:
    """`12s`, `3m05s`, `1h02m`."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


@dataclass
class _Phase:
    name: str
    started: float
    baseline: int
    done: int = 0
    total: int = 0
    message: str = ""


class ProgressView:
    """Turns Progress events into the current line; knows nothing about where it goes."""

    def __init__(self, label: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.clock = clock
        self.phase: _Phase | None = None

    def update(self, event: Any) -> bool:
        """Take an event; True when it starts a new phase. `done` events are ignored."""
        if event.phase not in PHASES:
            return False
        done, total = _counts(event)
        phase = self.phase
        new = phase is None or phase.name != event.phase
        # embedding restarts its clock once the model has loaded (and the cache filled in)
        if phase is None or new or (event.phase == "embed" and event.message != phase.message):
            phase = self.phase = _Phase(event.phase, self.clock(), baseline=done)
        phase.done, phase.total, phase.message = done, total, event.message
        return new

    def line(self) -> str:
        """`label: phase · counts · percent · rate · ETA` (what is known so far)."""
        phase = self.phase
        if phase is None:
            return f"{self.label}: starting"
        name, unit = PHASES[phase.name]
        if phase.name == "scan":
            parts = [name, f"{phase.done} {unit} found" if phase.done else "looking for files"]
        elif not phase.total:
            parts = [name, f"0 {unit}"]  # an empty folder: nothing to count, never "0/0"
        else:
            percent = 100 * phase.done // phase.total
            parts = [name, f"{phase.done}/{phase.total} {unit}", f"{percent}%"]
        rate = self.rate()
        if rate:
            parts.append(f"{format_rate(rate)} {unit}/s")
            if phase.total > phase.done:
                parts.append(f"ETA {format_eta((phase.total - phase.done) / rate)}")
        if phase.message and phase.name == "embed" and phase.done == phase.baseline:
            parts.append(phase.message)  # e.g. "loading the embedding model"
        return f"{self.label}: " + " · ".join(parts)

    def rate(self) -> float | None:
        """Units per second in this phase, once it has run RATE_AFTER seconds."""
        phase = self.phase
        if phase is None:
            return None
        elapsed = self.clock() - phase.started
        work = phase.done - phase.baseline
        if elapsed < RATE_AFTER or work <= 0:
            return None
        return work / elapsed


def _counts(event: Any) -> tuple[int, int]:
    if event.phase in ("embed", "static"):
        return event.chunks_embedded, event.chunks_total
    if event.phase == "history":
        return event.commits_done, event.commits_total
    return event.files_done, event.files_total


class ProgressOutput:
    """A context manager giving the indexer's progress callback; prints to `stream`.

    `mode` is "tty" (one line redrawn in place, erased at the end), "plain" (a line per phase
    start and then every `interval` seconds) or "off".
    """

    def __init__(
        self,
        label: str,
        mode: str,
        stream: TextIO,
        *,
        interval: float = PROGRESS_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.view = ProgressView(label, clock)
        self.mode = mode
        self.stream = stream
        self.interval = TTY_REFRESH if mode == "tty" else interval
        self.clock = clock
        self._last = float("-inf")
        self._shown = False  # a terminal line is on screen (to clear before a log record)

    def __enter__(self) -> Callable[[Any], None]:
        if self.mode == "tty":
            for handler in logging.getLogger().handlers:
                handler.addFilter(self._clear_before_log)
        return self.update

    def __exit__(self, *exc: object) -> None:
        if self.mode == "tty":
            for handler in logging.getLogger().handlers:
                handler.removeFilter(self._clear_before_log)
            self._clear()

    def update(self, event: Any) -> None:
        """The indexer's progress callback: redraw or print when due."""
        if self.mode == "off":
            return
        new_phase = self.view.update(event)
        now = self.clock()
        if not new_phase and now - self._last < self.interval:
            return
        self._last = now
        if self.mode == "tty":
            width = shutil.get_terminal_size((100, 24)).columns
            self.stream.write(_CLEAR + self.view.line()[: max(width - 1, 20)])
            self._shown = True
        else:
            self.stream.write(self.view.line() + "\n")
        self.stream.flush()

    def _clear(self) -> None:
        if self._shown:
            self.stream.write(_CLEAR)
            self.stream.flush()
            self._shown = False

    def _clear_before_log(self, record: logging.LogRecord) -> bool:
        """A log line (-v) starts on a clean line; the progress line is redrawn after it."""
        self._clear()
        self._last = float("-inf")
        return True
