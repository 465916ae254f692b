"""What `codeask index` prints: each folder's summary as data (made where the pass ran: this
process, or the daemon), and the one renderer of it, so both print the same lines.

The data is the `--json` object plus what the human lines derive from the status and the
settings (the embedded share, whether a MiniLM tier is incomplete, the note on how to fill it).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from codeask.cli.common import print_json

if TYPE_CHECKING:  # the engine is imported only where the pass ran
    from pathlib import Path

    from codeask.config import EmbedSettings
    from codeask.core.operations.index import IndexReport, IndexStatus

#: MiniLM tier throughput measured on 2 shared cores (benchmarks/README.md): for the estimate.
MINILM_CHUNKS_PER_SECOND = 25.0


def summary_data(
    root: Path, report: IndexReport, status: IndexStatus, embed: EmbedSettings
) -> dict[str, Any]:
    """One folder's summary as plain data: `json` (the `--json` object) and the text's parts."""
    return {
        "json": _index_summary(root, report, status),
        "embedded_percent": status.embedded_percent,
        "seconds": [report.seconds_lexical, report.seconds_total],  # the text's, unrounded
        "model_incomplete": "minilm" in status.tiers and status.embedded < status.chunks,
        "model_note": _model_tier_note(status, embed),
    }


def show(summaries: list[dict[str, Any]], *, as_json: bool, verbose: bool, hint_full: bool) -> None:
    """The summaries (`summary_data`): one `--json` document, or each folder's lines."""
    if as_json:
        print_json([summary["json"] for summary in summaries])
        return
    for summary in summaries:
        _print_summary(summary, verbose=verbose, hint_full=hint_full)


def _index_summary(root: Path, report: IndexReport, status: IndexStatus) -> dict[str, Any]:
    return {
        "root": str(root),
        "files_seen": report.files_seen,
        "files_checked": report.files_checked,
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


def _print_summary(summary: dict[str, Any], *, verbose: bool, hint_full: bool) -> None:
    err, data = sys.stderr, summary["json"]
    lexical, total = summary["seconds"]
    err.write(
        f"{data['root']}: {data['files_seen']} files ({data['files_indexed']} indexed, "
        f"{data['files_unchanged']} unchanged, {data['files_removed']} removed, "
        f"{data['files_skipped']} skipped), {data['chunks']} chunks, "
        f"{summary['embedded_percent']:.0f}% embedded ({data['vectors_computed']} computed), "
        f"searchable after {lexical:.1f}s, done in {total:.1f}s\n"
    )
    if data["ignore_note"]:
        err.write(f"  warning: {data['ignore_note']}\n")
    if data["files_skipped"] and not verbose:  # with -v they were logged one by one above
        err.write("  skipped files are listed with -v\n")
    if data["model_tier"].startswith("on demand"):
        err.write(
            f"  {data['chunks']} chunks: the model tier is filled on demand (a pasted report's "
            "first candidates, and the files you open or change), never in one pass "
            "(`embed.model_full_pass_chunks`)\n"
        )
    elif hint_full and summary["model_incomplete"]:
        err.write(
            "  first pass done (lexical + static vectors): search away. "
            f"{summary['model_note']}, or an editor's codeask server fills it in "
            "the background\n"
        )


def _model_tier_note(status: IndexStatus, embed: EmbedSettings) -> str:
    """What the model tier lacks and how long `--full` takes: the estimate measured for the
    packaged MiniLM on 2 cores, none for a server (its speed is its own)."""
    from codeask.config import DEFAULT_EMBED_MODEL

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
