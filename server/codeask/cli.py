"""`codeask index | search | status | ask | serve`.

Human output (`index` shows a progress line: see progress_view), `--json` for machines. Logs go to
stderr: under `serve`, stdout is the LSP channel. Exit codes: 0 ok, 1 no results or a user
error, 2 bad usage, 4 index busy (`index --no-wait`). One writer per index folder: `index` waits
for another `index`, defers to a running server; `search` and `status` only read. Errors are
one clear line; `-v` adds the traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codeask import __version__

log = logging.getLogger("codeask")

EXIT_OK, EXIT_USER, EXIT_USAGE = 0, 1, 2
#: `codeask index --no-wait` while another `codeask index` writes the same index.
EXIT_BUSY = 4


class UserError(Exception):
    """A problem the user can fix; printed as one line, exit code 1."""


def _setup_logging(verbosity: int) -> None:
    level = logging.WARNING - 10 * verbosity
    logging.basicConfig(
        level=max(level, logging.DEBUG),
        stream=sys.stderr,
        format="%(levelname)s %(name)s: %(message)s",
    )


def default_root(start: Path | None = None) -> Path:
    """What a bare `codeask search` means: the project the current folder belongs to.

    That is the git root (else the current folder), unless an index in between (up to the git
    root, or up to `/` without git) records a root that contains the current folder: a nested
    indexed subproject. An index above the git root is another project's, never ours.
    """
    here = (start or Path.cwd()).resolve()
    git = next((c for c in (here, *here.parents) if (c / ".git").exists()), None)
    limit = git or Path(here.anchor)
    for candidate in (here, *here.parents):
        recorded = recorded_root(candidate / ".codeask")
        if recorded is not None and (recorded == here or recorded in here.parents):
            return recorded
        if candidate == limit:
            break
    return git or here


def recorded_root(index_folder: Path) -> Path | None:
    """The `root` an index folder's live manifest records (None without a readable one)."""
    from codeask.core.store import read_manifest

    manifest = read_manifest(index_folder)
    return Path(manifest.root) if manifest is not None else None


def _roots(paths: Sequence[str] | None) -> list[Path]:
    if not paths:
        return [default_root()]
    roots = []
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        if not path.is_dir():
            raise UserError(f"not a folder: {raw}")
        roots.append(path)
    return roots


def _print_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, default=str) + "\n")


# ---- index ---------------------------------------------------------------------------------
#: How often a waiting `codeask index` retries the writer lock.
WAIT_POLL_SECONDS = 0.5


class IndexBusyError(UserError):
    """Another writer has the index and --no-wait was given (exit code EXIT_BUSY)."""


def cmd_index(args: argparse.Namespace) -> int:
    from codeask.core.indexer import CancelToken

    reports = []
    for root in _roots(args.paths):
        folder = _open_writer(root, args)
        if folder is None:
            continue
        token = CancelToken()
        try:
            with _progress_bar(args, root) as progress:
                run = folder.rebuild if args.rebuild else folder.refresh
                report = run(progress=progress, cancel=token, embed=not args.lexical_only)
        except KeyboardInterrupt:
            token.cancel()
            folder.close()
            raise UserError(
                "interrupted; the index keeps what was done and resumes next run"
            ) from None
        status = folder.status()
        folder.close()
        reports.append((root, report, status))
    if args.json:
        _print_json([_index_summary(root, report, status) for root, report, status in reports])
    else:
        for root, report, status in reports:
            _print_index_summary(root, report, status, verbose=args.verbose > 0)
    return EXIT_OK


def _open_writer(root: Path, args: argparse.Namespace) -> Any:
    """The folder's index as its one writer: waits for another `codeask index`; defers to a
    running server (None), which keeps the index current and honours a rebuild request."""
    from codeask.core.indexer import FolderIndex, IndexBusy, RootRefused

    announced = False
    while True:
        try:
            return FolderIndex.open(
                root, mode="write", kind="index", allow_broad_root=args.allow_broad_root
            )
        except RootRefused as exc:
            raise UserError(str(exc)) from None
        except IndexBusy as busy:
            if busy.holder is not None and busy.holder.kind == "serve":
                _defer_to_server(busy, rebuild=args.rebuild)
                return None
            if args.no_wait:
                raise IndexBusyError(f"{busy}; not waiting (--no-wait)") from None
            if not announced:
                sys.stderr.write(f"codeask: {busy}; waiting… (Ctrl-C to stop)\n")
                sys.stderr.flush()
                announced = True
        time.sleep(WAIT_POLL_SECONDS)


def _defer_to_server(busy: Any, *, rebuild: bool) -> None:
    """A language server owns the folder: it keeps the index current; a rebuild is asked of it."""
    from codeask.core.writer_lock import request

    who = busy.holder.describe()
    if rebuild:
        request(busy.folder, "rebuild")
        sys.stderr.write(
            f"codeask: index at {busy.folder} is owned by {who}; asked it to rebuild the index "
            "(it picks the request up within seconds)\n"
        )
    else:
        sys.stderr.write(
            f"codeask: index at {busy.folder} is owned by {who}, which keeps it current; "
            "nothing to do\n"
        )


