"""The lexical pass over files: discover → chunk → store and lexical table, at once.

Incremental by construction: size+mtime, then the content hash, decide whether a file changed,
so a no-change pass reads nothing. A file is searchable lexically as soon as it is chunked.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from codeask.core.indexer.run import CancelToken, IndexReport, Progress, ProgressFn
from codeask.core.records import FileRecord
from codeask.core.source.discover import SkippedFile, SourceFile, discover, load_source
from codeask.core.source.names import display_path
from codeask.core.storage.team import refresh_shadowed

if TYPE_CHECKING:
    from codeask.core.indexer.folder_state import FolderState

log = logging.getLogger("codeask.core.indexer")


def scan_and_chunk(
    index: FolderState, report: IndexReport, emit: ProgressFn, token: CancelToken
) -> None:
    """Every file of the folder: gone ones removed, changed ones chunked, the rest kept."""
    emit(Progress("scan", message="discovering files"))
    found = discover(
        index.root,
        index.settings.index,
        ignored_dirs=[index.folder],
        on_found=lambda n: emit(Progress("scan", files_done=n, message="discovering files")),
    )
    files = found.files
    if index.team.reader is not None:  # the team's published revision has the rest
        refresh_shadowed(index.root, index.team)
        files = [f for f in files if f.rel in index.team.shadowed]
    report.skipped.extend(found.skipped)
    for skipped in found.skipped:
        log.info("skipped %s: %s", display_path(skipped.rel), skipped.reason)
    report.files_seen = len(files)
    present = {f.rel for f in files}
    for rel in [r for r in index.local.paths() if r not in present]:
        remove_file(index, rel, report)
    emit(Progress("chunk", 0, len(files)))
    for done, source in enumerate(files, 1):
        token.check()
        index_file(index, source, report)
        if done % 50 == 0 or done == len(files):
            emit(Progress("chunk", done, len(files), message=source.rel))


def index_file(
    index: FolderState, source: SourceFile, report: IndexReport, *, static_now: bool = False
) -> None:
    """Chunk one file if it changed; keeps the old chunks when it did not.

    `static_now` (single-file updates): the chunks get their static vectors before they
    become searchable, so the snapshot saved right after includes them. A full pass
    batches the static tier after chunking instead (fewer, larger calls).
    """
    known = index.local.file(source.rel)
    if known and known.size == source.size and known.mtime_ns == source.mtime_ns:
        report.files_unchanged += 1
        return
    loaded = load_source(source, index.settings.index)
    if isinstance(loaded, SkippedFile):
        log.info("skipped %s: %s", display_path(loaded.rel), loaded.reason)
        report.skipped.append(loaded)
        remove_file(index, source.rel, report)
        record = FileRecord(
            path=source.rel,
            size=source.size,
            mtime_ns=source.mtime_ns,
            sha256="",
            skipped=loaded.reason,
        )
        index.local.replace_file(record, [])
        return
    if known and known.sha256 == loaded.sha256 and not known.skipped:
        index.local.touch_file(source.rel, loaded.size, loaded.mtime_ns)
        report.files_unchanged += 1
        return
    from codeask.core.source.chunk import chunk_file  # tree-sitter: only when a file changed

    result = chunk_file(source.rel, loaded.text, index.settings.chunk)
    if result.fallback_reason:
        log.info("%s: %s", display_path(source.rel), result.fallback_reason)
    ids = index.local.new_ids(len(result.chunks))
    for chunk, chunk_id in zip(result.chunks, ids, strict=True):
        chunk.id = chunk_id
    record = FileRecord(
        path=source.rel,
        size=loaded.size,
        mtime_ns=loaded.mtime_ns,
        sha256=loaded.sha256,
        language=result.language,
    )
    rows = index.embedding.static_rows(result.chunks, report) if static_now else None
    removed = index.local.replace_file(record, result.chunks, rows)
    report.files_indexed += 1
    report.chunks_added += len(result.chunks)
    report.chunks_removed += len(removed)


def remove_file(index: FolderState, rel: str, report: IndexReport) -> None:
    """Drop a file's chunks from the store and the lexical table."""
    removed = index.local.remove_file(rel)
    if removed or index.local.file(rel) is not None:
        report.files_removed += 1
    report.chunks_removed += len(removed)
