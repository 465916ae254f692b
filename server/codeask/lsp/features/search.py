"""`workspace/semanticSearch` and the `codeask.search` command."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from codeask.core.operations import Filters, Hit, search_while_loading
from codeask.core.records import HISTORY_KINDS
from codeask.core.source.limits import LimitError
from codeask.lsp.base import CodeaskServer
from codeask.lsp.features.common import chunk_range, custom_request, file_uri, request
from codeask.lsp.features.index import index_state
from codeask.lsp.folders import Folders
from codeask.lsp.messages import (
    CMD_SEARCH,
    SEMANTIC_SEARCH,
    InvalidParams,
    Position,
    Range,
    SearchFilters,
    SearchItem,
    SemanticSearchParams,
    SemanticSearchResult,
    check_text,
    to_json,
)


def to_filters(filters: SearchFilters | None) -> Filters | None:
    """Protocol filters → core filters."""
    return None if filters is None else Filters.from_options(filters)


def search_item(hit: Hit) -> SearchItem:
    """A hit as a result item; history hits carry their commit facts in `meta`."""
    chunk = hit.chunk
    history = chunk.kind in HISTORY_KINDS
    if chunk.path and (hit.root / chunk.path).exists():
        uri, rng = file_uri(hit.abs_path), chunk_range(chunk)
    else:
        uri, rng = file_uri(hit.root), Range(Position(0, 0), Position(0, 0))
    return SearchItem(
        uri=uri,
        range=rng,
        symbol=chunk.symbol,
        kind=chunk.kind,
        score=round(hit.score, 6),
        preview=hit.preview(),
        retrievers=list(hit.retrievers),
        meta=dict(chunk.meta) if history else {},
    )


def semantic_search(folders: Folders, params: SemanticSearchParams) -> Any:
    """Hybrid search over every ready folder (lexical while the model loads), once their
    indexes are open (a search sent right after attach waits for the open, not for indexing)."""
    filters = to_filters(params.filters)
    if filters is not None and filters.path_glob:
        from codeask.core.source.globs import glob_error

        if problem := glob_error(filters.path_glob):
            raise InvalidParams(f"filters.pathGlob is not a usable glob: {problem}")
    folders.wait_open()
    result = search_while_loading(folders.ready(), params.query, k=params.k, filters=filters)
    items = [search_item(hit) for hit in result.hits]
    return to_json(SemanticSearchResult(items, index_state(folders, result.tiers)))


def search_command_params(args: Sequence[Any]) -> SemanticSearchParams:
    """`codeask.search` arguments: `[query, k?]` or `[{query, k?, filters?}]`."""
    if len(args) == 1 and isinstance(args[0], dict):
        raw: Any = args[0]
    elif 1 <= len(args) <= 2 and isinstance(args[0], str):
        raw = {"query": args[0]} | ({"k": args[1]} if len(args) == 2 else {})
    else:
        raise InvalidParams(
            "codeask.search: arguments must be [query, k?] or [{query, k?, filters?}]"
        )
    try:
        params = msgspec.convert(raw, SemanticSearchParams)
        check_text(raw, "arguments")
    except (msgspec.ValidationError, LimitError) as exc:
        raise InvalidParams(f"codeask.search: {exc}") from None
    return params


@custom_request(SEMANTIC_SEARCH)
async def on_semantic_search(ls: CodeaskServer, params: SemanticSearchParams) -> Any:
    """`workspace/semanticSearch`."""
    return await ls.in_thread(semantic_search, ls.folders, params)


@request
async def cmd_search(ls: CodeaskServer, *args: Any) -> Any:
    """`codeask.search` [query, k?] | [{query, k?, filters?}]."""
    params = search_command_params(args)
    return await ls.in_thread(semantic_search, ls.folders, params)


def register(ls: CodeaskServer) -> None:
    """The request and the command."""
    ls.feature(SEMANTIC_SEARCH)(on_semantic_search)
    ls.command(CMD_SEARCH)(cmd_search)
