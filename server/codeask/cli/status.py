"""`codeask status`: what each folder's index holds, read without taking the writer lock.

Each folder's status is turned into plain data (`row_data`), here or in the daemon, and shown
by the one renderer (`show`): a status through the daemon prints what it prints in-process,
and the client imports no engine module to show it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from codeask.cli.common import EXIT_OK, EXIT_USER, print_json, roots
from codeask.cli.forward import answer_of, through_daemon
from codeask.core.source.names import display_path

if TYPE_CHECKING:  # the engine is imported only when this process answers (not the daemon)
    from codeask.core.operations import IndexStatus


def run(args: argparse.Namespace) -> int:
    """One block (or JSON object) per folder: files, chunks, embedding, history, model, size,
    and the team base (`index.backend = "postgres"`). Exit code 1 when a folder has no index
    yet, so scripts can tell. Read here, or the daemon's rows shown the same way."""
    reply = through_daemon("status", args)
    if reply is None:
        from codeask.core.operations import read_statuses

        return show([row_data(row) for row in read_statuses(roots(args.root))[0]], args.json)
    return show(answer_of(reply), args.json)


def row_data(row: IndexStatus) -> dict[str, Any]:
    """One folder's status as data: its `--json` object, and the two lines the human output
    derives from it (the vector tiers, the team base)."""
    shown = dict(asdict(row), indexed=row.indexed, embedded_percent=row.embedded_percent)
    return {"json": shown, "tiers": row.tier_summary(), "team": row.team.summary()}


def show(rows: list[dict[str, Any]], as_json: bool) -> int:
    """Print the folders' statuses (`row_data`); exit code 1 when one has no index yet."""
    code = EXIT_OK if all(row["json"]["indexed"] for row in rows) else EXIT_USER
    if as_json:
        print_json([row["json"] for row in rows])
        return code
    for row in rows:
        _print_row(row)
    return code


def _print_row(data: dict[str, Any]) -> None:
    row = data["json"]
    root = display_path(row["root"])
    if not row["indexed"]:
        sys.stdout.write(
            f"{root}\n  not indexed yet: run `codeask index {shlex.quote(root)}` "
            "(or open it in an editor with codeask)\n"
        )
        _print_notes(data)
        return
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row["last_indexed"]))
        if row["last_indexed"]
        else "never"
    )
    sys.stdout.write(
        f"{root}\n  files {row['files']}, chunks {row['chunks']}, "
        f"embedded {row['embedded_percent']:.1f}%, history commits {row['history_commits']}\n"
        f"  vector tiers: {data['tiers']}\n"
        f"  model {row['model']}\n  index {display_path(row['index_dir'])} "
        f"({row['disk_bytes'] / 1e6:.1f} MB), last indexed {when}\n"
    )
    _print_notes(data)


def _print_notes(data: dict[str, Any]) -> None:
    """The ignore note, then the team base and why it is not used."""
    if data["json"]["ignore_note"]:
        sys.stdout.write(f"  warning: {data['json']['ignore_note']}\n")
    if data["team"]:
        sys.stdout.write(f"  {data['team']}\n")
        if data["json"]["team"]["reason"]:
            sys.stdout.write(f"    ({data['json']['team']['reason']})\n")
