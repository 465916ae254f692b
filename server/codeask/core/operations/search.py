"""Search: the hybrid ranking every face shows, and which tiers answer while models load.

Three faces, two loading policies (both kept: changing one would change its answers):
`codeask search` and a search in the daemon wait for nothing and rank with the mode asked
for (`search_folders`); the MCP tools never wait for the MiniLM model (static tier instead,
`search_now`); the language server answers lexically until the model's query path is
loaded (`search_while_loading`), which starts loading it in the background.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeask.core.indexer import FolderIndex
from codeask.core.operations import query_model
from codeask.core.search import model_on_demand, retrieve, tiers
from codeask.core.search.retrieve import Filters, Hit, Mode, SearchResult
from codeask.core.search.tiers import ALL_TIERS, STATIC_ONLY, TierCount
from codeask.core.search.tiers import counts as tier_counts
from codeask.core.search.tiers import describe as tiers_line
from codeask.core.search.tiers import incomplete as tiers_incomplete
from codeask.core.storage.protocol import IndexCounts, Tier

__all__ = [
    "LEXICAL",
    "MINILM",
    "STATIC",
    "Filters",
    "Hit",
    "IndexCounts",
    "Mode",
    "SearchResult",
    "TierCount",
    "TieredResult",
    "answering_tiers",
    "damaged",
    "not_git_repositories",
    "query_model_ready",
    "search_folders",
    "search_now",
    "search_while_loading",
    "searchable",
    "tier_counts",
    "tiers_incomplete",
    "tiers_line",
    "tiers_while_loading",
]

LEXICAL = "lexical"
STATIC: Tier = "static"
MINILM: Tier = "minilm"


@dataclass
class TieredResult:
    """A search's hits and the retrievers that could answer it."""

    result: SearchResult
    tiers: list[str]
    """`lexical`, then `static` and `minilm` when their vectors took part."""


def search_folders(
    folders: Sequence[FolderIndex],
    query: str,
    *,
    k: int | None = None,
    filters: Filters | None = None,
    mode: Mode = "hybrid",
) -> SearchResult:
    """`codeask search`'s ranking (`--mode`, `-k`, its filters): what every face starts from."""
    return retrieve.search(folders, query, k=k, filters=filters, mode=mode)


def search_while_loading(
    folders: Sequence[FolderIndex],
    query: str,
    *,
    k: int | None = None,
    filters: Filters | None = None,
) -> SearchResult:
    """The language server's search: hybrid once the MiniLM query path is loaded, lexical
    until then (the load starts in the background, see `query_model_ready`)."""
    mode: Mode = "hybrid" if query_model_ready(folders) else "lexical"
    return retrieve.search(folders, query, k=k, filters=filters, mode=mode)


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
    the static tier over every chunk (`tiers.STATIC_ONLY`), so the search never waits for a
    model; True: exactly the CLI's ranking. The tiers said are the ones that ranked it."""
    use = ALL_TIERS if minilm else STATIC_ONLY
    result = retrieve.search(folders, query, k=k, filters=filters, mode="hybrid", tiers=use)
    return TieredResult(result, result.tiers)


def answering_tiers(folders: Sequence[FolderIndex], *, minilm: bool) -> list[str]:
    """The retrievers that can rank a question over `folders` now, before one is asked
    (`minilm` False: its query path is still loading, the static tier answers instead; the
    model tier only where it would rank some question: `tiers.answered`)."""
    return tiers.answered(folders, "hybrid", ALL_TIERS if minilm else STATIC_ONLY)


def tiers_while_loading(folders: Sequence[FolderIndex]) -> list[str]:
    """The retrievers `search_while_loading` answers with now (lexical alone while a folder's
    MiniLM query path is not loaded), without starting that load."""
    waiting = any(has_model_tier(f) and not f.embedder_loaded for f in folders)
    return tiers.answered(folders, "lexical" if waiting else "hybrid")


def query_model_ready(folders: Sequence[FolderIndex]) -> bool:
    """Whether MiniLM queries can run now (the model is in memory); if not, load it in the
    background (~1 s: query_model.start)."""
    waiting = [f for f in folders if has_model_tier(f) and not f.embedder_loaded]
    for folder in waiting:
        query_model.start(folder)
    return not waiting


def has_model_tier(folder: FolderIndex) -> bool:
    """The folder's model tier has vectors, or embeds them as a report asks (on demand)."""
    return bool(folder.storage.vector_count(MINILM)) or model_on_demand.active(folder)


def searchable(folders: Sequence[FolderIndex]) -> bool:
    """Whether any folder has an index to search (a file indexed)."""
    return any(f.storage.paths() for f in folders)


def damaged(folders: Sequence[FolderIndex]) -> FolderIndex | None:
    """The first folder whose index was found damaged (its `damage` says how), if any."""
    return next((f for f in folders if f.damage), None)


def not_git_repositories(roots: Sequence[Path]) -> list[Path]:
    """The roots that are no git repository: no history to search there."""
    from codeask.core.git.repo import open_repo

    return [root for root in roots if open_repo(root) is None]
