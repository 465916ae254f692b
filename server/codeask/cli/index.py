"""`codeask index`: index (or update) folders as their one writer, with a progress line.

With the daemon on (docs/daemon.md), the pass runs there, on the folder's one driver (the one
an editor's or an agent's session on the folder shares; the index stays open and warm between
passes while a session holds it); the daemon answers the summaries as data and this process
prints them (index_view.py) without a progress line. A long pass (first pass, --rebuild,
--full) on a folder no session holds is handed back to run here, with its progress line.
Publishing (`--backend postgres`) and
`--allow-broad-root` run here. In-process, it waits for another `codeask index` on the same
index (or exits at once with --no-wait) and defers to a running language server or MCP
server, which keeps the index current itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask.cli.common import EXIT_BUSY, EXIT_OK, UserError, roots
from codeask.cli.forward import answer_of, through_daemon
from codeask.cli.index_view import show, summary_data

if TYPE_CHECKING:  # the engine is imported only when this process runs the pass
    from codeask.core.operations.index import FolderIndex
    from codeask.core.storage.writer_lock import LockInfo
    from codeask.progress_view import ProgressOutput

#: How often a waiting `codeask index` retries the writer lock.
WAIT_POLL_SECONDS = 0.5
#: Writers that keep an index current for as long as they run (an editor's server, an agent's
#: MCP server, the daemon's driver held after `codeask index`): `codeask index` leaves the work
#: to them instead of waiting for them to exit.
LONG_LIVED_WRITERS = ("serve", "mcp", "daemon")


class IndexBusyError(UserError):
    """Another writer has the index and --no-wait was given."""

    exit_code = EXIT_BUSY


def run(args: argparse.Namespace) -> int:
    """Index every folder named (or this project), then one summary per folder; with
    `--backend postgres`, publish each folder's index of HEAD to the team database."""
    publish = args.backend == "postgres"
    if publish:
        if args.lexical_only:
            raise UserError("--backend postgres publishes vectors: it cannot run --lexical-only")
        os.environ["CODEASK_INDEX__BACKEND"] = "postgres"  # this run shares the team's vectors
    answered = None if publish or args.allow_broad_root else _through_daemon(args)
    if answered is None:
        answered = [{"root": str(root), "in_process": True} for root in roots(args.paths)]
    summaries: list[dict[str, Any]] = []
    published: list[str] = []
    for entry in answered:
        if not entry.get("in_process"):
            summaries.append(entry["summary"])
            continue
        done = _index_here(Path(entry["root"]), args, publish)
        if done is not None:
            summaries.append(done[0])
            published.extend(done[1:])
    show(summaries, as_json=args.json, verbose=args.verbose > 0, hint_full=not args.lexical_only)
    for line in published:
        sys.stderr.write(line + "\n")
    return EXIT_OK


def _through_daemon(args: argparse.Namespace) -> list[dict[str, Any]] | None:
    """The daemon's answer (each folder's summary, or `in_process`: another process writes it
    and this one waits as it would alone), or None: the daemon is off or could not answer."""
    try:
        reply = through_daemon("index", args)
    except KeyboardInterrupt:
        raise UserError(
            "interrupted; the daemon's pass runs to its end and the index keeps it"
        ) from None
    return None if reply is None else list(answer_of(reply))


def _index_here(root: Path, args: argparse.Namespace, publish: bool) -> tuple[Any, ...] | None:
    """One folder indexed in this process: (its summary, the publish line if any), or None
    when a running server owns it."""
    from codeask.core.operations.index import CancelToken

    folder = _open_writer(root, args)
    if folder is None:
        return None
    token = CancelToken()
    try:
        with _progress_bar(args, root) as progress:
            refresh = folder.rebuild if args.rebuild else folder.refresh
            # a published index carries every tier; --lexical-only never waits for MiniLM
            full = (args.full or publish) and not args.lexical_only
            report = refresh(progress=progress, cancel=token, embed=full)
    except KeyboardInterrupt:
        token.cancel()
        folder.close()
        raise UserError("interrupted; the index keeps what was done and resumes next run") from None
    status = folder.status()
    try:
        line = _publish(folder, args.repo_name) if publish and not report.cancelled else None
    finally:
        folder.close()
    summary = summary_data(root, report, status, folder.settings.embed)
    return (summary,) if line is None else (summary, line)


