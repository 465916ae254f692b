"""`codeask mcp [PATH...]`: the MCP server for coding agents, on stdio (docs/mcp.md).

The folders are those `codeask index` would take (default: this project) under the same root
rules: a missing folder is a usage error; a home folder or `/` is refused unless
--allow-broad-root, and the agent then reads why from every tool. Logs go to stderr only.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from codeask.cli.common import roots
from codeask.core.indexer import RootRefused, check_root


def run(args: argparse.Namespace) -> int:
    """Serve until the agent closes stdin. The folders start opening before the MCP SDK is
    imported (~2 s of imports): the first answer comes sooner."""
    from codeask.mcp.folders import FolderDriver
    from codeask.mcp.wire import claim_stdio

    wire = claim_stdio()  # before anything could print: stdout is the protocol's
    drivers = [
        FolderDriver(root, refused)
        for root, refused in checked_roots(args.paths, allow_broad=args.allow_broad_root)
    ]
    for driver in drivers:
        driver.start()
    from codeask.mcp import server  # the MCP SDK is imported by this command only

    return server.run(drivers, wire)


def checked_roots(paths: list[str], *, allow_broad: bool) -> list[tuple[Path, str]]:
    """(root, why it is refused or '') for each folder named, or this project's."""
    out: list[tuple[Path, str]] = []
    for root in roots(paths):
        try:
            check_root(root, allow_broad=allow_broad)
        except RootRefused as exc:
            out.append((root, str(exc)))
            continue
        out.append((root, ""))
    return out
