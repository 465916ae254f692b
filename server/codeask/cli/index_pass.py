"""The daemon's `index` operation: each folder's pass on its one driver (core/driver/index_op.py),
answered as the summaries `codeask index` prints (index_view.py), with the lines its own
process would have written to stderr first (settings warnings, a server that owns the index,
with -v the skipped files)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeask.cli.common import UserError, roots
from codeask.cli.index import LONG_LIVED_WRITERS, deferred
from codeask.cli.index_view import summary_data


def answer(
    call: Any,
    cwd: Path,
    drivers: Any,
    before_pass: Callable[[Path], None] = lambda root: None,
) -> tuple[list[dict[str, Any]], str]:
    """(one entry per folder: `summary`, or `in_process` when another process writes its
    index and the client waits for it as it would alone; the notes). `before_pass(root)`
    runs before a folder's pass on its driver. A user error raises the daemon's
    CommandError with the notes so far."""
    from codeask.daemon.server import CommandError

    notes: list[str] = []
    try:
        entries = [_one(drivers, root, call, notes, before_pass) for root in roots(call.paths, cwd)]
    except UserError as exc:
        raise CommandError(str(exc), exc.exit_code, "".join(notes)) from exc
    return [entry for entry in entries if entry is not None], "".join(notes)


def _one(
    drivers: Any, root: Path, call: Any, notes: list[str], before_pass: Callable[[Path], None]
) -> dict[str, Any] | None:
    from codeask.core.driver import PassBusy, PassRefused, long_and_unheld, run_pass
    from codeask.core.source.names import display_path

    embed = call.full and not call.lexical_only
    if long_and_unheld(drivers, root, rebuild=call.rebuild, embed=embed):
        return {"root": str(root), "in_process": True}
    before_pass(root)
    try:
        done = run_pass(drivers, root, rebuild=call.rebuild, embed=embed)
    except PassRefused as exc:
        raise UserError(str(exc)) from None
    if isinstance(done, PassBusy):
        if done.holder is not None and done.holder.kind in LONG_LIVED_WRITERS:
            notes.append(deferred(done.index_dir, done.holder, rebuild=call.rebuild))
            return None
        return {"root": str(root), "in_process": True}
    notes.extend(f"WARNING codeask.core.indexer: {w}\n" for w in done.warnings)
    if call.verbose:  # the log lines of the engine's walk (with -v, the CLI's log shows them)
        notes.extend(
            f"INFO codeask.core.indexer: skipped {display_path(s.rel)}: {s.reason}\n"
            for s in done.report.skipped
        )
    summary = summary_data(root, done.report, done.status, done.settings.embed)
    return {"root": str(root), "summary": summary}
