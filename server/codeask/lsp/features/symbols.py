"""`workspace/symbol` from the chunk index."""

from __future__ import annotations

from lsprotocol import types

from codeask.core.operations import find_symbols
from codeask.core.source.limits import LimitError, check_length
from codeask.lsp.base import CodeaskServer
from codeask.lsp.features.common import chunk_range, file_uri, request
from codeask.lsp.folders import Folders
from codeask.lsp.messages import InvalidParams

SYMBOL_LIMIT = 200
SYMBOL_KINDS = {
    "function": types.SymbolKind.Function,
    "method": types.SymbolKind.Method,
    "class": types.SymbolKind.Class,
    "module": types.SymbolKind.Module,
    "section": types.SymbolKind.String,
}


def workspace_symbols(folders: Folders, query: str) -> list[types.SymbolInformation]:
    """Symbols of the chunk index whose name contains `query` (exact, prefix, then substring)."""
    try:
        check_length("lsp", "symbolQuery", query)
    except LimitError as exc:
        raise InvalidParams(f"workspace/symbol: {exc}") from None
    found: list[types.SymbolInformation] = []
    for folder, chunk in find_symbols(folders.ready(), query, SYMBOL_KINDS, SYMBOL_LIMIT):
        rng = chunk_range(chunk)
        location = types.Location(
            uri=file_uri(folder.root / chunk.path),
            range=types.Range(
                types.Position(rng.start.line, rng.start.character),
                types.Position(rng.end.line, rng.end.character),
            ),
        )
        found.append(
            types.SymbolInformation(
                name=chunk.symbol,
                kind=SYMBOL_KINDS[chunk.kind],
                location=location,
                container_name=chunk.parent or None,
            )
        )
    return found


@request
async def on_workspace_symbol(
    ls: CodeaskServer, params: types.WorkspaceSymbolParams
) -> list[types.SymbolInformation]:
    """Symbols from the chunk index."""
    return await ls.in_thread(workspace_symbols, ls.folders, params.query)


def register(ls: CodeaskServer) -> None:
    """`workspace/symbol`."""
    ls.feature(types.WORKSPACE_SYMBOL)(on_workspace_symbol)
