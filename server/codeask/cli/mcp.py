"""`codeask mcp [PATH...]`: the MCP server for coding agents, on stdio (docs/mcp.md).

The folders are those `codeask index` would take (default: this project) under the same root
rules: a missing folder is a usage error; a home folder or `/` is refused unless
--allow-broad-root, and the agent then reads why from every tool. Logs go to stderr only.

With `daemon.enabled` on (docs/daemon.md) this process is a thin forwarder: the session runs
in the per-user daemon, which shares each folder's index among every agent on it. Otherwise,
or when no daemon answers (one note on stderr), the server runs in this process. Nothing heavy
is imported before that choice.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from codeask.cli.common import UserError, default_root, roots


def run(args: argparse.Namespace) -> int:
    """Serve until the agent closes stdin (or print an agent's config line and exit)."""
    if getattr(args, "print_config", None):
        from codeask.cli.agent_config import print_config

        return print_config(args.print_config, args.paths)
    forwarded = _forwarded(args)
    if forwarded is not None:
        return forwarded
    return in_process(args)


def in_process(args: argparse.Namespace) -> int:
    """The server in this process. The folders start opening before the server's own modules
    are imported: the first answer comes sooner."""
    from codeask.core.driver import SharedDrivers
    from codeask.mcp.folders import FolderDriver
    from codeask.mcp.wire import claim_stdio

    wire = claim_stdio()  # before anything could print: stdout is the protocol's
    registry = SharedDrivers()  # the process's one registry of folder drivers
    drivers = [
        FolderDriver(root, refused, drivers=registry)
        for root, refused in checked_roots(args.paths, allow_broad=args.allow_broad_root)
    ]
    for driver in drivers:
        driver.start()
    from codeask.mcp import server

    return server.run(drivers, wire)


def checked_roots(
    paths: list[str], *, allow_broad: bool, cwd: Path | None = None
) -> list[tuple[Path, str]]:
    """(root, why it is refused or '') for each folder named, or this project's; relative to
    `cwd` (the forwarder's, in the daemon) else to this process's."""
    from codeask.core.indexer import RootRefused, check_root

    out: list[tuple[Path, str]] = []
    for root in roots(paths) if cwd is None else roots_at(paths, cwd):
        try:
            check_root(root, allow_broad=allow_broad)
        except RootRefused as exc:
            out.append((root, str(exc)))
            continue
        out.append((root, ""))
    return out


def roots_at(paths: list[str], cwd: Path) -> list[Path]:
    """`common.roots` as seen from `cwd` (the daemon never changes directory for a session)."""
    if not paths:
        return [default_root(cwd)]
    found = []
    for raw in paths:
        path = (cwd / Path(raw).expanduser()).resolve()
        if not path.is_dir():
            raise UserError(f"not a folder: {raw}")
        found.append(path)
    return found


def _forwarded(args: argparse.Namespace) -> int | None:
    """The exit code of the session forwarded to the daemon, or None: serve in-process (the
    daemon is off, or could not be reached: one note on stderr, stdout untouched)."""
    if getattr(args, "no_daemon", False):
        return None
    from codeask.daemon import forwarding

    try:
        return forwarding.mcp(
            args.paths, allow_broad_root=args.allow_broad_root, verbose=int(args.verbose or 0)
        )
    except forwarding.Refused as exc:
        error = UserError(str(exc))
        error.exit_code = exc.code
        raise error from None