def _index_summary(root: Path, report: Any, status: Any) -> dict[str, Any]:
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
        "chunks": status.chunks,
        "embedded": status.embedded,
        "static_embedded": status.static_embedded,
        "static_computed": report.static_computed,
        "index_dir": status.index_dir,
    }


def _print_index_summary(root: Path, report: Any, status: Any, *, verbose: bool) -> None:
    err = sys.stderr
    err.write(
        f"{root}: {report.files_seen} files ({report.files_indexed} indexed, "
        f"{report.files_unchanged} unchanged, {report.files_removed} removed, "
        f"{len(report.skipped)} skipped), {status.chunks} chunks, "
        f"{status.embedded_percent:.0f}% embedded ({report.vectors_computed} computed), "
        f"searchable after {report.seconds_lexical:.1f}s, done in {report.seconds_total:.1f}s\n"
    )
    if report.skipped and not verbose:  # with -v they were logged one by one above
        err.write("  skipped files are listed with -v\n")


def _progress_bar(args: argparse.Namespace, root: Path) -> Any:
    """The indexing progress on stderr (see progress_view): a line updated in place on a
    terminal, a plain line per phase and every few seconds otherwise; none with --json."""
    from codeask.core.names import display_path
    from codeask.progress_view import ProgressOutput, progress_interval

    mode = "off" if args.json else "tty" if sys.stderr.isatty() else "plain"
    label = display_path(root.name or str(root))
    return ProgressOutput(label, mode, sys.stderr, interval=progress_interval())


# ---- search --------------------------------------------------------------------------------
def cmd_search(args: argparse.Namespace) -> int:
    from codeask.core.indexer import FolderIndex
    from codeask.core.retrieve import Filters, search

    if not args.query.strip():
        raise UserError("empty query")
    roots = _roots(args.root)
    _check_history(roots, args.scope)
    folders = [FolderIndex.open(root, mode="read") for root in roots]
    if not any(f.store.files for f in folders):
        damaged = [f for f in folders if f.damage]
        if damaged:
            raise UserError(
                f"the index at {damaged[0].folder} is damaged ({damaged[0].damage}); "
                "`codeask index` (or the running editor server) rebuilds it"
            )
        raise UserError("no index here yet: run `codeask index` first")
    filters = Filters(
        language=args.lang,
        path_glob=args.path,
        kind=args.kind,
        scope=args.scope,
        author=args.author,
        since=args.since,
        until=args.until,
    )
    started = time.perf_counter()
    result = search(folders, args.query, k=args.k, filters=filters, mode=args.mode)
    elapsed = time.perf_counter() - started
    if args.json:
        _print_json(
            {
                "query": args.query,
                "warming": result.warming,
                "seconds": round(elapsed, 4),
                "results": [_hit_json(hit) for hit in result.hits],
            }
        )
    else:
        _print_hits(result, elapsed)
    return EXIT_OK if result.hits else EXIT_USER


def _check_history(roots: list[Path], scope: str) -> None:
    """History needs a git repository: an error when no folder is one and only history was
    asked for; otherwise a note for each folder that is not one (its code is still searched)."""
    if scope == "code":
        return
    from codeask.core.git.repo import open_repo
    from codeask.core.names import display_path

    missing = [display_path(str(root)) for root in roots if open_repo(root) is None]
    if scope == "history" and len(missing) == len(roots):
        raise UserError(
            f"{missing[0]} is not a git repository: no history to search; "
            "index a git checkout or drop --history"
        )
    for root in missing:
        sys.stderr.write(f"codeask: {root} is not a git repository: no history to search there\n")


def _hit_json(hit: Any) -> dict[str, Any]:
    chunk = hit.chunk
    return {
        "path": str(hit.abs_path),
        "relative_path": chunk.path,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "symbol": chunk.symbol,
        "parent": chunk.parent,
        "kind": chunk.kind,
        "language": chunk.language,
        "score": round(hit.score, 6),
        "retrievers": hit.retrievers,
        "preview": hit.preview(),
        "meta": chunk.meta,
        "uncommitted": getattr(hit, "uncommitted", False),
    }


def _print_hits(result: Any, elapsed: float) -> None:
    from codeask.core.names import display_path  # a newline in a name must not split a hit

    out = sys.stdout
    if not result.hits:
        sys.stderr.write("no results\n")
        return
    for hit in result.hits:
        chunk = hit.chunk
        name = f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol
        path = display_path(chunk.path)
        out.write(
            f"{path}:{chunk.start_line}-{chunk.end_line}  {chunk.kind} {name}  "
            f"[{hit.score:.4f} {'+'.join(hit.retrievers)}]\n"
        )
        for line in hit.preview(2).splitlines():
            out.write(f"    {line[:120]}\n")
    note = (
        f"  (dense results filling in: {result.embedded}/{result.chunks} embedded)"
        if result.warming
        else ""
    )
    sys.stderr.write(f"{len(result.hits)} results in {elapsed * 1000:.0f} ms{note}\n")


