"""`codeask index` on the folder's one driver (the daemon's answer to its `index` operation):
the pass runs on the worker's thread between the driver's own actions, so it never writes
beside a session's pass, and a folder an editor or an agent holds is indexed by their driver.

A folder no session holds gets a driver for the pass (writer lock kind `daemon`); it stays
`daemon.hold_seconds` after the pass (core/driver/hold.py: the next pass finds it open, with
its file watch), then stops, saves and releases the index by the registry's rule (the last
subscriber leaves). The caller waits for the report; the
pass does not depend on the caller: a client gone mid-pass leaves it to finish.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from codeask.core.driver.hold import holds_of
from codeask.core.driver.listener import Bar, QuietBar
from codeask.core.driver.passes import PassBusy, PassDone
from codeask.core.driver.shared import HELD, SharedDrivers
from codeask.core.indexer import SharedIndexes

#: Who writes, as other processes see it in the writer lock: a driver the daemon holds after
#: the pass keeps the index current (an in-process `codeask index` defers to it, as to `serve`).
KIND = HELD


class _Unseen:
    """The pass's own listener: the caller gets the report, not the bars; the settings
    warnings come with the report."""

    def work_done(self, title: str, on_cancel: Callable[[], None] | None) -> Bar:
        return QuietBar(title)

    def warn(self, message: str) -> None:
        return None


def long_and_unheld(drivers: SharedDrivers, root: Path, *, rebuild: bool, embed: bool) -> bool:
    """Whether the pass is better run by the asking `codeask index` itself: a long pass (a
    first pass, `--rebuild`, `--full`'s model tier) on a folder no session holds. There the
    user sees its progress line, and `--full` embeds on every core instead of the driver's
    one ONNX thread; the daemon's answer adds nothing (it would open the index for the pass
    and close it after). A folder only the daemon's hold keeps (after a pass or a search) is
    let go for such a pass: its writer lock is free when this answers."""
    from codeask.config import load_settings
    from codeask.core.indexer import has_index

    if drivers.holds(root, {}):
        if rebuild or embed:
            key = SharedIndexes.key_of(root.resolve(), {})
            return holds_of(drivers).let_go(key, unless_shared=True)
        return False
    return rebuild or embed or not has_index(root, load_settings(root.resolve(), {})[0])


def run_pass(
    drivers: SharedDrivers,
    root: Path,
    *,
    rebuild: bool,
    embed: bool,
    after_open: Callable[[Path], None] = lambda root: None,
) -> PassDone | PassBusy:
    """Index `root` on its driver (started when no session holds it) and wait for the report;
    `PassRefused` when the driver has no index, `CancelledError` when it stopped first.
    `after_open(root)` runs once the driver's index is open, before the pass."""
    from codeask.config import load_settings

    holds = holds_of(drivers)
    holds.drop_others(SharedIndexes.key_of(root.resolve(), {}))
    sub = drivers.acquire(root, {}, _Unseen(), kind=KIND)
    hold = 0.0
    try:
        sub.worker.opened.wait()
        after_open(sub.root)
        future = sub.worker.index_pass(rebuild=rebuild, embed=embed, backlog=sub.shared())
        done = future.result()
        # held when it wrote, on its own: a session's driver lives on anyway, a follower's
        # writer is another process
        if isinstance(done, PassDone) and not sub.shared():
            hold = load_settings(sub.root, {})[0].daemon.hold_seconds
        return done
    finally:
        holds.keep(SharedIndexes.key_of(sub.root, {}), sub, hold)
