"""Adapters: LSP params → `codeask.core` calls → LSP results. No ranking or indexing here.

Plain functions of the `Folders` registry, run on the server's request threads (so a slow
disk or a busy index lock never stalls the event loop). Only conversions live here:
positions and URIs, hits to result items, markdown for hover.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from lsprotocol import types
from pygls.uris import from_fs_path

from codeask.config import ChunkSettings
from codeask.core.chunk import chunk_file
from codeask.core.git.commits import BlameInfo
from codeask.core.indexer import FolderIndex
from codeask.core.records import HISTORY_KINDS, Chunk
from codeask.core.retrieve import Filters, Hit, Mode, related, search
from codeask.lsp.folders import Folders
from codeask.lsp.limits import MAX_LENSES, LimitError, check_length, check_text
from codeask.lsp.messages import (
    AskCodeParams,
    AskCodeResult,
    AskSource,
    FolderState,
    IndexPhase,
    IndexState,
    InvalidParams,
    Position,
    Range,
    SearchFilters,
    SearchItem,
    SemanticSearchParams,
    SemanticSearchResult,
    to_json,
)
from codeask.lsp.paths import uri_path as uri_path
from codeask.lsp.paths import workspace_path
from codeask.lsp.window import Window, slice_range

HOVER_LINKS = 5
SYMBOL_LIMIT = 200
LENS_KINDS = ("function", "method", "class")
SYMBOL_KINDS = {
    "function": types.SymbolKind.Function,
    "method": types.SymbolKind.Method,
    "class": types.SymbolKind.Class,
    "module": types.SymbolKind.Module,
    "section": types.SymbolKind.String,
}
_loading: set[int] = set()
_loading_lock = threading.Lock()


# ---- paths and positions ---------------------------------------------------------------------
def file_uri(path: Path) -> str:
    """An absolute path as a file URI."""
    return from_fs_path(str(path)) or path.as_uri()


def chunk_range(chunk: Chunk) -> Range:
    """The LSP range of a chunk (0-based lines, end at the end of its last line)."""
    last = chunk.text.rsplit("\n", 1)[-1] if chunk.text else ""
    start = max(0, chunk.start_line - 1)
    end = max(start, chunk.end_line - 1)
    return Range(Position(start, 0), Position(end, len(last)))


def qualified(chunk: Chunk) -> str:
    """`Class.method` or `function`."""
    return f"{chunk.parent}.{chunk.symbol}" if chunk.parent and chunk.symbol else chunk.symbol


# ---- index state -----------------------------------------------------------------------------
def index_state(folders: Folders) -> IndexState:
    """Counts without locks or disk walks: cheap enough to attach to every result."""
    rows: list[FolderState] = []
    for worker in list(folders.workers.values()):
        folder = worker.folder
        if folder is None:
            rows.append(
                FolderState(
                    str(worker.root), worker.state, 0, 0, 0, "", "", worker.message, worker.updates
                )
            )
            continue
        store = folder.store
        files = sum(1 for record in list(store.files.values()) if not record.skipped)
        rows.append(
            FolderState(
                root=str(worker.root),
                state=worker.state,
                files=files,
                chunks=len(store.chunks),
                embedded=len(store.vectors.live),
                model=store.model,
                index_dir=str(folder.folder),
                message=worker.message,
                updates=worker.updates,
                static_embedded=len(store.static_vectors.live),
                tiers=list(folder.settings.embed.tiers),
            )
        )
    chunks = sum(r.chunks for r in rows)
    embedded = sum(r.dense_done for r in rows)
    states = {r.state for r in rows}
    busy = bool(states & {"loading", "indexing"})
    state: IndexPhase
    if busy:
        state = "indexing"
    elif "error" in states:
        state = "error"
    elif chunks == 0:
        state = "empty"
    else:
        state = "ready"
    if busy:
        workers = [w for w in folders.workers.values() if w.state in ("loading", "indexing")]
        percent = min(w.percent for w in workers)
    else:
        percent = int(100 * embedded / chunks) if chunks else (0 if state == "empty" else 100)
    loaded = all(f.embedder_loaded or not f.minilm_tier for f in folders.ready())
    warming = busy or embedded < chunks or not loaded
    return IndexState(state, warming, percent, sum(r.files for r in rows), chunks, embedded, rows)


def dense_ready(folders: Sequence[FolderIndex]) -> bool:
    """Whether dense queries can run now; if not, load the model in the background (~1 s)."""
    waiting = [f for f in folders if f.store.vectors.live and not f.embedder_loaded]
    for folder in waiting:
        with _loading_lock:
            if id(folder) in _loading:
                continue
            _loading.add(id(folder))
        threading.Thread(target=_load, args=(folder,), name="codeask-model", daemon=True).start()
    return not waiting


def _load(folder: FolderIndex) -> None:
    try:
        _ = folder.embedder
    finally:
        with _loading_lock:
            _loading.discard(id(folder))


# ---- search ------------------------------------------------------------------------------------
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
    """`workspace/semanticSearch`: hybrid search over every ready folder."""
    ready = folders.ready()
    mode: Mode = "hybrid" if dense_ready(ready) else "lexical"
    result = search(ready, params.query, k=params.k, filters=to_filters(params.filters), mode=mode)
    items = [search_item(hit) for hit in result.hits]
    return to_json(SemanticSearchResult(items, index_state(folders)))


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


# ---- hover, related code, code lens -----------------------------------------------------------
@dataclass
class HoverPlan:
    """What hover shows: related hits, and where the hovered chunk lives (for blame)."""

    hits: list[Hit]
    chunk: Chunk
    folder: FolderIndex | None
    rel: str | None
    multi_root: bool


def enclosing_chunk(folder: FolderIndex, rel: str, line: int) -> Chunk | None:
    """The innermost indexed chunk of a file containing 1-based `line`."""
    store = folder.store
    with store.lock:
        record = store.files.get(rel)
        ids = list(record.chunk_ids) if record else []
        chunks = [store.chunks[i] for i in ids if i in store.chunks]
    inside = [c for c in chunks if c.start_line <= line <= c.end_line]
    return min(inside, key=lambda c: c.end_line - c.start_line, default=None)


def chunk_of_text(
    name: str, text: str, line: int, settings: ChunkSettings, first_line: int = 0
) -> Chunk | None:
    """Read-only: the chunk of an open text around `line` (1-based, within `text`, whose first
    line is document line `first_line`, 0-based), never stored in any index."""
    if not text.strip():
        return None
    chunks = chunk_file(name, text, settings).chunks
    inside = [c for c in chunks if c.start_line <= line <= c.end_line]
    best = min(inside, key=lambda c: c.end_line - c.start_line, default=None)
    if best is not None:
        return msgspec.structs.replace(
            best, start_line=best.start_line + first_line, end_line=best.end_line + first_line
        )
    lines = text.splitlines()
    start, end = max(1, line - 10), min(len(lines), line + 10)
    body = "\n".join(lines[start - 1 : end])
    if not body.strip():
        return None
    return Chunk(
        path=name,
        language="text",
        kind="window",
        start_line=start + first_line,
        end_line=end + first_line,
        text=body,
    )


IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def word_at(text: str, line: int, character: int) -> str:
    """The identifier under a 0-based position ('' when none)."""
    lines = text.splitlines()
    if not 0 <= line < len(lines):
        return ""
    for match in IDENTIFIER.finditer(lines[line]):
        if match.start() <= character <= match.end():
            return match.group()
    return ""


def plan_hover(folders: Folders, path: Path | None, name: str, view: Window) -> HoverPlan | None:
    """Related chunks for the code at the cursor of a document window (None: nothing to show).

    `path` is the guarded workspace path (None outside every folder or for other schemes).
    """
    ready = folders.ready()
    if not ready:
        return None
    worker = folders.worker_for(path) if path is not None else None
    folder = worker.folder if worker is not None else None
    rel = folder.relative(path) if folder is not None and path is not None else None
    line = view.first_line + view.line
    chunk = enclosing_chunk(folder, rel, line + 1) if folder is not None and rel else None
    owner = folder if chunk is not None else None
    if chunk is None:
        settings = folders.settings().chunk
        chunk = chunk_of_text(name, view.text, view.line + 1, settings, view.first_line)
    if chunk is None:
        return None
    root = owner.root if owner is not None else None
    word = word_at(view.text, view.line, view.character)
    hits = related(ready, chunk, root=root, k=HOVER_LINKS, dense=dense_ready(ready), word=word)
    if not hits:
        return None
    return HoverPlan(hits, chunk, owner, rel if owner else None, len(folders.workers) > 1)


def _md(text: str) -> str:
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def hover_markdown(plan: HoverPlan, blame: BlameInfo | None) -> str:
    """`**Related code**`, one link per hit, then the last commit (docs/protocol.md)."""
    lines = ["**Related code**", ""]
    for hit in plan.hits:
        line = hit.chunk.start_line
        shown = f"{hit.root.name}/{hit.path}" if plan.multi_root else hit.path
        link = f"- [{_md(shown)}:{line}]({file_uri(hit.abs_path)}#L{line})"
        lines.append(f"{link} {qualified(hit.chunk)}".rstrip())
    if blame is not None:
        lines += [
            "",
            f"Last changed in {blame.sha[:8]} by {blame.author}, {blame.date[:10]}: "
            f"{blame.subject}",
        ]
    return "\n".join(lines)


def related_items(folders: Folders, path: Path | None, name: str, view: Window) -> Any:
    """`codeask.related` command: the hover's links as search result items."""
    plan = plan_hover(folders, path, name, view)
    return to_json([search_item(hit) for hit in plan.hits] if plan else [])


