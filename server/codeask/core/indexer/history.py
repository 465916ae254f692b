"""Git history in the index: the commit and hunk chunks of the history window, kept in line
with HEAD by `git.sync`, and which files differ from HEAD right now."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec

from codeask.core.git.repo import uncommitted_paths
from codeask.core.git.sync import sync_history
from codeask.core.indexer.run import CancelToken, IndexReport, Progress, ProgressFn
from codeask.core.names import scrub
from codeask.core.records import Chunk

if TYPE_CHECKING:
    from codeask.core.indexer.folder import FolderIndex

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
    index: FolderIndex, report: IndexReport, emit: ProgressFn, token: CancelToken
) -> None:
    """Diff the commits that are new since the last run into chunks; drop those that left."""
    known = set(index.local.history_commits())
    delta = sync_history(
        index.root,
        index.settings.history,
        known,
        cancel=lambda: token.cancelled,
        index=index.settings.index,
        progress=lambda done, total: emit(
            Progress("history", commits_done=done, commits_total=total)
        ),
    )
    for note in delta.notes:
        log.info("history: %s", note)
    added = {sha: [storable(chunk) for chunk in found] for sha, found in delta.added.items()}
    index.local.sync_history(delta.removed, added, delta.head)
    report.commits_added += len(delta.added)
    report.commits_removed += len(delta.removed)


def refresh_uncommitted(index: FolderIndex) -> None:
    """Re-read which files have uncommitted changes (cheap: one git status)."""
    if index.settings.history.enabled:
        index.uncommitted = frozenset(uncommitted_paths(index.root))
