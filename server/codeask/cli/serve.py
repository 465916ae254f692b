"""`codeask serve`: the language server, on stdio (or TCP for debugging).

With `daemon.enabled` on (docs/daemon.md) this process is a thin forwarder: the server runs as
a session in the per-user daemon (daemon/forwarding.py, daemon/lsp_forwarder.py), which keeps
the editor's state per session; when the daemon goes away the session ends (exit 75) and the
editor starts the server again. Otherwise (the default), with `--tcp`, or when no daemon
answers (one note on stderr), the server runs in this process as before. Nothing heavy is
imported before that choice.
"""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects; `--stdio` is the default and only accepted."""
    if not args.tcp:
        forwarded = _forwarded(args)
        if forwarded is not None:
            return forwarded
    from codeask.lsp import server

    return server.run(tcp_port=args.tcp)


def _forwarded(args: argparse.Namespace) -> int | None:
    """The exit code of the session forwarded to the daemon, or None: serve in-process (the
    daemon is off, or could not be reached: one note on stderr, stdout untouched)."""
    if getattr(args, "no_daemon", False):
        return None
    from codeask.daemon import forwarding

    return forwarding.serve(int(args.verbose or 0))
