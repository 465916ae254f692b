"""`N related` code lenses (off unless `server.codeLens`)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from codeask.core.operations import related_counts
from codeask.core.source.limits import MAX_LENSES
from codeask.lsp.base import CodeaskServer
from codeask.lsp.features.common import request, workspace_path
from codeask.lsp.folders import Folders
from codeask.lsp.messages import CMD_RELATED


def code_lenses(folders: Folders, path: Path | None, uri: str) -> list[types.CodeLens]:
    """`N related` above each function and class; the lens runs `codeask.related`."""
    worker = folders.worker_for(path) if path is not None else None
    folder = worker.folder if worker is not None else None
    if folder is None or path is None or not folder.settings.server.code_lens:
        return []
    rel = folder.relative(path)
    lenses: list[types.CodeLens] = []
    for chunk, count in related_counts(folders.ready(), folder, rel or "", limit=MAX_LENSES):
        line = chunk.start_line - 1
        at = types.Range(types.Position(line, 0), types.Position(line, 0))
        command = types.Command(
            title=f"{count} related", command=CMD_RELATED, arguments=[uri, line]
        )
        lenses.append(types.CodeLens(range=at, command=command))
    return lenses


@request
async def on_code_lens(ls: CodeaskServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    """Lenses of one document, computed off the loop."""
    uri = params.text_document.uri
    path = workspace_path(ls.folders, uri)
    return await ls.in_thread(code_lenses, ls.folders, path, uri)


def register(ls: CodeaskServer) -> None:
    """`textDocument/codeLens` (no resolve step: lenses come complete)."""
    options = types.CodeLensOptions(resolve_provider=False)
    ls.feature(types.TEXT_DOCUMENT_CODE_LENS, options)(on_code_lens)
