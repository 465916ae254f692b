"""initialize / initialized / shutdown / exit and workspace folders coming and going."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from lsprotocol import types

from codeask.config import build_settings, read_env
from codeask.lsp.base import CodeaskServer
from codeask.lsp.features import configuration, documents
from codeask.lsp.features.common import uri_path
from codeask.lsp.settings import EditorSettings

log = logging.getLogger("codeask.lsp")

#: A client that never sends `initialized` still gets its folders indexed after this long.
INITIALIZED_GRACE = 2.0


def _roots(params: types.InitializeParams) -> list[Path]:
    """Workspace folders, else the deprecated rootUri / rootPath."""
    roots = [p for f in params.workspace_folders or [] if (p := uri_path(f.uri)) is not None]
    if not roots and (params.root_uri or params.root_path):
        path = uri_path(params.root_uri) if params.root_uri else Path(params.root_path or "")
        if path is not None:
            roots.append(path.resolve())
    return roots


def on_initialize(ls: CodeaskServer, params: types.InitializeParams) -> None:
    """Settings from initializationOptions; one worker (index) per workspace folder."""
    ls.loop = asyncio.get_running_loop()
    ls.init_settings = EditorSettings.parse(params.initialization_options, "initializationOptions")
    editor = ls.editor_settings()
    ls.settings, warnings = build_settings(editor.global_, read_env())
    configuration.set_log_level(ls.settings.server.log_level)
    for warning in ls.init_settings.warnings + warnings:
        ls.call_soon(ls.warn, f"codeask: {warning}")
    for root in _roots(params):
        ls.folders.add(root, editor.for_folder(root.resolve()))
    ls.loop.call_later(INITIALIZED_GRACE, _initialized_fallback, ls)


def _initialized_fallback(ls: CodeaskServer) -> None:
    if not ls.folders.indexing_started and not ls.shutdown_requested:
        log.warning("no `initialized` from the client; indexing anyway")
        ls.folders.start_indexing()


async def on_initialized(ls: CodeaskServer, params: types.InitializedParams) -> None:
    """Pull configuration, register the file watcher, then start indexing."""
    ls.initialized_seen = True
    pulled = await configuration.fetch_configuration(ls)
    if pulled is not None:
        ls.pulled = pulled
        configuration.apply_settings(ls)
    await documents.register_watcher(ls)
    if not ls.folders.indexing_started:
        ls.folders.start_indexing()


def on_shutdown(ls: CodeaskServer, params: None) -> None:
    """Stop the workers (each within one file or one batch) and save the indexes."""
    ls.shutdown_requested = True
    ls.folders.stop()


def on_did_change_folders(ls: CodeaskServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    """Folders added get an index (and a first pass); removed ones are saved and closed."""
    editor = ls.editor_settings()
    for folder in params.event.removed:
        path = uri_path(folder.uri)
        if path is not None:
            ls.folders.remove(path)
    for folder in params.event.added:
        path = uri_path(folder.uri)
        if path is not None:
            ls.folders.add(path, editor.for_folder(path))


def register(ls: CodeaskServer) -> None:
    """The lifecycle messages and workspace folder changes."""
    ls.feature(types.INITIALIZE)(on_initialize)
    ls.feature(types.INITIALIZED)(on_initialized)
    ls.feature(types.SHUTDOWN)(on_shutdown)
    ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(on_did_change_folders)
