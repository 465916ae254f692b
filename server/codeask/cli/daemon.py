"""`codeask daemon`: run the per-user daemon in the foreground (`--stop`, `--status`).

Usually started on demand by `codeask search`, `status` or `index` when `daemon.enabled` is on;
it answers those operations with the same code they run in-process (handed over here, so the
daemon package never imports the CLI), as data the client renders, and exits after
`daemon.idle_seconds` without a request.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codeask import __version__
from codeask.cli.common import EXIT_OK, EXIT_USER, UserError, print_json
from codeask.daemon import client, protocol
from codeask.daemon.paths import LOCK_NAME, Unsafe, private_dir
from codeask.daemon.protocol import PROTOCOL

#: Seconds `--stop` waits for the daemon to be gone.
STOP_SECONDS = 10.0


def run(args: argparse.Namespace) -> int:
    if args.stop:
        return _stop()
    if args.status:
        return _status()
    return serve()


def serve() -> int:
    """The daemon, until idle or stopped."""
    from codeask.config import load_settings
    from codeask.core.indexer import SharedIndexes
    from codeask.daemon.folders import FolderCache
    from codeask.daemon.server import Daemon

    settings, _ = load_settings(None)
    logging.getLogger("codeask.daemon").setLevel(logging.INFO)  # start, exit, refusals: the log
    logging.getLogger("codeask.core.storage.hand_over").setLevel(logging.INFO)  # symbol_table.py
    try:
        run_dir = private_dir(create=True)
    except Unsafe as exc:
        raise UserError(str(exc)) from exc
    indexes = SharedIndexes()  # the one cache of open indexes: CLI requests and sessions
    folders = FolderCache(indexes)
    drivers = _Drivers(indexes)  # the one registry of folder drivers: every session's
    searched = _Searched(drivers, folders)
    agents = _Agents(drivers)
    editors = _Editors(drivers)
    daemon = Daemon(
        run_dir,
        {
            "search": _search_operation(folders, searched),
            "status": _status_operation(folders),
            "ask": _prompt_operation(folders, searched),
            "index": _index_operation(drivers, folders),
        },
        idle_seconds=settings.daemon.idle_seconds,
        environment=protocol.environment(),
        on_exit=lambda: _close_all(folders.close, drivers.close),
        sessions={"mcp": agents.session, "serve": editors.session},
    )
    daemon.describe_with(
        lambda: {
            "folders": folders.roots(),
            "loads": folders.opened,
            "mcp_folders": drivers.roots("mcp"),
            "editors": editors.count(),
            "indexes": indexes.describe(),
            "drivers": drivers.describe(),
            "kept_current": searched.outcomes(),
        }
    )
    threading.Thread(target=_warm_imports, daemon=True).start()
    return daemon.serve()


class _Request:
    """One operation's folders from the daemon's cache and the notes its own process would
    have written to stderr (each folder's settings warnings, as the CLI's log shows them)."""

    def __init__(self, folders: Any) -> None:
        self.cache = folders
        self.notes: list[str] = []
        self.held: list[Any] = []
        self.roots: list[Path] = []

    def open(self, root: Path) -> Any:
        folder = self.cache.open(root)
        self.held.append(folder)
        self.roots.append(root)
        self.notes.extend(f"WARNING codeask.core.indexer: {w}\n" for w in folder.warnings)
        return folder

    def note(self, line: str) -> None:
        self.notes.append(line)

    def done(self) -> str:
        """Release the folders; the notes as one text."""
        for folder in self.held:
            self.cache.release(folder)
        return "".join(self.notes)

    def run(self, work: Callable[[], Any]) -> tuple[Any, str]:
        """(what `work` answers, the notes); a user error with its notes as a CommandError."""
        from codeask.daemon.server import CommandError

        try:
            found = work()
        except UserError as exc:
            raise CommandError(str(exc), exc.exit_code, self.done()) from exc
        except BaseException:
            self.done()
            raise
        return found, self.done()


def _search_operation(folders: Any, searched: _Searched) -> Callable[[Any, str], tuple[Any, str]]:
    """`search`: cli/search.py's `answer` over the daemon's open indexes; the folders it read
    are then kept current (core/driver/keep_current.py)."""

    def search(call: Any, cwd: str) -> tuple[Any, str]:
        from codeask.cli.search import answer

        request = _Request(folders)
        found = request.run(
            lambda: answer(call, cwd=Path(cwd), open_folder=request.open, note=request.note)
        )
        searched.add(request.roots)
        return found

    return search


def _status_operation(folders: Any) -> Callable[[Any, str], tuple[Any, str]]:
    """`status`: each folder's status, read from the daemon's open indexes."""

    def status(call: Any, cwd: str) -> tuple[Any, str]:
        from codeask.cli.common import roots
        from codeask.cli.status import row_data

        request = _Request(folders)
        return request.run(
            lambda: [row_data(request.open(root).status()) for root in roots(call.root, Path(cwd))]
        )

    return status


def _prompt_operation(folders: Any, searched: _Searched) -> Callable[[Any, str], tuple[Any, str]]:
    """`ask --prompt-only`: cli/ask.py's `prompt_data` over the daemon's open indexes; the
    folders it read are then kept current, as a search's."""

    def prompt(call: Any, cwd: str) -> tuple[Any, str]:
        from codeask.cli.ask import prompt_data
        from codeask.cli.common import roots
        from codeask.core.operations.ask import check_question

        request = _Request(folders)

        def work() -> Any:
            try:
                check_question(call.question)
            except ValueError as exc:
                raise UserError(str(exc)) from None
            opened = [request.open(root) for root in roots(call.root, Path(cwd))]
            return prompt_data(call, opened, request.note)

        answered = request.run(work)
        searched.add(request.roots)
        return answered

    return prompt


