"""The operations every face offers (search, related code, cited context, history, status),
as plain functions over opened folder indexes: the MCP server calls them today; the CLI and
the language server still call the engine pieces these wrap (issue 30 moves them here).

None of them waits for indexing or for the MiniLM model: a search answers from the tiers that
can answer now (`search_now`), and says which ones did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import msgspec

from codeask.core.ask import AskRequest, prepare
from codeask.core.chunk import chunk_file
from codeask.core.git.blame import blame_commits
from codeask.core.git.commits import BlameInfo
from codeask.core.indexer import FolderIndex
from codeask.core.prompt import redact_secrets
from codeask.core.records import Chunk
from codeask.core.retrieve import Filters, Hit, SearchResult, WithSettings, related, search
from codeask.core.storage import Tier

LEXICAL = "lexical"
STATIC: Tier = "static"
MINILM: Tier = "minilm"
#: Related code listed for one position (hover shows 5).
RELATED_K = 8
#: Lines each side of a position that is in no indexed chunk (a file not indexed yet).
AROUND_LINES = 10


# ---------------------------------------------------------------- search


@dataclass
class TieredResult:
    """A search's hits and the retrievers that could answer it."""

    result: SearchResult
    tiers: list[str]
    """`lexical`, then `static` and `minilm` when their vectors took part."""


def _static_only(folder: FolderIndex) -> WithSettings:
    """A folder as retrieval sees it while the MiniLM model loads: its MiniLM list is left
    out and the static tier answers for every chunk, so no search waits for the model."""
    retrieve = msgspec.structs.replace(
        folder.settings.retrieve, dense_weight=0.0, static_scope="all"
    )
    return WithSettings(folder, msgspec.structs.replace(folder.settings, retrieve=retrieve))


def search_now(
    folders: Sequence[FolderIndex],
    query: str,
    *,
    k: int | None = None,
    filters: Filters | None = None,
    minilm: bool = True,
) -> TieredResult:
    """`codeask search`'s hybrid ranking with the tiers that can answer at once. `minilm`
    False (the caller is still loading the model's query path in the background): lexical +
    the static tier over every chunk, so the search never waits for a model; True: exactly
    the CLI's ranking."""
    wants = minilm or not any(f.storage.vector_count(MINILM) for f in folders)
    searched: Sequence[object] = folders if wants else [_static_only(f) for f in folders]
    result = search(searched, query, k=k, filters=filters, mode="hybrid")  # type: ignore[arg-type]
    return TieredResult(result, answering_tiers(folders, minilm=minilm))


def answering_tiers(folders: Sequence[FolderIndex], *, minilm: bool) -> list[str]:
    """The retrievers a search over `folders` uses now."""
    tiers = [LEXICAL]
    if any(
        f.storage.vector_count(STATIC) and f.settings.retrieve.static_weight > 0 for f in folders
    ):
        tiers.append(STATIC)
    if minilm and any(
        f.storage.vector_count(MINILM) and f.settings.retrieve.dense_weight > 0 for f in folders
    ):
        tiers.append(MINILM)
    return tiers


# ---------------------------------------------------------------- related code


def enclosing_chunk(folder: FolderIndex, rel: str, line: int) -> Chunk | None:
    """The innermost indexed chunk of a file containing 1-based `line`."""
    inside = [c for c in folder.storage.chunks_of(rel) if c.start_line <= line <= c.end_line]
    return min(inside, key=lambda c: c.end_line - c.start_line, default=None)


def chunk_around(rel: str, text: str, line: int, folder: FolderIndex) -> Chunk | None:
    """The chunk of a file's `text` around `line` (a file not indexed yet): its innermost
    definition, else the lines around it. Never stored."""
    if not text.strip():
        return None
    chunks = chunk_file(rel, text, folder.settings.chunk).chunks
    inside = [c for c in chunks if c.start_line <= line <= c.end_line]
    best = min(inside, key=lambda c: c.end_line - c.start_line, default=None)
    if best is not None:
        return best
    lines = text.splitlines()
    start, end = max(1, line - AROUND_LINES), min(len(lines), line + AROUND_LINES)
    body = "\n".join(lines[start - 1 : end])
    if not body.strip():
        return None
    return Chunk(
        path=rel, language="text", kind="window", start_line=start, end_line=end, text=body
    )


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
    return chunk, related(live, chunk, root=folder.root, k=k, dense=True)


# ---------------------------------------------------------------- cited context


@dataclass
class Context:
    """What `codeask ask --prompt-only` would send, redacted as for a remote endpoint."""

    messages: list[dict[str, str]]
    sources: list[Hit]
    prompt_tokens: int
    truncated: bool
    index_note: str
    redactions: int = 0


def context_for(folders: Sequence[FolderIndex], question: str, *, k: int | None = None) -> Context:
    """The prompt `codeask ask --prompt-only` builds (same retrieval, history routing and
    budget), every message redacted as for a non-loopback endpoint: whoever asks for context
    sends it to a model we do not know."""
    prepared = prepare(AskRequest(question=question, folders=list(folders), k=k, prompt_only=True))
    prompt = prepared.prompt
    messages: list[dict[str, str]] = []
    redactions = prompt.redactions
    for message in prompt.messages:
        clean, count = redact_secrets(message["content"])
        redactions += count
        messages.append({"role": message["role"], "content": clean})
    return Context(
        messages=messages,
        sources=prepared.sources,
        prompt_tokens=prompt.prompt_tokens,
        truncated=prompt.truncated or prompt.left_out > 0,
        index_note=prepared.index_note,
        redactions=redactions,
    )


# ---------------------------------------------------------------- history


def history(
    folders: Sequence[FolderIndex],
    query: str,
    *,
    k: int | None = None,
    filters: Filters | None = None,
    minilm: bool = True,
) -> list[Hit]:
    """Commits and diff hunks matching `query` (`codeask search --history`'s ranking)."""
    scoped = replace(filters or Filters(), scope="history")
    return search_now(folders, query, k=k, filters=scoped, minilm=minilm).result.hits


def blame(folder: FolderIndex, rel: str, line: int) -> list[BlameInfo]:
    """The commits that last touched line `line` of `rel` (working-tree lines mapped to HEAD;
    an uncommitted line has none), newest first."""
    return blame_commits(folder.root, rel, line, line)
