"""Engine progress → the listener's bar (`$/progress` in the editor) and the folder's percent.

Progress events arrive between files, which is also where the lexical phase can give way:
a report is the moment to let a due save in (`Schedule.preempt`).
"""

from __future__ import annotations

from codeask.core.driver.listener import Bar
from codeask.core.driver.schedule import Schedule
from codeask.core.driver.status import FolderStatus
from codeask.core.indexer import Progress


def describe(event: Progress) -> tuple[str, int | None] | None:
    """The bar's text and percent for an event; None for phases the bar does not show."""
    if event.phase == "scan":
        found = f" ({event.files_done} found)" if event.files_done else ""
        return f"discovering files{found}", None
    if event.phase == "chunk":
        return f"{event.files_done}/{event.files_total} files", event.percent
    if event.phase == "static":
        return f"{event.chunks_embedded}/{event.chunks_total} chunks: static vectors", event.percent
    if event.phase == "embed":
        return f"{event.chunks_embedded}/{event.chunks_total} chunks embedded", event.percent
    return None


def report(
    event: Progress, bar: Bar, status: FolderStatus, schedule: Schedule, *, preempt: bool = True
) -> None:
    """Show the event; in the lexical phase, cancel the pass if an update is due (unless
    `preempt` is off: a pass a user waits for runs to its end, the updates right after)."""
    status.progress = event
    shown = describe(event)
    if shown is None:
        return
    message, percent = shown
    status.percent = max(status.percent, percent or 0)
    bar.report(message, percent)
    if preempt and event.phase != "embed" and schedule.has_due():
        schedule.preempt()
