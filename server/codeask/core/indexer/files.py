"""The lexical pass over files: discover → chunk → store, lexical table and static vectors.

Incremental by construction: size+mtime, then the content hash, decide whether a file changed,
so a no-change pass reads nothing. A file is searchable lexically as soon as it is chunked.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from codeask.config import cache_dir
from codeask.core.embedding.static import STATIC_DIM
from codeask.core.indexer.chunk_pool import Job, PreparedFile, prepare, prepared_files
from codeask.core.indexer.early_saves import EarlySaves
from codeask.core.indexer.run import CancelToken, IndexReport, Progress, ProgressFn
from codeask.core.records import Chunk, FileRecord
from codeask.core.source.discover import GONE, SkippedFile, SourceFile, check_file, discover
from codeask.core.source.ignore_note import ignore_note
from codeask.core.source.names import display_path
from codeask.core.source.tree_watch import Taken
from codeask.core.source.walk_cache import WALK_CACHE
from codeask.core.storage.team import refresh_shadowed

if TYPE_CHECKING:
    import numpy as np

    from codeask.core.indexer.folder_state import FolderState
    from codeask.core.storage.quantized_rows import QuantizedRows

log = logging.getLogger("codeask.core.indexer")


def scan_and_chunk(
    index: FolderState, report: IndexReport, emit: ProgressFn, token: CancelToken
) -> Taken | None:
    """Every file of the folder: gone ones removed, changed ones chunked, the rest kept. With
    a trusted file watch, only the paths it saw change are checked (no walk, no stat per
    file). Returns what the watch handed over, for `TreeWatch.settle` once the pass is saved."""
    taken = index.watch.take() if index.watch is not None else None
    paths = taken.paths if taken is not None and index.team.reader is None else None
    watched = paths is not None
    files = changed_files(index, paths, report) if paths is not None else _walk(index, report, emit)
    report.files_checked = len(files)
    _chunk_changed(index, files, report, emit, token)
    if watched:  # the files the events did not name are unchanged, as a walk would count them
        report.files_seen = index.local.counts().files
        report.files_unchanged = max(0, report.files_seen - report.files_indexed)
        report.watched = [f.rel for f in files]
    return taken


def _walk(index: FolderState, report: IndexReport, emit: ProgressFn) -> list[SourceFile]:
    """The walk: every file found (the walk cache spares unchanged folders' listings), the
    indexed files no longer found removed."""
    emit(Progress("scan", message="discovering files"))
    found = discover(
        index.root,
        index.settings.index,
        ignored_dirs=[index.folder],
        on_found=lambda n: emit(Progress("scan", files_done=n, message="discovering files")),
        cache=index.folder / WALK_CACHE,
        on_folder=None if index.watch is None else index.watch.watch_folder,
    )
    files = found.files
    if index.team.reader is not None:  # the team's published revision has the rest
        refresh_shadowed(index.root, index.team)
        files = [f for f in files if f.rel in index.team.shadowed]
    report.skipped.extend(found.skipped)
    index.ignore_note = ignore_note(index.root, index.settings.index)  # the rules may have changed
    for skipped in found.skipped:
        log.info("skipped %s: %s", display_path(skipped.rel), skipped.reason)
    report.files_seen = len(files)
    present = {f.rel for f in files}
    for rel in [r for r in index.local.paths() if r not in present]:
        remove_file(index, rel, report)
    return files


def changed_files(index: FolderState, rels: list[str], report: IndexReport) -> list[SourceFile]:
    """The watch's changed paths judged as the walk would judge them: files to check, the
    gone or left-out ones removed (a gone folder: every file indexed under it)."""
    settings = index.settings.index
    known = index.local.paths() if any(index.local.file(r) is None for r in rels) else []
    out: dict[str, SourceFile] = {}
    for rel in rels:
        if index.local.file(rel) is None and not (index.root / rel).is_file():
            under = [k for k in known if k.startswith(rel + "/")]
            if not under and (index.root / rel).is_dir():
                continue  # a folder's own metadata (its new files have their own events)
            rels_here = under or [rel]
        else:
            rels_here = [rel]
        for each in rels_here:
            found = check_file(index.root, each, settings)
            if isinstance(found, SourceFile):
                out[each] = found
                continue
            if isinstance(found, SkippedFile) and found.reason != GONE:
                report.skipped.append(found)
            remove_file(index, each, report)
    return list(out.values())


def _chunk_changed(
    index: FolderState,
    files: list[SourceFile],
    report: IndexReport,
    emit: ProgressFn,
    token: CancelToken,
) -> None:
    """Chunk the files whose size or mtime moved (in worker processes for a big batch)."""
    emit(Progress("chunk", 0, len(files)))
    jobs = [_job(index, f) for f in index.local.changed_files(files)]  # 78k: one call
    unchanged = len(files) - len(jobs)
    report.files_unchanged += unchanged
    settings = index.settings
    static_cache = str(cache_dir(settings)) if index.embedding.static_tier else ""
    stream = prepared_files(
        jobs, settings.index, settings.chunk, settings.index.chunk_workers, static_cache
    )
    early = EarlySaves(settings.index.checkpoint_seconds, len(jobs))
    with stream as prepared_in_order, index.embedding.static_behind(report) as static:
        pairs = zip(jobs, prepared_in_order, strict=True)
        for done, (job, prepared) in enumerate(pairs, unchanged + 1):
            token.check()
            static.add(store_prepared(index, job, prepared, report))
            if done % 50 == 0:
                if early.due(done - unchanged):  # part of a big tree searchable in seconds
                    index.checkpoint()
                emit(Progress("chunk", done, len(files), message=job.rel))
    emit(Progress("chunk", len(files), len(files)))


def index_file(
    index: FolderState, source: SourceFile, report: IndexReport, *, static_now: bool = False
) -> None:
    """Chunk one file if it changed; keeps the old chunks when it did not.

    `static_now` (single-file updates): the chunks get their static vectors before they
    become searchable, so the snapshot saved right after includes them. A full pass
    embeds its chunks in batches as it goes instead (fewer, larger calls).
    """
    job = _job_if_changed(index, source, report)
    if job is not None:
        prepared = prepare(job, index.settings.index, index.settings.chunk)
        store_prepared(index, job, prepared, report, static_now=static_now)


def _job_if_changed(index: FolderState, source: SourceFile, report: IndexReport) -> Job | None:
    """The file's job, or None (counted unchanged) when its size and mtime are the index's."""
    if not index.local.changed_files([source]):
        report.files_unchanged += 1
        return None
    return _job(index, source)


def _job(index: FolderState, source: SourceFile) -> Job:
    """A changed file's job, with the hash its record has (same content: only its stat moves)."""
    known = index.local.file(source.rel)
    known_sha = known.sha256 if known and not known.skipped else ""
    return Job.of(source, known_sha)


def store_prepared(
    index: FolderState,
    job: Job,
    prepared: PreparedFile,
    report: IndexReport,
    *,
    static_now: bool = False,
) -> list[Chunk]:
    """Put a prepared file in the index; returns its chunks that still need a static vector."""
    if prepared.skipped:
        skipped = SkippedFile(job.rel, prepared.skipped)
        log.info("skipped %s: %s", display_path(job.rel), skipped.reason)
        report.skipped.append(skipped)
        remove_file(index, job.rel, report)
        record = FileRecord(
            path=job.rel,
            size=job.size,
            mtime_ns=job.mtime_ns,
            sha256="",
            skipped=skipped.reason,
        )
        index.local.replace_file(record, [])
        return []
    if not prepared.changed:  # same content, new stat
        index.local.touch_file(job.rel, prepared.size, prepared.mtime_ns)
        report.files_unchanged += 1
        return []
    if prepared.fallback_reason:
        log.info("%s: %s", display_path(job.rel), prepared.fallback_reason)
    chunks = prepared.chunks
    for chunk, chunk_id in zip(chunks, index.local.new_ids(len(chunks)), strict=True):
        chunk.id = chunk_id
    record = FileRecord(
        path=job.rel,
        size=prepared.size,
        mtime_ns=prepared.mtime_ns,
        sha256=prepared.sha256,
        language=prepared.language,
    )
    rows: np.ndarray | QuantizedRows | None = prepared.static_rows(STATIC_DIM)
    if rows is not None:  # a chunking worker embedded them
        report.static_computed += len(chunks)
    elif static_now:
        rows = index.embedding.static_rows(chunks, report)
    removed = index.local.replace_file(record, chunks, rows, prepared.columns)
    report.files_indexed += 1
    report.chunks_added += len(chunks)
    report.chunks_removed += len(removed)
    return chunks if rows is None else []


def remove_file(index: FolderState, rel: str, report: IndexReport) -> None:
    """Drop a file's chunks from the store and the lexical table."""
    removed = index.local.remove_file(rel)
    if removed or index.local.file(rel) is not None:
        report.files_removed += 1
    report.chunks_removed += len(removed)
