"""A full pass, in the order that makes search useful soonest: files chunked and given their
static vectors as they go (lexical and dense search work), a checkpoint, history, then the
MiniLM backlog.

Safe to run again at any time: unchanged files cost a stat. Cancelling keeps what was done.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from codeask.core.indexer import files, history
from codeask.core.indexer.run import (
    Cancelled,
    CancelToken,
    IndexReport,
    Progress,
    ProgressFn,
    no_progress,
)
from codeask.core.runtime.collector import fewer_collections

if TYPE_CHECKING:
    from codeask.core.indexer.folder_state import FolderState


def _static_pending(index: FolderState, report: IndexReport) -> list[int]:
    """Chunks without a static vector: of the files a file watch named (their chunks are all
    this pass added), else of the whole index (a test of every chunk id: ~0.5 s on the
    kernel's 1.28M)."""
    if report.watched is not None:
        return index.embedding.without_vector(report.watched, "static")
    return index.local.pending_ids("static")


def full_pass(
    index: FolderState,
    *,
    progress: ProgressFn | None,
    cancel: CancelToken | None,
    embed: bool,
    history_on: bool | None,
) -> IndexReport:
    """Bring `index` up to date with its folder; `history_on` None follows the settings."""
    report = IndexReport()
    started = time.perf_counter()
    emit = progress or no_progress
    token = cancel or CancelToken()
    embedding = index.embedding
    with index.run_lock, fewer_collections():
        index.state = "indexing"
        try:
            taken = files.scan_and_chunk(index, report, emit, token)
            embedding.embed_static(_static_pending(index, report), report, emit, token)
            report.seconds_lexical = time.perf_counter() - started
            index.checkpoint()
            if taken is not None and index.watch is not None:  # saved: those paths are clean
                index.watch.settle(taken)
            if index.settings.history.enabled if history_on is None else history_on:
                history.sync_into(index, report, emit, token)
                if report.commits_added:  # the test before history saw every other chunk
                    embedding.embed_static(index.local.pending_ids("static"), report, emit, token)
            history.refresh_uncommitted(index)
            if embed and embedding.minilm_tier:
                embedding.embed_pending(report, emit, token)
        except Cancelled:
            report.cancelled = True
        finally:
            index.checkpoint()
            index.state = "ready"
            index.local.release_checks()  # the tiers' hash waited for the pass (tier_checks.py)
    report.seconds_total = time.perf_counter() - started
    emit(Progress("done", report.files_seen, report.files_seen, *index.embedded_counts()))
    return report
