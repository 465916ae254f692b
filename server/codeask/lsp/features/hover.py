"""`textDocument/hover`: related code at the cursor and its last commit, within 100 ms."""

from __future__ import annotations

import asyncio
import logging
import time

from lsprotocol import types

from codeask.core.git.commits import BlameInfo
from codeask.lsp.base import CodeaskServer
from codeask.lsp.features.common import file_uri, qualified, request, workspace_path
from codeask.lsp.features.related import HoverPlan, plan_at

log = logging.getLogger("codeask.lsp")

#: Hover must answer in < 100 ms (p95): the related-code lookup gets HOVER_BUDGET; a blame not
#: cached yet gets BLAME_WAIT more (it is cached when it lands, for the next hover), never
#: past HOVER_TOTAL.
HOVER_BUDGET = 0.075
BLAME_WAIT = 0.025
HOVER_TOTAL = 0.090


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


async def blame_for(ls: CodeaskServer, plan: HoverPlan, budget: float) -> BlameInfo | None:
    """The last commit of the hovered chunk, if known within `budget` seconds."""
    folder, rel = plan.folder, plan.rel
    worker = ls.folders.worker_for(folder.root) if folder is not None else None
    if folder is None or rel is None or worker is None or not worker.head:
        return None
    record = folder.storage.file(rel)
    lines = (plan.chunk.start_line, plan.chunk.end_line)
    sha = record.sha256 if record else ""
    return await ls.blame.last_commit(folder.root, rel, lines, worker.head, sha, budget)


@request
async def on_hover(ls: CodeaskServer, params: types.HoverParams) -> types.Hover | None:
    """Related code at the cursor, under a 100 ms budget; null when nothing is ready."""
    started = time.monotonic()
    uri = params.text_document.uri
    path = workspace_path(ls.folders, uri)
    worker = ls.folders.worker_for(path) if path is not None else None
    settings = worker.folder.settings if worker and worker.folder else ls.settings
    if not settings.server.hover or not ls.folders.ready():
        return None
    position = params.position
    try:
        plan = await asyncio.wait_for(
            ls.in_thread(plan_at, ls, uri, path, position.line, position.character),
            HOVER_BUDGET,
        )
    except TimeoutError:
        log.debug("hover: related code not ready within %.0f ms", 1000 * HOVER_BUDGET)
        return None
    if plan is None:
        return None
    wait = min(BLAME_WAIT, HOVER_TOTAL - (time.monotonic() - started))
    blame = await blame_for(ls, plan, wait)
    formats = ls.capability("text_document.hover.content_format", None) or []
    kind = (
        types.MarkupKind.Markdown
        if not formats or types.MarkupKind.Markdown in formats
        else types.MarkupKind.PlainText
    )
    value = hover_markdown(plan, blame)
    return types.Hover(contents=types.MarkupContent(kind=kind, value=value))


def register(ls: CodeaskServer) -> None:
    """`textDocument/hover`."""
    ls.feature(types.TEXT_DOCUMENT_HOVER)(on_hover)
