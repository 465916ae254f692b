"""Single-file updates (editor saves, watcher events): the named files are re-checked, their
chunks get static vectors and are saved (searchable), then their MiniLM vectors and a second save.

Runs while a long MiniLM backlog embeds: the backlog takes its own lock, not the run lock.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from codeask.core.indexer import files, history
from codeask.core.indexer.run import CancelToken, IndexReport, no_progress
from codeask.core.source.discover import SkippedFile, SourceFile, check_file

if TYPE_CHECKING:
    from codeask.core.indexer.folder_state import FolderState


def update_paths(index: FolderState, rels: Iterable[str], *, embed: bool) -> IndexReport:
    """Re-check named files (changed, created or deleted); their chunks embed first."""
    report = IndexReport()
    started = time.perf_counter()
    rels = list(dict.fromkeys(rels))
    embedding = index.embedding
    if index.team.reader is not None:  # changed here: the published copy must not show
        index.team.shadowed.update(rels)
    with index.run_lock:
        for rel in rels:
            found = check_file(index.root, rel, index.settings.index)
            if isinstance(found, SourceFile):
                files.index_file(index, found, report, static_now=True)
            else:
                if isinstance(found, SkippedFile):
                    report.skipped.append(found)
                files.remove_file(index, rel, report)
        report.seconds_lexical = time.perf_counter() - started
        missing_static = embedding.without_vector(rels, "static")
        embedding.embed_static(missing_static, report, no_progress, CancelToken())
        # searchable now (lexical + static): readers wait on this save, not on `git status`
        # (seconds on a kernel checkout) nor on the model, whose vectors take seconds or never
        # come (its server down)
        index.checkpoint()
        history.refresh_uncommitted(index)
        if embed and embedding.minilm_tier:
            fresh = embedding.without_vector(rels, "minilm")
            if fresh:
                embedding.embed_ids(fresh, embedding.embedder, report)
                index.checkpoint()
    report.seconds_total = time.perf_counter() - started
    return report
