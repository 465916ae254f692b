"""`codeask status`: what each folder's index holds, read without taking the writer lock."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict

from codeask.cli.common import EXIT_OK, print_json, roots
from codeask.core.indexer import FolderIndex


def run(args: argparse.Namespace) -> int:
    """One block (or JSON object) per folder: files, chunks, embedding, history, model, size,
    and the team base (`index.backend = "postgres"`)."""
    rows = []
    for root in roots(args.root):
        folder = FolderIndex.open(root, mode="read")
        rows.append(folder.status())
        folder.close()
    if args.json:
        print_json([dict(asdict(row), embedded_percent=row.embedded_percent) for row in rows])
        return EXIT_OK
    for row in rows:
        when = (
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.last_indexed))
            if row.last_indexed
            else "never"
        )
        sys.stdout.write(
            f"{row.root}\n  files {row.files}, chunks {row.chunks}, "
            f"embedded {row.embedded_percent:.1f}%, history commits {row.history_commits}\n"
            f"  vector tiers: {row.tier_summary()}\n"
            f"  model {row.model}\n  index {row.index_dir} "
            f"({row.disk_bytes / 1e6:.1f} MB), last indexed {when}\n"
        )
        if team := row.team.summary():
            sys.stdout.write(f"  {team}\n")
            if row.team.reason:
                sys.stdout.write(f"    ({row.team.reason})\n")
    return EXIT_OK
