"""`codeask serve`, `codeask mcp` and `codeask search` forwarded to the per-user daemon
(docs/daemon.md) before the CLI is imported: the choice (is the daemon on), the session opened
and the proxy run, or the search asked and its answer printed.

`run` is what `python -m codeask` runs first. A plain `codeask [-v...] serve [--stdio]` or
`codeask [-v...] mcp [--allow-broad-root] [--] [PATH...]` with the daemon on is forwarded
without importing the CLI (argparse, logging, pathlib, typing, the parser's modules, the heap
tuning's ctypes), nor the standard library's wrappers (socket, threading, json, re, contextlib,
subprocess, struct, math: relay.py): the process an editor or agent starts holds only what
forwarding needs (on sphinx: ~9.5 MB resident through the `codeask` script, 10-10.2 MB through
`python -m codeask`, whose runpy adds ~0.7 MB; a bare interpreter is 8.7 MB). A plain `codeask
[-v...] search QUERY [OPTIONS]` (daemon/search_line.py) is asked of a daemon already running
and its answer (data) rendered by the CLI's own renderer (codeask/search_view.py), with no
import of the CLI, argparse, json or the engine (the command's time is then mostly the
interpreter's start). Anything else, a daemon turned off, a daemon setting only
`codeask.config` can read, no daemon running (the CLI starts one), or one that cannot answer
(one note on stderr), runs the full CLI: the command in-process as before, with `--no-daemon`
added after the command when forwarding was already tried here."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    from collections.abc import Callable, Sequence
    from typing import Any

EXIT_USER = 1  # cli/common.py's: importing it would import the CLI


class Refused(Exception):
    """The daemon's user error for this session (e.g. a folder that does not exist)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def run(argv: Sequence[str]) -> int:
    """`codeask ARGV`: forwarded when it is a plain serve, mcp or search and the daemon
    answers, else the full CLI's `main` (told `--no-daemon` when forwarding was tried already)."""
    argv = list(argv)
    from codeask.daemon import search_line

    search = search_line.read(argv)
    if search is not None:
        code, tried = _search(search)
        if code is not None:
            return code
        if tried:  # the note is said: the CLI answers in-process, as after its own try
            argv.insert(search_line.leading_verbosity(argv)[0] + 1, "--no-daemon")
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


def _search(args: dict[str, Any]) -> tuple[int | None, bool]:
    """(the exit code of the search a running daemon answered, or None; whether it was asked
    and could not answer, said in one line on stderr). None without that: the daemon is off,
    its setting is not plain, or none is running (the full CLI starts one)."""
    from codeask.daemon import client

    try:
        on = client.plain_setting()
    except Exception:  # an unreadable config: the CLI reads it again and says why
        on = None
    if not on:
        return None, False
    try:
        reply = client.ask_running("search", args)
    except client.NotRunning:
        return None, False
    except KeyboardInterrupt:
        sys.stderr.write("codeask: interrupted\n")
        return EXIT_USER, False
    except Exception as exc:  # client.Unavailable, or anything else on the way
        _note(exc, "answering in-process")
        return None, True
    return _show(reply, args), False


def _show(reply: dict[str, Any], args: dict[str, Any]) -> int:
    """The daemon's answer rendered as the CLI renders it (codeask/search_view.py), then
    cli/__init__.py's `main` for a failure to write."""
    try:
        from codeask import search_view

        answer = reply.get("answer") if reply["status"] == "ok" else None
        return search_view.show(
            reply["notes"], answer, reply["message"], int(reply["code"]), bool(args["json"])
        )
    except KeyboardInterrupt:
        sys.stderr.write("codeask: interrupted\n")
        return EXIT_USER
    except Exception as exc:
        if args["verbose"]:
            raise
        sys.stderr.write(f"codeask: {type(exc).__name__}: {exc} (run with -v for details)\n")
        return EXIT_USER


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
    from codeask.daemon.search_line import leading_verbosity

    at, verbose = leading_verbosity(argv)
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
    untouched). The daemon going away ends the session (lsp_forwarder.RESTART)."""
    from codeask.daemon import lsp_forwarder

    instead = "serving in-process"
    opened = _open(lsp_forwarder.hello(verbose), instead)
    if opened is None:
        return None
    sock, reply = opened
    if reply["status"] != "ok":  # no user error is defined for a session without arguments
        _note(RuntimeError(str(reply.get("message"))), instead)
        return None
    stdout = os.dup(sys.stdout.fileno())  # stdout carries LSP only: stray output → stderr
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return lsp_forwarder.Pipe(sock, stdout_fd=stdout).run()


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
    child = codeask_argv(*(["-v"] * verbose), "mcp", *broad, "--", *paths)
    reconnect = _reconnector(request, child, instead)
    from codeask.daemon.relay import SocketUpstream

    return forwarder.Proxy(SocketUpstream(sock), reconnect).run()


def _open(request: dict[str, Any], instead: str) -> tuple[_socket.socket, dict[str, Any]] | None:
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


def codeask_argv(*args: str) -> list[str]:
    """`codeask ARGS` in this interpreter, for the in-process answer after a drop. -P: `-m`
    would put the working directory (the editor's workspace) first on sys.path, and a
    workspace's own `codeask/` package would run instead of codeask."""
    return [sys.executable, "-P", "-m", "codeask", *args]


def _reconnector(request: dict[str, Any], child: list[str], instead: str) -> Callable[[], Any]:
    """The next upstream when the daemon goes away (relay.reconnector)."""
    from codeask.daemon.client import open_session
    from codeask.daemon.relay import reconnector

    return reconnector(open_session, request, child, lambda exc: _note(exc, instead))


def _note(exc: BaseException, instead: str) -> None:
    why = str(exc) if type(exc).__name__ == "Unavailable" else f"{type(exc).__name__}: {exc}"
    sys.stderr.write(f"codeask: daemon unavailable ({why}); {instead}\n")
    sys.stderr.flush()
