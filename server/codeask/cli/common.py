"""What every `codeask` command shares: exit codes, the user-error type, which folders a
command works on, JSON output and logging."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_USER, EXIT_USAGE = 0, 1, 2
#: `codeask ask`: an answer cut short (partial answer on stdout, the reason on stderr).
EXIT_INCOMPLETE = 3
#: `codeask index --no-wait` while another `codeask index` writes the same index.
EXIT_BUSY = 4


class UserError(Exception):
    """A problem the user can fix; printed as one line, exit code `exit_code`."""

    exit_code = EXIT_USER


def setup_logging(verbosity: int) -> None:
    """Logs go to stderr: under `serve`, stdout is the LSP channel."""
    level = logging.WARNING - 10 * verbosity
    logging.basicConfig(
        level=max(level, logging.DEBUG),
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )


def default_root(start: Path | None = None) -> Path:
    """What a bare `codeask search` means: the project the current folder belongs to.

    That is the git root (else the current folder), unless an index in between (up to the git
    root, or up to `/` without git) records a root that contains the current folder: a nested
    indexed subproject. An index above the git root is another project's, never ours.
    """
    here = (start or Path.cwd()).resolve()
    git = next((c for c in (here, *here.parents) if (c / ".git").exists()), None)
    limit = git or Path(here.anchor)
    for candidate in (here, *here.parents):
        recorded = recorded_root(candidate / ".codeask")
        if recorded is not None and (recorded == here or recorded in here.parents):
            return recorded
        if candidate == limit:
            break
    return git or here


def recorded_root(index_folder: Path) -> Path | None:
    """The `root` an index folder's live manifest records (None without a readable one)."""
    from codeask.core.storage.store import read_manifest  # not needed by `--help` or `serve`

    manifest = read_manifest(index_folder)
    return Path(manifest.root) if manifest is not None else None


def roots(paths: Sequence[str] | None, cwd: Path | None = None) -> list[Path]:
    """The folders named on the command line, else this project's (see `default_root`);
    relative ones are read from `cwd` (the daemon passes its client's), else this process's."""
    if not paths:
        return [default_root(cwd)]
    found = []
    for raw in paths:
        path = Path(raw).expanduser()
        path = (path if cwd is None else cwd / path).resolve()
        if not path.is_dir():
            raise UserError(f"not a folder: {raw}")
        found.append(path)
    return found


def print_json(payload: Any) -> None:
    """The `--json` output: one indented document on stdout."""
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")
