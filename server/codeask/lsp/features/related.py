"""Related code for a cursor position: what hover, code lens and `codeask.related` show."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeask.core.operations import HOVER_K, FolderIndex, Hit, related_in_editor
from codeask.core.records import Chunk
from codeask.core.source.limits import max_chars
from codeask.lsp.base import CodeaskServer
from codeask.lsp.features.common import doc_name, doc_text, request, workspace_path
from codeask.lsp.features.search import search_item
from codeask.lsp.folders import Folders
from codeask.lsp.messages import CMD_RELATED, InvalidParams, to_json
from codeask.lsp.window import Window, window

HOVER_LINKS = HOVER_K
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class HoverPlan:
    """What hover shows: related hits, and where the hovered chunk lives (for blame)."""

    hits: list[Hit]
    chunk: Chunk
    folder: FolderIndex | None
    rel: str | None
    multi_root: bool


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
    word = word_at(view.text, view.line, view.character)
    found = related_in_editor(
        ready,
        folder,
        rel,
        name,
        view.text,
        view.line + 1,
        folders.settings().chunk,
        first_line=view.first_line,
        word=word,
        k=HOVER_LINKS,
    )
    if found is None or not found.hits:
        return None
    owner = found.folder
    return HoverPlan(
        found.hits, found.chunk, owner, rel if owner else None, len(folders.workers) > 1
    )


def plan_at(ls: CodeaskServer, uri: str, path: Path | None, line: int, character: int) -> Any:
    """Off the loop (the text may be read from disk); a huge document is seen through a
    bounded window around the cursor (window.py)."""
    text, name = doc_text(ls, uri) or "", doc_name(ls, uri, path)
    return plan_hover(ls.folders, path, name, window(text, line, character))


def _related_items(ls: CodeaskServer, uri: str, path: Path | None, line: int) -> Any:
    plan = plan_at(ls, uri, path, line, 0)
    return to_json([search_item(hit) for hit in plan.hits] if plan else [])


@request
async def cmd_related(ls: CodeaskServer, *args: Any) -> Any:
    """`codeask.related` [uri, line]: the hover's links as result items (code lens target)."""
    if len(args) != 2 or not isinstance(args[0], str) or not isinstance(args[1], int):
        raise InvalidParams("codeask.related: arguments must be [uri, line]")
    uri, line = args
    if len(uri) > max_chars("lsp", "uri") or line < 0:
        raise InvalidParams(
            f"codeask.related: uri must be at most {max_chars('lsp', 'uri')} characters, line >= 0"
        )
    path = workspace_path(ls.folders, uri)
    return await ls.in_thread(_related_items, ls, uri, path, line)


def register(ls: CodeaskServer) -> None:
    """The `codeask.related` command (hover and lens have modules of their own)."""
    ls.command(CMD_RELATED)(cmd_related)
