"""`codeask gc --keep N`: delete all but the newest N published revisions of each repository
and embedding model from the team index (writer role; the DSN is read from the variable
`index.dsn_env` names). Their files and chunks go with them; the team embedding cache stays.
"""

from __future__ import annotations

import argparse
import sys

from codeask.cli.common import EXIT_OK, UserError, print_json
from codeask.config import load_settings


def run(args: argparse.Namespace) -> int:
    """Connect, collect, say which revisions went."""
    try:
        import psycopg
    except ImportError:
        raise UserError(
            "the team index needs the postgres extra: pip install 'codeask[postgres]'"
        ) from None

    from codeask.core.storage.postgres.connect import PgError, connect, dsn_from_env
    from codeask.core.storage.postgres.publish import gc

    settings, warnings = load_settings()
    for warning in warnings:
        sys.stderr.write(f"codeask: {warning}\n")
    if args.keep < 1:
        raise UserError("gc keeps at least one revision per repository (--keep 1 or more)")
    try:
        dsn = dsn_from_env(settings.index.dsn_env)
        with connect(dsn) as conn:
            removed = gc(conn, keep_per_repo=args.keep)
    except psycopg.errors.UndefinedTable:
        removed = []  # nothing was ever published there: nothing to collect (and no schema made)
    except (PgError, ValueError) as exc:
        raise UserError(f"gc of the team index: {exc}") from None
    if args.json:
        print_json({"removed": removed, "keep": args.keep})
    else:
        sys.stderr.write(
            f"removed {len(removed)} published revision(s)"
            + (f": {', '.join(map(str, removed))}" if removed else "")
            + f"; the newest {args.keep} of each repository and model are kept\n"
        )
    return EXIT_OK