def code_lenses(folders: Folders, path: Path | None, uri: str) -> list[types.CodeLens]:
    """`N related` above each function and class (setting `server.codeLens`, off by default)."""
    worker = folders.worker_for(path) if path is not None else None
    folder = worker.folder if worker is not None else None
    if folder is None or path is None or not folder.settings.server.code_lens:
        return []
    rel = folder.relative(path)
    with folder.store.lock:
        record = folder.store.files.get(rel or "")
        chunks = [folder.store.chunks[i] for i in (record.chunk_ids if record else [])]
    ready = folders.ready()
    dense = dense_ready(ready)
    lenses: list[types.CodeLens] = []
    for chunk in chunks:
        if chunk.kind not in LENS_KINDS or chunk.part > 1:
            continue
        if len(lenses) >= MAX_LENSES:
            break
        count = len(related(ready, chunk, root=folder.root, k=HOVER_LINKS, dense=dense))
        if count:
            line = chunk.start_line - 1
            at = types.Range(types.Position(line, 0), types.Position(line, 0))
            command = types.Command(
                title=f"{count} related", command="codeask.related", arguments=[uri, line]
            )
            lenses.append(types.CodeLens(range=at, command=command))
    return lenses


# ---- workspace symbols -------------------------------------------------------------------------
def workspace_symbols(folders: Folders, query: str) -> list[types.SymbolInformation]:
    """Symbols of the chunk index whose name contains `query` (exact, prefix, then substring)."""
    try:
        check_length("symbolQuery", query)
    except LimitError as exc:
        raise InvalidParams(f"workspace/symbol: {exc}") from None
    wanted = query.strip().lower()
    found: list[tuple[tuple[int, int, str], types.SymbolInformation]] = []
    for folder in folders.ready():
        with folder.store.lock:
            chunks = list(folder.store.chunks.values())
        for chunk in chunks:
            kind = SYMBOL_KINDS.get(chunk.kind)
            name = chunk.symbol.lower()
            if kind is None or not chunk.symbol or chunk.part > 1 or wanted not in name:
                continue
            rank = 0 if name == wanted else 1 if name.startswith(wanted) else 2
            rng = chunk_range(chunk)
            location = types.Location(
                uri=file_uri(folder.root / chunk.path),
                range=types.Range(
                    types.Position(rng.start.line, rng.start.character),
                    types.Position(rng.end.line, rng.end.character),
                ),
            )
            info = types.SymbolInformation(
                name=chunk.symbol, kind=kind, location=location, container_name=chunk.parent or None
            )
            found.append(((rank, len(name), chunk.path), info))
    found.sort(key=lambda item: item[0])
    return [info for _, info in found[:SYMBOL_LIMIT]]


