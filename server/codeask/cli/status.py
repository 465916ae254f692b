"""`codeask status`: what each folder's index holds, read without taking the writer lock."""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import asdict
from typing import TYPE_CHECKING

from codeask.cli.common import EXIT_OK, EXIT_USER, print_json, roots
from codeask.cli.forward import through_daemon
from codeask.core.source.names import display_path

if TYPE_CHECKING:  # the engine is imported only when this process answers (not the daemon)
    from codeask.core.operations import IndexStatus


def run(args: argparse.Namespace) -> int:
    """One block (or JSON object) per folder: files, chunks, embedding, history, model, size,
    and the team base (`index.backend = "postgres"`). Exit code 1 when a folder has no index
    yet, so scripts can tell."""
    answered = through_daemon("status", args)
    return execute(args) if answered is None else answered


def execute(args: argparse.Namespace) -> int:
    """The status itself, here or in the daemon."""
    from codeask.core.operations import read_statuses

    rows, _ = read_statuses(roots(args.root))
    code = EXIT_OK if all(row.indexed for row in rows) else EXIT_USER
    if args.json:
        print_json(
            [
                dict(asdict(row), indexed=row.indexed, embedded_percent=row.embedded_percent)
                for row in rows
            ]
        )
        return code
    for row in rows:
        _print_row(row)
    return code


def _print_row(row: IndexStatus) -> None:
    root = display_path(row.root)
    if not row.indexed:
        sys.stdout.write(
            f"{root}\n  not indexed yet: run `codeask index {shlex.quote(root)}` "
            "(or open it in an editor with codeask)\n"
        )
        _print_ignore_note(row)
        _print_team(row)
        return
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.last_indexed))
        if row.last_indexed
        else "never"
    )
    sys.stdout.write(
        f"{root}\n  files {row.files}, chunks {row.chunks}, "
        f"embedded {row.embedded_percent:.1f}%, history commits {row.history_commits}\n"
        f"  vector tiers: {row.tier_summary()}\n"
        f"  model {row.model}\n  index {display_path(row.index_dir)} "
        f"({row.disk_bytes / 1e6:.1f} MB), last indexed {when}\n"
    )
    _print_ignore_note(row)
    _print_team(row)


def _print_ignore_note(row: IndexStatus) -> None:
    if row.ignore_note:
        sys.stdout.write(f"  warning: {row.ignore_note}\n")


def _print_team(row: IndexStatus) -> None:
    if team := row.team.summary():
        sys.stdout.write(f"  {team}\n")
        if row.team.reason:
            sys.stdout.write(f"    ({row.team.reason})\n")
