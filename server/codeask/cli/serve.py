"""`codeask serve`: the language server, on stdio (or TCP for debugging)."""

from __future__ import annotations

import argparse

from codeask.lsp import server


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects; `--stdio` is the default and only accepted."""
    return server.run(tcp_port=args.tcp)
