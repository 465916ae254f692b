"""Opened, saved and changed files → their folder's worker (debounced, coalesced)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types

from codeask.lsp.base import CLIENT_TIMEOUT, CodeaskServer
from codeask.lsp.features.common import workspace_path

log = logging.getLogger("codeask.lsp")


def debounce(ls: CodeaskServer, root: Path | None = None) -> float:
    """Quiet time before a saved file is reindexed (per folder when known)."""
    worker = ls.folders.workers.get(root) if root else None
    settings = worker.folder.settings if worker and worker.folder else ls.settings
    return max(0, settings.server.debounce_ms) / 1000


def schedule_paths(ls: CodeaskServer, paths: list[Path]) -> None:
    """Paths inside a folder go to its worker; git internals and our own index never do."""
    by_worker: dict[Path, list[str]] = {}
    for path in paths:
        worker = ls.folders.worker_for(path)
        if worker is None:
            log.debug("%s is outside every workspace folder: served read-only", path)
            continue
        if path == worker.root:
            continue  # the folder itself: the idle poll notices if it went away
        rel = path.relative_to(worker.root).as_posix()
        index_dir = worker.folder.folder if worker.folder else worker.root / ".codeask"
        if rel.split("/")[0] == ".git" or path == index_dir or index_dir in path.parents:
            continue  # git internals (HEAD is polled) and our own index files
        by_worker.setdefault(worker.root, []).append(rel)
    for root, rels in by_worker.items():
        ls.folders.workers[root].schedule(rels, debounce(ls, root))


async def register_watcher(ls: CodeaskServer) -> None:
    """Watch `**/*` through the client when it supports dynamic registration."""
    if not ls.capability("workspace.did_change_watched_files.dynamic_registration", False):
        log.info("client cannot watch files for us; HEAD polling and rescans cover it")
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
    )
    registration = types.Registration(
        id="codeask-watch",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=options,
    )
    try:
        await asyncio.wait_for(
            ls.client_register_capability_async(
                types.RegistrationParams(registrations=[registration])
            ),
            CLIENT_TIMEOUT,
        )
        ls.watcher_registered = True
        log.info("registered a file watcher (**/*) with the client")
    except Exception as exc:
        log.info("file watcher registration failed (%s); rescanning periodically", exc)


def on_did_open(ls: CodeaskServer, params: types.DidOpenTextDocumentParams) -> None:
    """An opened file is re-checked and its chunks embedded first (inside a folder only)."""
    path = workspace_path(ls.folders, params.text_document.uri)
    if path is not None:
        schedule_paths(ls, [path])


def on_did_save(ls: CodeaskServer, params: types.DidSaveTextDocumentParams) -> None:
    """A saved file is reindexed after `server.debounceMs` of quiet (inside a folder only)."""
    path = workspace_path(ls.folders, params.text_document.uri)
    if path is not None:
        schedule_paths(ls, [path])


def on_watched_files(ls: CodeaskServer, params: types.DidChangeWatchedFilesParams) -> None:
    """Edits outside the editor, creates, deletes, renames (delete + create)."""
    paths = [workspace_path(ls.folders, change.uri) for change in params.changes]
    schedule_paths(ls, [p for p in paths if p is not None])


def register(ls: CodeaskServer) -> None:
    """didOpen, didSave (no text: the file on disk is what gets indexed), watched files."""
    ls.feature(types.TEXT_DOCUMENT_DID_OPEN)(on_did_open)
    ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(on_did_save)
    ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(on_watched_files)