def _publish(folder: FolderIndex, repo_name: str | None) -> str:
    """Publish the folder's index as its HEAD commit; the lines saying what happened, under
    which name and where the name came from (`--repo-name`, the `origin` URL, the folder)."""
    from codeask.core.storage.postgres.connect import PgError
    from codeask.core.storage.postgres.publish import publish_folder

    try:
        done = publish_folder(folder.root, folder.storage, folder.settings.index.dsn_env, repo_name)
    except PgError as exc:
        raise UserError(f"publishing {folder.root} to the team index: {exc}") from None
    named = done.name.describe() if done.name is not None else f"'{done.repository}'"
    if not done.created:
        line = (
            f"{folder.root}: already published as {named}, revision {done.revision_id}; "
            "nothing written"
        )
    else:
        rate = done.chunks / done.seconds if done.seconds > 0 else 0.0
        line = (
            f"{folder.root}: published revision {done.revision_id} as {named}: {done.chunks} "
            f"chunks, {done.files} files in {done.seconds:.1f}s ({rate:.0f} rows/s)"
        )
    if done.name is not None and done.name.source == "folder":
        line += (
            "\n  editors find it by commit whatever their clone's name; to publish under a name"
            " of your choice, pass --repo-name NAME"
        )
    return line


def _open_writer(root: Path, args: argparse.Namespace) -> FolderIndex | None:
    """The folder's index as its one writer: waits for another `codeask index`; defers to a
    running server (None), which keeps the index current and honours a rebuild request."""
    from codeask.core.operations.index import FolderIndex, IndexBusy, RootRefused

    announced = False
    while True:
        try:
            return FolderIndex.open(
                root,
                mode="write",
                kind="index",
                allow_broad_root=args.allow_broad_root,
                read_team=args.backend != "postgres",  # a publisher indexes every file itself
            )
        except RootRefused as exc:
            raise UserError(str(exc)) from None
        except IndexBusy as busy:
            if busy.holder is not None and busy.holder.kind in LONG_LIVED_WRITERS:
                sys.stderr.write(deferred(busy.folder, busy.holder, rebuild=args.rebuild))
                return None
            if args.no_wait:
                raise IndexBusyError(f"{busy}; not waiting (--no-wait)") from None
            if not announced:
                sys.stderr.write(f"codeask: {busy}; waiting… (Ctrl-C to stop)\n")
                sys.stderr.flush()
                announced = True
        time.sleep(WAIT_POLL_SECONDS)


def deferred(index_dir: Path, holder: LockInfo | None, *, rebuild: bool) -> str:
    """A server owns the folder: it keeps the index current; a rebuild is asked of it. The
    line that says so (here, or in the daemon's notes)."""
    from codeask.core.operations.index import request_from_owner

    who = holder.describe() if holder is not None else "another process"
    if rebuild:
        request_from_owner(index_dir, "rebuild")
        return (
            f"codeask: index at {index_dir} is owned by {who}; asked it to rebuild the index "
            "(it picks the request up within seconds)\n"
        )
    return (
        f"codeask: index at {index_dir} is owned by {who}, which keeps it current; nothing to do\n"
    )


def _progress_bar(args: argparse.Namespace, root: Path) -> ProgressOutput:
    """The indexing progress on stderr (see progress_view): a line updated in place on a
    terminal, a plain line per phase and every few seconds otherwise; none with --json."""
    from codeask.core.source.names import display_path
    from codeask.progress_view import ProgressOutput, progress_interval

    mode = "off" if args.json else "tty" if sys.stderr.isatty() else "plain"
    label = display_path(root.name or str(root))
    return ProgressOutput(label, mode, sys.stderr, interval=progress_interval())