# ---- status --------------------------------------------------------------------------------
def cmd_status(args: argparse.Namespace) -> int:
    from codeask.core.indexer import FolderIndex

    rows = []
    for root in _roots(args.root):
        folder = FolderIndex.open(root, mode="read")
        rows.append(folder.status())
        folder.close()
    if args.json:
        _print_json([dict(vars(row), embedded_percent=row.embedded_percent) for row in rows])
        return EXIT_OK
    for row in rows:
        when = (
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.last_indexed))
            if row.last_indexed
            else "never"
        )
        sys.stdout.write(
            f"{row.root}\n  files {row.files}, chunks {row.chunks}, "
            f"embedded {row.embedded_percent:.1f}%, history commits {row.history_commits}\n"
            f"  vector tiers: {row.tier_summary()}\n"
            f"  model {row.model}\n  index {row.index_dir} "
            f"({row.disk_bytes / 1e6:.1f} MB), last indexed {when}\n"
        )
    return EXIT_OK


# ---- serve / ask are provided by their own modules -------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    from codeask.lsp.server import run

    return run(tcp_port=args.tcp)


def cmd_ask(args: argparse.Namespace) -> int:
    from codeask.ask_cli import run_ask

    return run_ask(args)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to document the CLI)."""
    parser = argparse.ArgumentParser(
        prog="codeask", description="Index, search and ask about code, offline."
    )
    parser.add_argument("--version", action="version", version=f"codeask {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    index = sub.add_parser("index", help="index (or update) workspace folders")
    index.add_argument("paths", nargs="*", help="folders to index (default: this project)")
    index.add_argument("--rebuild", action="store_true", help="forget the index and rebuild it")
    index.add_argument(
        "--lexical-only", action="store_true", help="skip embedding (search is lexical)"
    )
    index.add_argument(
        "--no-wait",
        action="store_true",
        help=f"if another `codeask index` is writing this index, exit {EXIT_BUSY} at once",
    )
    index.add_argument(
        "--allow-broad-root",
        action="store_true",
        help="allow indexing your home folder or / (refused by default)",
    )
    index.add_argument("--json", action="store_true")
    index.set_defaults(func=cmd_index)

    search = sub.add_parser("search", help="hybrid semantic + lexical search")
    search.add_argument("query")
    _add_query_options(search)
    search.add_argument("--mode", choices=("hybrid", "lexical", "dense"), default="hybrid")
    search.add_argument("--scope", choices=("code", "history", "all"), default="code")
    search.add_argument(
        "--history",
        dest="scope",
        action="store_const",
        const="history",
        help="search git history (commits and diff hunks)",
    )
    search.add_argument(
        "--kind", help="function, method, class, module, section, window, commit, hunk"
    )
    search.add_argument("--author", help="history: author name or email contains this")
    search.add_argument("--since", help="history: on or after this date (YYYY-MM-DD)")
    search.add_argument("--until", help="history: on or before this date (YYYY-MM-DD)")
    search.set_defaults(func=cmd_search)

    status = sub.add_parser("status", help="what is indexed")
    status.add_argument("--root", action="append", help="workspace folder (repeatable)")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_status)

    ask = sub.add_parser("ask", help="ask a question; the answer streams from the configured LLM")
    ask.add_argument("question")
    _add_query_options(ask)
    ask.add_argument("--prompt-only", action="store_true", help="print the prompt, call no model")
    ask.set_defaults(func=cmd_ask)

    serve = sub.add_parser("serve", help="run the language server (stdio)")
    serve.add_argument("--tcp", type=int, metavar="PORT", help="listen on TCP instead (debugging)")
    serve.add_argument(
        "--stdio", action="store_true", help="use stdio (the default; accepted for LSP clients)"
    )
    serve.set_defaults(func=cmd_serve)
    return parser


def _add_query_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-k", type=int, default=None, help="number of results")
    parser.add_argument("--lang", help="only this language (python, go, ...)")
    parser.add_argument("--path", help="only paths matching this glob (gitignore syntax)")
    parser.add_argument("--root", action="append", help="workspace folder (repeatable)")
    parser.add_argument("--json", action="store_true")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `codeask` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _setup_logging(args.verbose)
    try:
        return int(args.func(args))
    except IndexBusyError as exc:
        sys.stderr.write(f"codeask: {exc}\n")
        return EXIT_BUSY
    except UserError as exc:
        sys.stderr.write(f"codeask: {exc}\n")
        return EXIT_USER
    except KeyboardInterrupt:
        sys.stderr.write("codeask: interrupted\n")
        return EXIT_USER
    except Exception as exc:
        if args.verbose:
            raise
        sys.stderr.write(f"codeask: {type(exc).__name__}: {exc} (run with -v for details)\n")
        return EXIT_USER


if __name__ == "__main__":
    raise SystemExit(main())
