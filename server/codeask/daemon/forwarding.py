"""`codeask serve` and `codeask mcp` as forwarders to the per-user daemon (docs/daemon.md): the
choice (is the daemon on), the session opened, the proxy run.

`run` is what `python -m codeask` runs first. A plain `codeask [-v...] serve [--stdio]` or
`codeask [-v...] mcp [--allow-broad-root] [--] [PATH...]` with the daemon on is forwarded
without importing the CLI (argparse, logging, pathlib, typing, the parser's modules, the heap
tuning's ctypes): the process an editor or agent starts holds only what forwarding needs
(12.5-13 MB resident, ~4 MB less than through `codeask.cli`). Anything else, a daemon turned
off, or one that cannot be had (one note on stderr), runs the full CLI: the command in-process
as before, with `--no-daemon` added after the command when forwarding was already tried here.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Callable, Sequence
    from typing import Any

EXIT_USER = 1  # cli/common.py's: importing it would import the CLI


class Refused(Exception):
    """The daemon's user error for this session (e.g. a folder that does not exist)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def run(argv: Sequence[str]) -> int:
    """`codeask ARGV`: forwarded when it is a plain serve or mcp and the daemon answers, else
    the full CLI's `main` (told `--no-daemon` when forwarding was tried already)."""
    argv = list(argv)
    plain = _plain(argv)
    if plain is not None and _daemon_on():
        at, verbose, broad, paths = plain
        try:
            code = serve(verbose) if argv[at] == "serve" else _agent(paths, broad, verbose)
        except KeyboardInterrupt:
            sys.stderr.write("codeask: interrupted\n")
            return EXIT_USER
        if code is not None:
            return code
        argv.insert(at + 1, "--no-daemon")  # tried here: the CLI serves in-process
    from codeask.cli import main

    return main(argv)


def _agent(paths: list[str], allow_broad_root: bool, verbose: int) -> int | None:
    """`mcp`, its refusal (a missing folder) said in one line as the CLI says a user error."""
    try:
        return mcp(paths, allow_broad_root=allow_broad_root, verbose=verbose)
    except Refused as exc:
        sys.stderr.write(f"codeask: {exc}\n")
        return exc.code


def _daemon_on() -> bool:
    """`daemon.enabled`; False when it cannot be read here (an invalid config: the CLI reads
    it again and says why, as it always did)."""
    from codeask.daemon import client

    try:
        return client.setting()
    except Exception:
        return False


def _plain(argv: list[str]) -> tuple[int, int, bool, list[str]] | None:
    """(where the command stands, the verbosity, `--allow-broad-root`, the folders) of a plain
    serve or mcp, read as argparse reads it (cli/parser.py); None for anything else (the full
    CLI parses it: options abbreviated, --help, --tcp, --no-daemon, a flag after a folder...)."""
    at, verbose = 0, 0
    for arg in argv:
        if arg == "--verbose":
            verbose += 1
        elif arg[:2] == "-v" and set(arg[1:]) == {"v"}:
            verbose += len(arg) - 1
        else:
            break
        at += 1
    command, rest = (argv[at], argv[at + 1 :]) if at < len(argv) else ("", [])
    if command == "serve":
        return (at, verbose, False, []) if set(rest) <= {"--stdio"} else None
    if command != "mcp":
        return None
    broad = False
    while rest[:1] == ["--allow-broad-root"]:
        broad, rest = True, rest[1:]
    if rest[:1] == ["--"]:
        return at, verbose, broad, rest[1:]
    if any(arg.startswith("-") for arg in rest):
        return None
    return at, verbose, broad, rest


def serve(verbose: int) -> int | None:
    """The exit code of the editor's session forwarded to the daemon, or None: serve
    in-process (the daemon is off, or could not be reached: one note on stderr, stdout
    untouched)."""
    from codeask.daemon import lsp_forwarder

    instead = "serving in-process"
    request = lsp_forwarder.hello(verbose)
    opened = _open(request, instead)
    if opened is None:
        return None
    sock, reply = opened
    if reply["status"] != "ok":  # no user error is defined for a session without arguments
        _note(RuntimeError(str(reply.get("message"))), instead)
        return None
    child = [sys.executable, "-m", "codeask", *(["-v"] * verbose), "serve"]
    reconnect = _reconnector(request, child, instead)

    stdout = os.dup(sys.stdout.fileno())  # stdout carries LSP only: stray output → stderr
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    from codeask.daemon.relay import SocketUpstream

    return lsp_forwarder.Proxy(SocketUpstream(sock), reconnect, stdout_fd=stdout).run()


def mcp(paths: list[str], *, allow_broad_root: bool, verbose: int) -> int | None:
    """The exit code of the agent's session forwarded to the daemon, or None: serve in-process
    (as `serve`). The daemon's user error (a missing folder) raises `Refused`."""
    from codeask.daemon import forwarder

    instead = "answering in-process"
    request = forwarder.hello(paths, allow_broad_root=allow_broad_root, verbose=verbose)
    opened = _open(request, instead)
    if opened is None:
        return None
    sock, reply = opened
    if reply["status"] == "user_error":
        raise Refused(str(reply.get("message")), int(reply.get("code") or EXIT_USER))
    broad = ["--allow-broad-root"] if allow_broad_root else []
    child = [sys.executable, "-m", "codeask", *(["-v"] * verbose), "mcp", *broad, "--", *paths]
    reconnect = _reconnector(request, child, instead)
    from codeask.daemon.relay import SocketUpstream

    return forwarder.Proxy(SocketUpstream(sock), reconnect).run()


def _open(request: dict[str, Any], instead: str) -> tuple[socket.socket, dict[str, Any]] | None:
    """(the session's socket, the daemon's reply), or None: the daemon is off, or none could
    be had (noted on stderr)."""
    from codeask.daemon import client

    if not client.setting():
        return None
    try:
        return client.open_session(request)
    except Exception as exc:  # client.Unavailable, or anything else on the way
        _note(exc, instead)
        return None


def _reconnector(request: dict[str, Any], child: list[str], instead: str) -> Callable[[], Any]:
    """The next upstream when the daemon goes away (relay.reconnector)."""
    from codeask.daemon.client import open_session
    from codeask.daemon.relay import reconnector

    return reconnector(open_session, request, child, lambda exc: _note(exc, instead))


def _note(exc: BaseException, instead: str) -> None:
    why = str(exc) if type(exc).__name__ == "Unavailable" else f"{type(exc).__name__}: {exc}"
    sys.stderr.write(f"codeask: daemon unavailable ({why}); {instead}\n")
    sys.stderr.flush()
