"""`codeask search`: hybrid search of the index, hits as `path:lines kind symbol` or JSON.

The search is answered here or by the daemon (`answer`, called by both), and printed from its
answer as data by the one renderer (codeask/search_view.py). Exit code 1 when nothing is
found, so scripts can tell.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask import search_view
from codeask.cli.common import UserError, roots
from codeask.cli.forward import through_daemon
from codeask.core.source.names import display_path

if TYPE_CHECKING:  # the engine is imported only when this process answers (not the daemon)
    from codeask.core.indexer import FolderIndex
    from codeask.core.operations import SearchAnswer


def run(args: argparse.Namespace) -> int:
    """Search the folders' indexes (here, or the daemon's answer); exit code 1 without hits."""
    reply = through_daemon("search", args)
    if reply is not None:
        return search_view.show(
            reply["notes"], reply.get("answer"), reply["message"], reply["code"], args.json
        )
    import msgspec

    from codeask.core.runtime import resident

    resident.answer_once()  # this process exits after the answer: keep no index pages
    return search_view.render(msgspec.to_builtins(answer(args)), args.json)


def answer(
    call: Any,
    *,
    cwd: Path | None = None,
    open_folder: Callable[[Path], FolderIndex] | None = None,
    note: Callable[[str], object] | None = None,
) -> SearchAnswer:
    """The search itself, here or in the daemon: `call` carries the CLI's arguments (the
    parsed namespace, or the daemon's `SearchCall`), `cwd` the client's working directory,
    `open_folder` the daemon's cache, `note` where stderr lines go before the answer."""
    from codeask.core import operations

    if not call.query.strip():
        raise UserError("empty query")
    folder_roots = roots(call.root, cwd)
    _check_history(folder_roots, call.scope, note or sys.stderr.write)
    opener = open_folder or operations.open_for_reading
    folders = [opener(root) for root in folder_roots]
    if not operations.searchable(folders):
        damaged = operations.damaged(folders)
        if damaged is not None:
            raise UserError(
                f"the index at {damaged.folder} is damaged ({damaged.damage}); "
                "`codeask index` (or the running editor server) rebuilds it"
            )
        raise UserError("no index here yet: run `codeask index` first")
    filters = operations.Filters.from_options(call)
    return operations.answer_search(folders, call.query, k=call.k, filters=filters, mode=call.mode)


def _check_history(folder_roots: list[Path], scope: str, note: Callable[[str], object]) -> None:
    """History needs a git repository: an error when no folder is one and only history was
    asked for; otherwise a note for each folder that is not one (its code is still searched)."""
    if scope == "code":
        return
    from codeask.core.operations import not_git_repositories

    missing = [display_path(str(root)) for root in not_git_repositories(folder_roots)]
    if scope == "history" and len(missing) == len(folder_roots):
        raise UserError(
            f"{missing[0]} is not a git repository: no history to search; "
            "index a git checkout or drop --history"
        )
    for root in missing:
        note(f"codeask: {root} is not a git repository: no history to search there\n")
