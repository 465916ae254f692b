"""The process's one registry of folder drivers (core/driver/shared.py) and its fan-out listener
(core/driver/fanout.py): sessions on one folder and settings subscribe to ONE worker, its first
full pass is asked once, each session's own listener sees its bars and warnings (a late one
too), a cancel ends every session's bar "cancelled", one session leaving keeps the driver for
the others, and a session whose settings change moves to its own. Real workers on real git
repositories; the listeners are recording faces (what `$/progress` or MCP's log would show)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from codeask.core.driver import FolderWorker, SharedDrivers, finish
from codeask.core.driver.fanout import FanOut
from support import gitrepo

STATIC: dict[str, Any] = {"embed": {"tiers": ["static"]}}


class RecordedBar:
    """What a face's progress bar showed."""

    def __init__(self, title: str, on_cancel: Callable[[], None] | None) -> None:
        self.title, self.on_cancel = title, on_cancel
        self.final_message = "done"
        self.reports: list[tuple[str, int | None]] = []
        self.ended: str | None = None

    def __enter__(self) -> RecordedBar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.ended = self.final_message

    def report(self, message: str, percent: int | None = None) -> None:
        self.reports.append((message, percent))


class Face:
    """A session's listener: records its bars and warnings."""

    def __init__(self) -> None:
        self.bars: list[RecordedBar] = []
        self.warnings: list[str] = []

    def work_done(self, title: str, on_cancel: Callable[[], None] | None) -> RecordedBar:
        bar = RecordedBar(title, on_cancel)
        self.bars.append(bar)
        return bar

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def until(condition: Callable[[], bool], timeout: float = 120.0) -> None:
    """Wait for a state the code guarantees to reach (the bound only stops a hung test)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "never reached"
        time.sleep(0.05)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    files = {
        "billing.py": 'def render_invoice(invoice):\n    """Draw the invoice."""\n    return ""\n',
        "tax.py": 'def vat_rate(country):\n    """VAT for a country."""\n    return 0.2\n',
    }
    gitrepo.commit(gitrepo.make_repo(root), files, "Billing", gitrepo.ALICE)
    return root


def idle(worker: FolderWorker) -> bool:
    return worker.last_pass is not None and worker.activity() == "idle"


def test_sessions_on_one_folder_share_one_worker_and_one_first_pass(repo: Path) -> None:
    drivers = SharedDrivers()
    editor, agent = Face(), Face()
    first = drivers.acquire(repo, STATIC, editor)
    second = drivers.acquire(repo, STATIC, agent, kind="mcp")
    assert first.worker is second.worker and drivers.started == 1
    first.start()
    second.start()  # already asked by the first: no second pass
    worker = first.worker
    faces = (editor, agent)
    until(lambda: all(f.bars and f.bars[-1].ended for f in faces) and idle(worker))
    assert worker.full_passes == 1 and worker.folder is not None
    for face in faces:  # each session's own bar showed the one pass
        [bar] = face.bars
        assert bar.title == f"codeask: indexing {repo.name}" and bar.ended == "done"
        assert bar.reports
    [described] = drivers.describe()
    assert described["sessions"] == ["mcp", "serve"] and described["full_passes"] == 1

    (repo / "late.py").write_text("def late_fee(days):\n    return days * 2\n")
    second.worker.schedule(["late.py"], 0.0)  # an action from either session: the one driver
    until(lambda: worker.last_update == ("late.py",))
    assert "late.py" in worker.folder.storage.paths()

    assert first.leave() is None  # the agent still holds it: the driver runs on
    assert worker.running() and drivers.roots("mcp") == [str(repo.resolve())]
    assert drivers.roots("serve") == []
    assert second.leave() is worker  # the last one: told to stop
    assert finish(worker, 60) and worker.folder is None
    assert drivers.describe() == []


def test_other_settings_get_a_driver_of_their_own(repo: Path) -> None:
    drivers = SharedDrivers()
    plain = drivers.acquire(repo, STATIC, Face())
    tuned = drivers.acquire(repo, {**STATIC, "server": {"debounce_ms": 5}}, Face())
    assert plain.worker is not tuned.worker and drivers.started == 2
    for sub in (plain, tuned):
        worker = sub.leave()
        assert worker is not None and finish(worker, 60)


def test_a_session_whose_settings_change_moves_and_the_other_keeps_its_driver(
    repo: Path,
) -> None:
    drivers = SharedDrivers()
    stays, moves = drivers.acquire(repo, STATIC, Face()), drivers.acquire(repo, STATIC, Face())
    shared = stays.worker
    assert moves.reconfigure({**STATIC, "server": {"debounce_ms": 5}}) == []
    assert moves.worker is not shared and stays.worker is shared and drivers.started == 2
    alone = moves.worker
    assert moves.reconfigure({**STATIC, "server": {"debounce_ms": 7}}) == []
    assert moves.worker is alone  # alone on it: the worker retunes in place, as in-process
    for sub in (stays, moves):
        worker = sub.leave()
        assert worker is not None and finish(worker, 60)


def test_a_cancel_from_one_session_ends_every_sessions_bar_cancelled() -> None:
    """The driver's pass is one: a cancel from any session's bar stops it, and no session's
    bar is left showing a pass that no longer runs (core/driver/indexing.py sets the final
    message "cancelled" on the pass's bar)."""
    fan, editor, agent = FanOut(), Face(), Face()
    fan.subscribe(1, editor)
    fan.subscribe(2, agent)
    cancelled = threading.Event()
    bar = fan.work_done("codeask: indexing shop", cancelled.set)
    bar.__enter__()
    bar.report("1/4 files", 25)
    editor.bars[0].on_cancel()  # the editor's cancel button
    assert cancelled.is_set()
    bar.final_message = "cancelled"
    bar.__exit__(None, None, None)
    assert [b.ended for b in editor.bars + agent.bars] == ["cancelled", "cancelled"]
    assert agent.bars[0].reports == [("1/4 files", 25)]


def test_a_late_session_sees_the_running_pass_and_the_warnings_so_far() -> None:
    fan, first, late = FanOut(), Face(), Face()
    fan.subscribe(1, first)
    fan.warn("codeask: read-only: written by another process")
    bar = fan.work_done("codeask: indexing shop", None)
    bar.__enter__()
    bar.report("2/4 files", 50)
    fan.subscribe(2, late)
    assert late.warnings == ["codeask: read-only: written by another process"]
    until(lambda: bool(late.bars) and bool(late.bars[0].reports))
    assert late.bars[0].reports == [("2/4 files", 50)]
    fan.unsubscribe(1)  # the first session left mid-pass: its bar ends, the pass goes on
    assert first.bars[0].ended == "done" and late.bars[0].ended is None
    bar.report("4/4 files", 100)
    bar.__exit__(None, None, None)
    assert late.bars[0].ended == "done" and late.bars[0].reports[-1] == ("4/4 files", 100)
    assert first.bars[0].reports == [("2/4 files", 50)]
