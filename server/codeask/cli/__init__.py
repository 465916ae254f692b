"""`codeask index | search | status | health | ask | serve | mcp | gc | eval | daemon`: one
module per command, `common` for what they share, `parser` for the flags.

Human output (`index` shows a progress line: see progress_view), `--json` for machines. Logs go to
stderr: under `serve`, stdout is the LSP channel. Exit codes: 0 ok, 1 no results or a user
error, 2 bad usage, 3 an incomplete answer (`ask`), 4 index busy (`index --no-wait`). One writer
per index folder: `index` waits for another `index`, defers to a running server; `search` and
`status` only read. Errors are one clear line; `-v` adds the traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from codeask.cli.common import EXIT_USER, UserError, setup_logging
from codeask.cli.parser import build_parser

__all__ = ["build_parser", "main"]

#: Subcommand → the module whose `run(args)` carries it out. Imported only when chosen, so
#: `--help` and `serve` do not pay for the other commands' imports.
COMMANDS = {
    "index": "codeask.cli.index",
    "search": "codeask.cli.search",
    "status": "codeask.cli.status",
    "health": "codeask.cli.health",
    "ask": "codeask.cli.ask_entry",  # `--prompt-only` may be answered by the daemon
    "serve": "codeask.cli.serve",
    "gc": "codeask.cli.gc",
    "mcp": "codeask.cli.mcp",
    "eval": "codeask.cli.eval",
    "daemon": "codeask.cli.daemon",
}

#: Processes that live for hours: their big freed blocks go back to the system and their heap
#: is trimmed every 30 s (core/runtime/heap.py: a server on sphinx 635–709 → 510 MB at rest,
#: then 298 → 276 MB). One-shot commands keep
#: glibc's default, which an index pass runs ~10% faster on (laravel: 9.3 vs 10.2 CPU-s).
LONG_RUNNING = frozenset({"serve", "mcp", "daemon"})


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `codeask` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args.verbose)
    if args.command in LONG_RUNNING:
        from codeask.core.runtime.heap import return_large_frees, trim_periodically

        return_large_frees()
        trim_periodically()
    try:
        command = importlib.import_module(COMMANDS[args.command])
        return int(command.run(args))
    except UserError as exc:
        sys.stderr.write(f"codeask: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("codeask: interrupted\n")
        return EXIT_USER
    except Exception as exc:
        if args.verbose:
            raise
        sys.stderr.write(f"codeask: {type(exc).__name__}: {exc} (run with -v for details)\n")
        return EXIT_USER