# ---- ask ---------------------------------------------------------------------------------------
def _selection(text: str, rng: Range) -> str:
    try:
        return slice_range(
            text, (rng.start.line, rng.start.character), (rng.end.line, rng.end.character)
        )
    except LimitError as exc:
        raise InvalidParams(f"workspace/askCode: {exc}") from None


def editor_context(folders: Folders, params: AskCodeParams, text: str | None) -> Any:
    """The editor state of an askCode request as core's EditorContext (None without a uri).

    `text` is what paths.document_text allowed (editor-sent, or a guarded disk read); a
    range over a document the server may not read is InvalidParams, never a disk read.
    """
    from codeask.core.prompt import EditorContext

    if not params.uri:
        return None
    if text is None and params.range is not None:
        raise InvalidParams(
            "workspace/askCode: `uri` is neither open in the editor nor a file the server may "
            "read (inside a workspace folder and not skipped by its ignore or secret-file rules); "
            "its text cannot be used as the selection"
        )
    shown = uri_path(params.uri)
    path = workspace_path(folders, params.uri)
    worker = folders.worker_for(path) if path is not None else None
    folder = worker.folder if worker is not None else None
    rel = folder.relative(path) if folder is not None and path is not None else None
    line = params.range.start.line if params.range else 0
    chunk = enclosing_chunk(folder, rel, line + 1) if folder is not None and rel else None
    selection = _selection(text, params.range) if text and params.range else ""
    return EditorContext(
        path=str(shown) if shown is not None else "",
        selection=selection,
        selection_start_line=line + 1 if selection else 0,
        cursor_symbol=qualified(chunk) if chunk else "",
    )


def endpoint_hint() -> str:
    """After an endpoint that cannot be reached (or lacks the model): where an editor user fixes
    it. Imported here, like askCode's engine: the server runs without the LLM client."""
    from codeask.core.llm import provider_choices

    return (
        f" To use another endpoint, set llm.baseUrl, llm.provider ({provider_choices()}) and"
        " llm.model in the editor's codeask settings (VS Code: codeask.llm.*; Neovim:"
        " settings.codeask.llm) or in the [llm] table of ~/.config/codeask/config.toml."
    )


def ask_result(result: Any, folders: Folders) -> Any:
    """core's AskResult → the askCode result (LLM errors are data, not request errors)."""
    sources = [
        AskSource(
            uri=file_uri(hit.abs_path),
            range=chunk_range(hit.chunk),
            symbol=qualified(hit.chunk),
            score=round(hit.score, 6),
        )
        for hit in result.sources
    ]
    return to_json(
        AskCodeResult(
            answer=result.answer,
            sources=sources,
            model=result.model,
            prompt_tokens=result.prompt_tokens,
            truncated=result.truncated,
            index_state=index_state(folders),
            error=(result.error + endpoint_hint() if result.endpoint_down else result.error)
            or None,
            incomplete=result.incomplete,
        )
    )
