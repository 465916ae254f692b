"""Index state: `codeask/indexStatus`, the state every result carries, reindex and cancel."""

from __future__ import annotations

from typing import Any

from codeask.core.operations import (
    FolderIndex,
    IndexCounts,
    tier_counts,
    tiers_line,
    tiers_while_loading,
)
from codeask.core.operations.status import (
    TeamStatus,
    ignore_note_of,
    model_tier_of,
    team_status,
)
from codeask.lsp.base import CodeaskServer
from codeask.lsp.features.common import custom_request, request, workspace_path
from codeask.lsp.folders import Folders, FolderWorker
from codeask.lsp.messages import (
    CMD_CANCEL,
    CMD_REINDEX,
    INDEX_STATUS,
    FolderState,
    IndexPhase,
    IndexState,
    IndexStatusParams,
    TeamState,
    to_json,
)


def index_state(folders: Folders, tiers: list[str] | None = None) -> IndexState:
    """Counts without locks or disk walks: cheap enough to attach to every result. `tiers`:
    the retrievers that answered the search this state goes with (else those a search would
    answer with now)."""
    rows: list[FolderState] = []
    opened: list[tuple[FolderIndex, IndexCounts]] = []
    #: Each busy worker's percent, read with its state: a worker that finishes while this
    #: runs must not be busy in `rows` and missing here.
    busy_percents: list[int] = []
    for worker in list(folders.workers.values()):
        phase = worker.state  # read once: the worker's thread may change it meanwhile
        if phase in ("loading", "indexing"):
            busy_percents.append(worker.percent)
        rows.append(_folder_row(worker, phase, opened))
    chunks = sum(r.chunks for r in rows)
    embedded = sum(r.dense_done for r in rows)
    state, busy = _overall({r.state for r in rows}, chunks)
    if busy:
        percent = min(busy_percents, default=0)
    else:
        percent = int(100 * embedded / chunks) if chunks else (0 if state == "empty" else 100)
    ready = [folder for folder, counts in opened if counts.chunks]
    loaded = all(f.embedder_loaded or not f.minilm_tier for f in ready)
    warming = busy or embedded < chunks or not loaded
    answered = tiers_while_loading(ready) if tiers is None else tiers
    said = tier_counts([f for f, _ in opened], [c for _, c in opened])
    note = tiers_line(answered, said) if ready else ""
    files = sum(r.files for r in rows)
    return IndexState(state, warming, percent, files, chunks, embedded, rows, answered, note)


def _folder_row(
    worker: FolderWorker, phase: str, opened: list[tuple[FolderIndex, IndexCounts]]
) -> FolderState:
    """One folder's row from its worker (`phase` read once by the caller); an open index's
    counts are appended to `opened` for the tier line."""
    folder = worker.folder
    if folder is None:
        return FolderState(str(worker.root), phase, 0, 0, 0, "", "", worker.message, worker.updates)
    storage = folder.storage
    counts = storage.counts()
    opened.append((folder, counts))
    return FolderState(
        root=str(worker.root),
        state=phase,
        files=counts.files,
        chunks=counts.chunks,
        embedded=counts.embedded,
        model=storage.model,
        index_dir=str(folder.folder),
        message=worker.message,
        updates=worker.updates,
        static_embedded=counts.static_embedded,
        tiers=list(folder.settings.embed.tiers),
        team=team_state(team_status(folder)),
        ignore_note=ignore_note_of(folder),
        model_tier=model_tier_of(folder, counts.chunks, counts.embedded),
    )


def _overall(states: set[str], chunks: int) -> tuple[IndexPhase, bool]:
    """(the phase the status bar shows for all folders, whether any is busy)."""
    busy = bool(states & {"loading", "indexing"})
    if busy:
        return "indexing", busy
    if "error" in states:
        return "error", busy
    return ("empty" if chunks == 0 else "ready"), busy


def team_state(team: TeamStatus) -> TeamState:
    """The engine's team status on the wire (whole seconds to the next retry)."""
    return TeamState(
        backend=team.backend,
        kind=team.kind,
        base=team.base,
        behind=team.behind,
        overlay_files=team.overlay_files,
        reason=team.reason,
        retry_in=None if team.retry_in is None else round(team.retry_in),
        query_error=team.query_error,
        cache=team.cache,
    )


@custom_request(INDEX_STATUS)
async def on_index_status(ls: CodeaskServer, params: IndexStatusParams) -> Any:
    """`codeask/indexStatus`."""
    return to_json(index_state(ls.folders))


@request
async def cmd_reindex(ls: CodeaskServer, *args: Any) -> Any:
    """`codeask.reindex` [uri?]: full rebuild (vectors come back from the cache)."""
    target = workspace_path(ls.folders, args[0]) if args and isinstance(args[0], str) else None
    worker = ls.folders.worker_for(target) if target is not None else None
    for each in [worker] if worker else list(ls.folders.workers.values()):
        each.request_full("rebuild")
    return to_json(index_state(ls.folders))


@request
async def cmd_cancel(ls: CodeaskServer, *args: Any) -> Any:
    """`codeask.cancelIndexing`: stop full passes, keep what is done."""
    for worker in list(ls.folders.workers.values()):
        worker.cancel_indexing()
    return to_json(index_state(ls.folders))


def register(ls: CodeaskServer) -> None:
    """indexStatus and the reindex / cancel commands."""
    ls.feature(INDEX_STATUS)(on_index_status)
    ls.command(CMD_REINDEX)(cmd_reindex)
    ls.command(CMD_CANCEL)(cmd_cancel)