def _index_operation(drivers: _Drivers, folders: Any) -> Callable[[Any, str], tuple[Any, str]]:
    """`index`: the pass on each folder's one driver (cli/index_pass.py); the read copy the
    searches kept of that folder is let go first (`FolderCache.forget`)."""

    def index(call: Any, cwd: str) -> tuple[Any, str]:
        from codeask.cli.index_pass import answer

        return answer(call, Path(cwd), drivers.get(), before_pass=folders.forget)

    return index


class _Drivers:
    """The daemon's one `SharedDrivers` (core/driver/shared.py), made by the first session:
    the engine's driver is not imported before the daemon answers its first request."""

    def __init__(self, indexes: Any) -> None:
        self._indexes = indexes
        self._made: Any = None
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            if self._made is None:
                from codeask.core.driver import SharedDrivers

                self._made = SharedDrivers(self._indexes)
            return self._made

    def describe(self) -> list[dict[str, Any]]:
        return self._made.describe() if self._made is not None else []

    def roots(self, kind: str) -> list[str]:
        return self._made.roots(kind) if self._made is not None else []

    def close(self) -> None:
        if self._made is not None:
            self._made.close()


class _Searched:
    """The folders searches read, handed to the engine's `KeepCurrent` (made with the first:
    the driver is not imported before a request needs it)."""

    def __init__(self, drivers: _Drivers, folders: Any) -> None:
        self._drivers = drivers
        self._folders = folders
        self._keeper: Any = None
        self._lock = threading.Lock()

    def add(self, roots: list[Path]) -> None:
        if not roots:
            return
        with self._lock:
            if self._keeper is None:
                from codeask.core.driver import KeepCurrent

                self._keeper = KeepCurrent(self._drivers.get, self._folders.forget)
            keeper = self._keeper
        keeper.searched(roots)

    def outcomes(self) -> dict[str, str]:
        """Each searched folder's last outcome (`--status`): held, or why not."""
        with self._lock:
            keeper = self._keeper
        return keeper.outcomes() if keeper is not None else {}


def _close_all(*closers: Callable[[], None]) -> None:
    for close in closers:
        close()


class _Agents:
    """`codeask mcp` sessions: each its own roots and checks, the folders' drivers the
    daemon's (mcp/remote.py; codeask's own MCP layer, no SDK)."""

    def __init__(self, drivers: _Drivers) -> None:
        self._drivers = drivers

    def session(self, args: argparse.Namespace, cwd: str) -> Callable[[socket.socket], None]:
        """Check the roots as `codeask mcp` would in the client's cwd (a user error is the
        client's), then serve the connection with tools over those roots only."""
        from codeask.cli.mcp import checked_roots
        from codeask.daemon.server import CommandError

        try:
            checked = checked_roots(args.paths, allow_broad=args.allow_broad_root, cwd=Path(cwd))
        except UserError as exc:
            raise CommandError(str(exc), exc.exit_code) from exc

        def serve(conn: socket.socket) -> None:
            from codeask.mcp.remote import acquire, release, serve_connection

            held = acquire(self._drivers.get(), checked)
            try:
                serve_connection(held, conn)
            finally:
                with contextlib.suppress(OSError):  # the forwarder exits now, not after the
                    conn.shutdown(socket.SHUT_RDWR)  # index is saved
                release(held)

        return serve


class _Editors:
    """`codeask serve` sessions: one language server per editor, each with its own documents,
    settings, folders and trust (lsp/remote.py; pygls is imported with the first session); a
    folder's driver and index are shared by every session (agents' too) that would open the
    same one."""

    def __init__(self, drivers: _Drivers) -> None:
        self._open = 0
        self._drivers = drivers
        self._lock = threading.Lock()

    def session(self, args: argparse.Namespace, cwd: str) -> Callable[[socket.socket], None]:
        """The editor names its folders in `initialize`: nothing to check before serving."""

        def serve(conn: socket.socket) -> None:
            from codeask.lsp.remote import serve_connection

            with self._lock:
                self._open += 1
            try:
                serve_connection(conn, self._drivers.get())
            finally:
                with self._lock:
                    self._open -= 1

        return serve

    def count(self) -> int:
        with self._lock:
            return self._open


def _warm_imports() -> None:
    """What the first search needs, imported while the daemon waits for it."""
    from codeask.cli import ask, search, status  # noqa: F401
    from codeask.core import operations  # noqa: F401


def _ping(command: str) -> client.Answer:
    request = {"protocol": PROTOCOL, "version": __version__, "command": command}
    return client.call(request, start=False)


def _status() -> int:
    try:
        reply = _ping("ping")
    except client.Unavailable as exc:
        sys.stdout.write(f"no codeask daemon answers ({exc})\n")
        return EXIT_USER
    if reply["status"] != "ok":
        sys.stdout.write(f"a codeask daemon answers but refuses: {reply.get('message')}\n")
        return EXIT_USER
    print_json(reply.get("info", {}))
    return EXIT_OK


def _stop() -> int:
    from codeask.daemon.server import lock_holder

    try:
        run_dir = private_dir(create=False)
        _ping("stop")
    except FileNotFoundError:
        sys.stdout.write("no codeask daemon running\n")
        return EXIT_OK
    except (client.Unavailable, Unsafe) as exc:
        sys.stdout.write(f"no codeask daemon answers ({exc})\n")
        return EXIT_OK
    deadline = time.monotonic() + STOP_SECONDS
    while lock_holder(run_dir / LOCK_NAME) is not None:
        if time.monotonic() > deadline:
            raise UserError(f"the daemon did not stop within {STOP_SECONDS:.0f} s")
        time.sleep(0.05)
    sys.stdout.write("codeask daemon stopped\n")
    return EXIT_OK
