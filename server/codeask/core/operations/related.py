"""Related code: the chunk at a position (indexed, else cut from the text) and its neighbours,
for hover, code lenses, `codeask.related` and the MCP tool `find_related`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from codeask.config import ChunkSettings
from codeask.core.indexer import FolderIndex
from codeask.core.operations.search import query_model_ready
from codeask.core.records import Chunk
from codeask.core.search import retrieve
from codeask.core.search.retrieve import Hit

#: Related code listed for one position by the MCP tool (hover shows HOVER_K).
RELATED_K = 8
#: Links in a hover, and what a code lens counts.
HOVER_K = 5
#: Lines each side of a position that is in no indexed chunk (a file not indexed yet).
AROUND_LINES = 10
#: The chunks a code lens sits above.
DEFINITION_KINDS = ("function", "method", "class")


def enclosing_chunk(folder: FolderIndex, rel: str, line: int) -> Chunk | None:
    """The innermost indexed chunk of a file containing 1-based `line`."""
    inside = [c for c in folder.storage.chunks_of(rel) if c.start_line <= line <= c.end_line]
    return min(inside, key=lambda c: c.end_line - c.start_line, default=None)


def chunk_of_text(
    name: str, text: str, line: int, settings: ChunkSettings, first_line: int = 0
) -> Chunk | None:
    """Read-only: the chunk of a text around `line` (1-based, within `text`, whose first line
    is document line `first_line`, 0-based): its innermost definition, else the lines around
    it. Never stored in any index."""
    if not text.strip():
        return None
    from codeask.core.source.chunk import chunk_file  # tree-sitter: hover on unsaved text only

    chunks = chunk_file(name, text, settings).chunks
    inside = [c for c in chunks if c.start_line <= line <= c.end_line]
    best = min(inside, key=lambda c: c.end_line - c.start_line, default=None)
    if best is not None:
        return msgspec.structs.replace(
            best, start_line=best.start_line + first_line, end_line=best.end_line + first_line
        )
    lines = text.splitlines()
    start, end = max(1, line - AROUND_LINES), min(len(lines), line + AROUND_LINES)
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


def chunk_around(rel: str, text: str, line: int, folder: FolderIndex) -> Chunk | None:
    """The chunk of a file's `text` around `line` (a file not indexed yet). Never stored."""
    return chunk_of_text(rel, text, line, folder.settings.chunk)


def related_at(
    folders: Sequence[FolderIndex],
    folder: FolderIndex,
    rel: str,
    line: int,
    text: str,
    *,
    k: int = RELATED_K,
) -> tuple[Chunk | None, list[Hit]]:
    """The code related to line `line` of `rel` (what the editors' hover lists): the chunk
    there (indexed, else cut from `text`) and its neighbours; its own file only when alone."""
    chunk = enclosing_chunk(folder, rel, line) or chunk_around(rel, text, line, folder)
    if chunk is None:
        return None, []
    live = [f for f in folders if f.storage.chunk_count()]
    return chunk, retrieve.related(live, chunk, root=folder.root, k=k, dense=True)


@dataclass
class RelatedInEditor:
    """Hover's answer: the chunk at the cursor, the folder whose index holds it (None: cut
    from the editor's text), and the related hits."""

    chunk: Chunk
    folder: FolderIndex | None
    hits: list[Hit]


def related_in_editor(
    folders: Sequence[FolderIndex],
    folder: FolderIndex | None,
    rel: str | None,
    name: str,
    text: str,
    line: int,
    settings: ChunkSettings,
    *,
    first_line: int = 0,
    word: str = "",
    k: int = HOVER_K,
) -> RelatedInEditor | None:
    """Related code at line `line` (1-based within `text`, which starts at document line
    `first_line`) of an editor's document: the indexed chunk there when `folder` holds the file
    as `rel`, else the chunk cut from `text` (named `name` for the chunker); MiniLM neighbours
    once its query path is loaded; `word` (the identifier under the cursor) first when it names
    a definition. None when there is no chunk there."""
    chunk = enclosing_chunk(folder, rel, first_line + line) if folder is not None and rel else None
    owner = folder if chunk is not None else None
    if chunk is None:
        chunk = chunk_of_text(name, text, line, settings, first_line)
    if chunk is None:
        return None
    root = owner.root if owner is not None else None
    dense = query_model_ready(folders)
    hits = retrieve.related(folders, chunk, root=root, k=k, dense=dense, word=word)
    return RelatedInEditor(chunk, owner, hits)


def related_counts(
    folders: Sequence[FolderIndex], folder: FolderIndex, rel: str, *, limit: int
) -> list[tuple[Chunk, int]]:
    """Code lenses: the definitions of `rel` (their first part) that have related code, with
    how many hits hover would list; at most `limit`."""
    dense = query_model_ready(folders)
    found: list[tuple[Chunk, int]] = []
    for chunk in folder.storage.chunks_of(rel):
        if chunk.kind not in DEFINITION_KINDS or chunk.part > 1:
            continue
        if len(found) >= limit:
            break
        count = len(retrieve.related(folders, chunk, root=folder.root, k=HOVER_K, dense=dense))
        if count:
            found.append((chunk, count))
    return found
