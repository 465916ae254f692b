"""`codeask search`: hybrid search of the index, hits as `path:lines kind symbol` or JSON.

Exit code 1 when nothing is found, so scripts can tell.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask.cli.common import EXIT_OK, EXIT_USER, UserError, print_json, roots
from codeask.cli.forward import through_daemon
from codeask.core.source.names import display_path, display_text

if TYPE_CHECKING:  # the engine is imported only when this process answers (not the daemon)
    from codeask.core.indexer import FolderIndex
    from codeask.core.operations import Hit, SearchResult


def run(args: argparse.Namespace) -> int:
    """Search the folders' indexes; exit code 1 when there are no hits."""
    answered = through_daemon("search", args)
    return execute(args) if answered is None else answered


def execute(
    args: argparse.Namespace, open_folder: Callable[[Path], FolderIndex] | None = None
) -> int:
    """The search itself, here or in the daemon (whose `open_folder` keeps indexes open)."""
    from codeask.core import operations

    if not args.query.strip():
        raise UserError("empty query")
    folder_roots = roots(args.root)
    _check_history(folder_roots, args.scope)
    opener = open_folder or operations.open_for_reading
    folders = [opener(root) for root in folder_roots]
    if not operations.searchable(folders):
        damaged = operations.damaged(folders)
        if damaged is not None:
            raise UserError(
                f"the index at {damaged.folder} is damaged ({damaged.damage}); "
                "`codeask index` (or the running editor server) rebuilds it"
            )
        raise UserError("no index here yet: run `codeask index` first")
    filters = operations.Filters.from_options(args)
    started = time.perf_counter()
    result = operations.search_folders(
        folders, args.query, k=args.k, filters=filters, mode=args.mode
    )
    elapsed = time.perf_counter() - started
    coverage = operations.tier_counts(folders)
    if args.json:
        print_json(
            {
                "query": args.query,
                "warming": result.warming,
                "tiers_answered": result.tiers,
                "vectors": {c.tier: {"done": c.done, "total": c.total} for c in coverage},
                "seconds": round(elapsed, 4),
                "results": [_hit_json(hit) for hit in result.hits],
            }
        )
    else:
        _print_hits(result, elapsed, operations.tiers_line(result.tiers, coverage))
    return EXIT_OK if result.hits else EXIT_USER


def _check_history(folder_roots: list[Path], scope: str) -> None:
    """History needs a git repository: an error when no folder is one and only history was
    asked for; otherwise a note for each folder that is not one (its code is still searched)."""
    if scope == "code":
        return
    from codeask.core.operations import not_git_repositories

    missing = [display_path(str(root)) for root in not_git_repositories(folder_roots)]
    if scope == "history" and len(missing) == len(folder_roots):
        raise UserError(
            f"{missing[0]} is not a git repository: no history to search; "
            "index a git checkout or drop --history"
        )
    for root in missing:
        sys.stderr.write(f"codeask: {root} is not a git repository: no history to search there\n")


def _hit_json(hit: Hit) -> dict[str, Any]:
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


def _print_hits(result: SearchResult, elapsed: float, tiers: str) -> None:
    """The hits on stdout; on stderr how many, and (when a tier is incomplete or did not
    answer) which tiers answered and how many chunks each vector tier covers."""
    out = sys.stdout
    note = f"  ({tiers})" if tiers else ""
    if not result.hits:
        sys.stderr.write(f"no results{note}\n")
        return
    for hit in result.hits:
        chunk = hit.chunk
        name = f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol
        path = display_path(chunk.path)  # a newline in a name must not split a hit
        out.write(
            f"{path}:{chunk.start_line}-{chunk.end_line}  {chunk.kind} {display_text(name)}  "
            f"[{hit.score:.4f} {'+'.join(hit.retrievers)}]\n"
        )
        for line in hit.preview(2).splitlines():  # bidi overrides and controls shown escaped
            out.write(f"    {display_text(line[:120])}\n")
    if result.warming:
        note += "; `codeask index --full` or an editor's codeask server completes the vectors"
    sys.stderr.write(f"{len(result.hits)} results in {elapsed * 1000:.0f} ms{note}\n")
