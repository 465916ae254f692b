"""`codeask serve`: the language server, on stdio (or TCP for debugging).

With `daemon.enabled` on (docs/daemon.md) this process is a thin forwarder: the server runs as
a session in the per-user daemon (daemon/lsp_forwarder.py), which keeps the editor's state per
session and survives a daemon restart by replaying it. Otherwise (the default), with `--tcp`,
or when no daemon answers (one note on stderr), the server runs in this process as before.
Nothing heavy is imported before that choice.
"""

from __future__ import annotations

import argparse
import os
import sys


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
    from codeask.daemon import client, lsp_forwarder, relay

    if not client.enabled(args):
        return None
    request = lsp_forwarder.hello(int(args.verbose or 0))
    try:
        sock, reply = client.open_session(request)
    except Exception as exc:  # client.Unavailable, or anything else on the way
        _note(exc)
        return None
    if reply["status"] != "ok":  # no user error is defined for a session without arguments
        _note(RuntimeError(str(reply.get("message"))))
        return None

    reconnect = relay.reconnector(client.open_session, request, _child_argv(args), _note)

    stdout = os.dup(sys.stdout.fileno())  # stdout carries LSP only: stray output → stderr
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    proxy = lsp_forwarder.Proxy(relay.SocketUpstream(sock), reconnect, stdout_fd=stdout)
    return proxy.run()


def _child_argv(args: argparse.Namespace) -> list[str]:
    """`codeask serve` for a child with the daemon off."""
    flags = ["-v"] * int(args.verbose or 0)
    return [sys.executable, "-m", "codeask", *flags, "serve"]


def _note(exc: BaseException) -> None:
    why = str(exc) if type(exc).__name__ == "Unavailable" else f"{type(exc).__name__}: {exc}"
    sys.stderr.write(f"codeask: daemon unavailable ({why}); serving in-process\n")
    sys.stderr.flush()
