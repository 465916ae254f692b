"""Git history in the index: the commit and hunk chunks of the history window, kept in line
with HEAD by `git.sync`, and which files differ from HEAD right now."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec

from codeask.core.git.repo import uncommitted_paths
from codeask.core.git.sync import sync_history
from codeask.core.indexer.run import CancelToken, IndexReport, Progress, ProgressFn
from codeask.core.records import Chunk
from codeask.core.source.names import scrub

if TYPE_CHECKING:
    from codeask.core.indexer.folder_state import FolderState

log = logging.getLogger("codeask.core.indexer")


def storable(chunk: Chunk) -> Chunk:
    """A history chunk as the store can encode it: git paths and messages need not be UTF-8
    (one such name used to make every save fail); the rare bad one is escaped."""
    try:
        msgspec.msgpack.encode(chunk)
        return chunk
    except UnicodeEncodeError:
        names = ("path", "text", "symbol", "parent", "docstring")
        texts = {name: scrub(getattr(chunk, name)) for name in names}
        meta = {scrub(k): scrub(v) for k, v in chunk.meta.items()}
        calls = [scrub(call) for call in chunk.calls]
        return msgspec.structs.replace(chunk, **texts, calls=calls, meta=meta)


def sync_into(
    index: FolderState, report: IndexReport, emit: ProgressFn, token: CancelToken
) -> None:
    """Diff the commits that are new since the last run into chunks; drop those that left.

    With a team base (`index.backend = "postgres"`), the commits its published revision holds
    count as indexed: the base serves their chunks and vectors, so a fresh clone diffs and embeds
    none of the history window (up to `history.max_commits`) again, and a local copy of one
    (from an earlier session) is dropped rather than counted twice beside the base's."""
    held = set(index.local.history_commits())
    published = set(index.team.reader.history_commits()) if index.team.reader else set()
    delta = sync_history(
        index.root,
        index.settings.history,
        held | published,
        cancel=lambda: token.cancelled,
        index=index.settings.index,
        progress=lambda done, total: emit(
            Progress("history", commits_done=done, commits_total=total)
        ),
    )
    for note in delta.notes:
        log.info("history: %s", note)
    added = {sha: [storable(chunk) for chunk in found] for sha, found in delta.added.items()}
    removed = sorted({sha for sha in delta.removed if sha in held} | (held & published))
    index.local.sync_history(removed, added, delta.head)
    report.commits_added += len(delta.added)
    report.commits_removed += len(removed)


def refresh_uncommitted(index: FolderState) -> None:
    """Re-read which files have uncommitted changes (cheap: one git status)."""
    if index.settings.history.enabled:
        index.uncommitted = frozenset(uncommitted_paths(index.root))
