"""`codeask index`: index (or update) folders as their one writer, with a progress line.

It waits for another `codeask index` on the same index (or exits at once with --no-wait) and
defers to a running language server, which keeps the index current itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from codeask.cli.common import EXIT_BUSY, EXIT_OK, UserError, print_json, roots
from codeask.config import DEFAULT_EMBED_MODEL, EmbedSettings
from codeask.core.operations.index import (
    CancelToken,
    FolderIndex,
    IndexBusy,
    IndexReport,
    IndexStatus,
    RootRefused,
    request_from_owner,
)
from codeask.core.source.names import display_path
from codeask.progress_view import ProgressOutput, progress_interval

#: How often a waiting `codeask index` retries the writer lock.
WAIT_POLL_SECONDS = 0.5
#: Writers that keep an index current for as long as they run (an editor's server, an agent's
#: MCP server): `codeask index` leaves the work to them instead of waiting for them to exit.
LONG_LIVED_WRITERS = ("serve", "mcp")
#: MiniLM tier throughput measured on 2 shared cores (benchmarks/README.md): for the estimate.
MINILM_CHUNKS_PER_SECOND = 25.0


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
    reports = []
    published: list[str] = []
    for root in roots(args.paths):
        folder = _open_writer(root, args)
        if folder is None:
            continue
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
            raise UserError(
                "interrupted; the index keeps what was done and resumes next run"
            ) from None
        status = folder.status()
        try:
            if publish and not report.cancelled:
                published.append(_publish(folder, args.repo_name))
        finally:
            folder.close()
        reports.append((root, report, status, folder.settings.embed))
    if args.json:
        print_json([_index_summary(root, report, status) for root, report, status, _ in reports])
    else:
        for root, report, status, embed in reports:
            _print_index_summary(
                root,
                report,
                status,
                embed,
                verbose=args.verbose > 0,
                hint_full=not args.lexical_only,
            )
    for line in published:
        sys.stderr.write(line + "\n")
    return EXIT_OK


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
                _defer_to_server(busy, rebuild=args.rebuild)
                return None
            if args.no_wait:
                raise IndexBusyError(f"{busy}; not waiting (--no-wait)") from None
            if not announced:
                sys.stderr.write(f"codeask: {busy}; waiting… (Ctrl-C to stop)\n")
                sys.stderr.flush()
                announced = True
        time.sleep(WAIT_POLL_SECONDS)


def _defer_to_server(busy: IndexBusy, *, rebuild: bool) -> None:
    """A language server owns the folder: it keeps the index current; a rebuild is asked of it."""
    who = busy.holder.describe() if busy.holder is not None else "another process"
    if rebuild:
        request_from_owner(busy.folder, "rebuild")
        sys.stderr.write(
            f"codeask: index at {busy.folder} is owned by {who}; asked it to rebuild the index "
            "(it picks the request up within seconds)\n"
        )
    else:
        sys.stderr.write(
            f"codeask: index at {busy.folder} is owned by {who}, which keeps it current; "
            "nothing to do\n"
        )


def _index_summary(root: Path, report: IndexReport, status: IndexStatus) -> dict[str, Any]:
    return {
        "root": str(root),
        "files_seen": report.files_seen,
        "files_indexed": report.files_indexed,
        "files_unchanged": report.files_unchanged,
        "files_removed": report.files_removed,
        "files_skipped": len(report.skipped),
        "chunks_added": report.chunks_added,
        "chunks_embedded": report.chunks_embedded,
        "vectors_computed": report.vectors_computed,
        "commits_added": report.commits_added,
        "seconds_lexical": round(report.seconds_lexical, 3),
        "seconds_total": round(report.seconds_total, 3),
        "cancelled": report.cancelled,
        "ignore_note": status.ignore_note,
        "chunks": status.chunks,
        "embedded": status.embedded,
        "static_embedded": status.static_embedded,
        "static_computed": report.static_computed,
        "minilm_pending": status.chunks - status.embedded if status.model_tier == "full" else 0,
        "model_tier": status.model_tier,
        "index_dir": status.index_dir,
    }


def _print_index_summary(
    root: Path,
    report: IndexReport,
    status: IndexStatus,
    embed: EmbedSettings,
    *,
    verbose: bool,
    hint_full: bool,
) -> None:
    err = sys.stderr
    err.write(
        f"{root}: {report.files_seen} files ({report.files_indexed} indexed, "
        f"{report.files_unchanged} unchanged, {report.files_removed} removed, "
        f"{len(report.skipped)} skipped), {status.chunks} chunks, "
        f"{status.embedded_percent:.0f}% embedded ({report.vectors_computed} computed), "
        f"searchable after {report.seconds_lexical:.1f}s, done in {report.seconds_total:.1f}s\n"
    )
    if status.ignore_note:
        err.write(f"  warning: {status.ignore_note}\n")
    if report.skipped and not verbose:  # with -v they were logged one by one above
        err.write("  skipped files are listed with -v\n")
    if status.model_tier.startswith("on demand"):
        err.write(
            f"  {status.chunks} chunks: the model tier is filled on demand (a pasted report's "
            "first candidates, and the files you open or change), never in one pass "
            "(`embed.model_full_pass_chunks`)\n"
        )
    elif hint_full and "minilm" in status.tiers and status.embedded < status.chunks:
        err.write(
            "  first pass done (lexical + static vectors): search away. "
            f"{_model_tier_note(status, embed)}, or an editor's codeask server fills it in "
            "the background\n"
        )


def _model_tier_note(status: IndexStatus, embed: EmbedSettings) -> str:
    """What the model tier lacks and how long `--full` takes: the estimate measured for the
    packaged MiniLM on 2 cores, none for a server (its speed is its own)."""
    done = f"{status.embedded}/{status.chunks} chunks; `codeask index --full` completes it"
    if embed.provider != "local":
        where = embed.endpoint or "its default address"
        return f"The model tier ({embed.provider} '{embed.model}' at {where}) has {done}"
    if embed.model != DEFAULT_EMBED_MODEL:
        return f"The model tier ('{embed.model}') has {done}"
    return f"The MiniLM tier has {done} (~{_minutes(status.chunks - status.embedded)} on 2 cores)"


def _minutes(chunks: int) -> str:
    """How long the MiniLM tier takes for `chunks`, at the ~25 chunks/s measured on sphinx on 2
    cores (the slow end: fzf's shorter chunks ran at 55/s)."""
    seconds = chunks / MINILM_CHUNKS_PER_SECOND
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{max(seconds, 1):.0f} s"


def _progress_bar(args: argparse.Namespace, root: Path) -> ProgressOutput:
    """The indexing progress on stderr (see progress_view): a line updated in place on a
    terminal, a plain line per phase and every few seconds otherwise; none with --json."""
    mode = "off" if args.json else "tty" if sys.stderr.isatty() else "plain"
    label = display_path(root.name or str(root))
    return ProgressOutput(label, mode, sys.stderr, interval=progress_interval())
