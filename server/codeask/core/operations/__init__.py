"""The operations every face offers, written once: the CLI, the language server and the MCP
server parse their arguments, call these, and render the answer (docs/architecture.md,
"Operations"). Retrieval decisions (tiers, modes, filters, k defaults, redaction, which chunk
is at a position) live here, not in the faces.

- `search`: the ranking, the tiers that answer while models load, whether there is an index;
  `search_answer`: a search's answer as plain data (the CLI renders it, here or from the daemon).
- `related`: the chunk at a position and its neighbours (hover, lenses, `find_related`).
- `symbols`: definitions by name (`workspace/symbol`).
- `context`: the cited, redacted prompt (`get_context`); `ask` (imported on its own, it loads
  the LLM client): the question answered.
- `history`: commits and hunks, blame.
- `status`: what an index holds; `index`: writing it.
- `query_model` (imported on its own): a folder's MiniLM query path loaded in the background,
  the one way for every face.
- `paths` (imported on its own): the one path guard, which files a request may name and read.

None of them waits for indexing; `search_now` does not wait for the MiniLM model either.
"""

from codeask.core.indexer import FolderIndex
from codeask.core.operations.context import (
    Context,
    context_for,
    query_words,
    redact_path,
    redact_secrets,
    unredact_path,
)
from codeask.core.operations.history import blame, blame_lines, history
from codeask.core.operations.related import (
    AROUND_LINES,
    DEFINITION_KINDS,
    HOVER_K,
    RELATED_K,
    RelatedInEditor,
    chunk_around,
    chunk_of_text,
    enclosing_chunk,
    related_at,
    related_counts,
    related_in_editor,
)
from codeask.core.operations.search import (
    LEXICAL,
    MINILM,
    STATIC,
    Filters,
    Hit,
    IndexCounts,
    Mode,
    SearchResult,
    TierCount,
    TieredResult,
    answering_tiers,
    damaged,
    has_model_tier,
    not_git_repositories,
    query_model_ready,
    search_folders,
    search_now,
    search_while_loading,
    searchable,
    tier_counts,
    tiers_incomplete,
    tiers_line,
    tiers_while_loading,
)
from codeask.core.operations.search_answer import FoundHit, SearchAnswer, answer_search
from codeask.core.operations.status import IndexStatus, open_for_reading, read_statuses
from codeask.core.operations.symbols import find_symbols

__all__ = [
    "AROUND_LINES",
    "DEFINITION_KINDS",
    "HOVER_K",
    "LEXICAL",
    "MINILM",
    "RELATED_K",
    "STATIC",
    "Context",
    "Filters",
    "FolderIndex",
    "FoundHit",
    "Hit",
    "IndexCounts",
    "IndexStatus",
    "Mode",
    "RelatedInEditor",
    "SearchAnswer",
    "SearchResult",
    "TierCount",
    "TieredResult",
    "answer_search",
    "answering_tiers",
    "ask",
    "blame",
    "blame_lines",
    "chunk_around",
    "chunk_of_text",
    "context_for",
    "damaged",
    "enclosing_chunk",
    "find_symbols",
    "has_model_tier",
    "history",
    "index",
    "not_git_repositories",
    "open_for_reading",
    "paths",
    "query_model",
    "query_model_ready",
    "query_words",
    "read_statuses",
    "redact_path",
    "redact_secrets",
    "related_at",
    "related_counts",
    "related_in_editor",
    "search_folders",
    "search_now",
    "search_while_loading",
    "searchable",
    "status",
    "tier_counts",
    "tiers_incomplete",
    "tiers_line",
    "tiers_while_loading",
    "unredact_path",
]
