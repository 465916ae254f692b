"""Hybrid retrieval: dense + BM25 + exact symbol and path evidence, fused by reciprocal rank.

The ranking is a pipeline of named steps (core/search/pipeline.py, each step a module under
core/search/steps/): collect (BM25, a report's lead line, the symbol table, the static and
model tiers) → fuse (reciprocal rank) → adjust (the file prior, named paths and symbols, the
hub, demotions, call propagation, file coherence) → diversify (per-file cap, overlapping chunks
collapsed). This module asks it for every folder of a search, merges the folders' candidates,
filters them and says which retrievers found each hit and which tiers ranked the question.
General signals only (nothing tuned to single questions).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from codeask.config import RetrieveSettings, Settings
from codeask.core.embedding.embed import CachedEmbedder
from codeask.core.embedding.static import STATIC_MODEL_NAME, load_static_embedder
from codeask.core.records import HISTORY_KINDS, Chunk
from codeask.core.runtime.collector import fewer_collections
from codeask.core.search import model_on_demand, pipeline
from codeask.core.search.query import query_signals
from codeask.core.search.steps.demote import DEMOTION as DEMOTION
from codeask.core.search.steps.demote import PROSE_LANGUAGES as PROSE_LANGUAGES
from codeask.core.search.steps.demote import TEST_PATH as TEST_PATH
from codeask.core.search.steps.demote import VENDORED as VENDORED
from codeask.core.search.steps.demote import is_test_path as is_test_path
from codeask.core.search.steps.dense import prefetch
from codeask.core.search.steps.diversify import diversify, overlaps
from codeask.core.search.steps.file_prior import FILE_CANDIDATES as FILE_CANDIDATES
from codeask.core.search.steps.fuse import RRF_K as RRF_K
from codeask.core.search.steps.state import Mode as Mode
from codeask.core.search.steps.state import Ranking
from codeask.core.search.steps.state import Searchable as Searchable
from codeask.core.search.tiers import ALL_TIERS, VECTOR_TIERS, Tiers, ranks_with_model
from codeask.core.search.tiers import model_tier_for as model_tier_for
from codeask.core.source.names import input_text
from codeask.core.storage.protocol import IndexReader
from codeask.core.storage.symbol_table import path_keys as path_keys

if TYPE_CHECKING:  # imported when a search has a path filter (~20 ms of a one-shot search)
    import pathspec

log = logging.getLogger(__name__)

CANDIDATES = 200
FILTERED_CANDIDATES = 2000


class WithSettings:
    """A folder searched with other settings (another tier's weights, measured side by side by
    `codeask selfcheck` and the benchmarks): the index itself is shared, only the ranking's
    knobs differ. Which tiers a search may use is not a setting: `search(tiers=...)`."""

    def __init__(self, folder: Searchable, settings: Settings) -> None:
        self.root = folder.root
        self.settings = settings
        self._folder = folder
        self.uncommitted: frozenset[str] = getattr(folder, "uncommitted", frozenset())

    @property
    def storage(self) -> IndexReader:
        return self._folder.storage

    @property
    def embedder(self) -> CachedEmbedder:
        return self._folder.embedder


@dataclass
class Filters:
    """Narrow a search; every field is optional."""

    language: str | None = None
    path_glob: str | None = None
    kind: str | None = None
    scope: Literal["code", "history", "all"] = "code"
    author: str | None = None
    since: str | None = None
    until: str | None = None

    def accepts(self, chunk: Chunk, glob: pathspec.PathSpec | None) -> bool:
        """Whether a chunk passes every filter."""
        is_history = chunk.kind in HISTORY_KINDS
        if (self.scope == "code" and is_history) or (self.scope == "history" and not is_history):
            return False
        if self.language and chunk.language != self.language.lower():
            return False
        if self.kind and chunk.kind != self.kind:
            return False
        if glob is not None and not glob.match_file(chunk.path):
            return False
        return self._accepts_history(chunk)

    def _accepts_history(self, chunk: Chunk) -> bool:
        if not (self.author or self.since or self.until):
            return True
        if chunk.kind not in HISTORY_KINDS:
            return False
        who = f"{chunk.meta.get('author', '')} {chunk.meta.get('email', '')}".lower()
        if self.author and self.author.lower() not in who:
            return False
        date = chunk.meta.get("date", "")
        if self.since and date[: len(self.since)] < self.since:
            return False
        return not (self.until and date[: len(self.until)] > self.until)

    @property
    def narrows(self) -> bool:
        """Filters beyond the default scope (candidate lists must be longer)."""
        return self.scope != "code" or any(
            (self.language, self.path_glob, self.kind, self.author, self.since, self.until)
        )

    @classmethod
    def from_options(cls, options: object) -> Filters:
        """The filters `options` carries as attributes of the same names (the CLI's parsed
        arguments, the language server's SearchFilters): one place lists the fields, so a new
        filter reaches every front end. An attribute it lacks keeps its default."""
        names = [name for name in cls.__dataclass_fields__ if hasattr(options, name)]
        return cls(**{name: getattr(options, name) for name in names})


@dataclass
class Hit:
    """One search result."""

    root: Path
    chunk: Chunk
    score: float
    retrievers: list[str] = field(default_factory=list)
    uncommitted: bool = False
    """The file differs from HEAD (working-tree changes)."""

    @property
    def path(self) -> str:
        return self.chunk.path

    @property
    def abs_path(self) -> Path:
        return self.root / self.chunk.path

    def preview(self, lines: int = 3) -> str:
        """The first non-blank lines, for a result list."""
        body = [line for line in self.chunk.text.splitlines() if line.strip()]
        return "\n".join(body[:lines])


@dataclass
class SearchResult:
    """Hits, the retrievers that answered, and whether a vector tier is still filling in."""

    hits: list[Hit]
    warming: bool
    """The slowest configured vector tier does not cover every chunk yet (see `tiers`)."""
    embedded: int
    chunks: int
    tiers: list[str] = field(default_factory=list)
    """The retrievers that answered: `lexical`, then `static` and `minilm` when they took part."""


def embed_query(
    folders: Sequence[Searchable],
    query: str,
    lead: str = "",
    *,
    report: bool = True,
    tiers: Tiers = ALL_TIERS,
) -> dict[str, np.ndarray]:
    """One query vector per distinct model among the folders' filled tiers (a tier without
    vectors, or weighted 0, costs no model call: MiniLM's first load is ~1 s). A report's
    `lead` line is blended into the MiniLM vector (`retrieve.lead_dense_weight`). A typed
    question (`report` False) asks the model tier only as `retrieve.model_tier_for` says
    (`tiers.ranks_with_model`); `tiers.minilm` False asks it nothing."""
    vectors: dict[str, np.ndarray] = {}
    for folder in folders:
        weights = folder.settings.retrieve
        model = folder.settings.embed.model
        storage = folder.storage
        if (
            tiers.minilm
            and ranks_with_model(folder, report)
            and model not in vectors
            and (storage.vector_count("minilm") or model_on_demand.active(folder))
            and weights.dense_weight > 0
        ):
            vectors[model] = _minilm_query(folder, query, lead)
        wants_static = storage.vector_count("static") and weights.static_weight > 0
        if STATIC_MODEL_NAME not in vectors and wants_static:
            vectors[STATIC_MODEL_NAME] = load_static_embedder(folder.settings).embed([query])[0]
    return vectors


def _minilm_query(folder: Searchable, query: str, lead: str) -> np.ndarray:
    """The MiniLM query vector: the text's, leaning toward its lead line when there is one."""
    weight = folder.settings.retrieve.lead_dense_weight
    return folder.embedder.embed_query(query, lead, weight)


def fused_candidates(
    folders: Sequence[Searchable],
    query: str,
    *,
    filters: Filters | None = None,
    mode: Mode = "hybrid",
    vectors: dict[str, np.ndarray] | None = None,
    tiers: Tiers = ALL_TIERS,
) -> list[Hit]:
    """Every candidate chunk with its fused score, best first, before diversification."""
    ranked = _rank(folders, query, filters or Filters(), mode, vectors, tiers)
    return list(_hits(ranked, filters or Filters()))


def _path_filter(glob: str | None) -> pathspec.PathSpec | None:
    """A `--path` glob in gitignore syntax, matched in linear time (an agent's glob must not
    stall the daemon); pathspec is imported only for a search that has one."""
    if not glob:
        return None
    from codeask.core.source.globs import path_spec

    return path_spec(glob)


@dataclass
class _Ranked:
    """Every folder's ranking of one question, and its candidates merged best first:
    (score, index in `rankings`, chunk id)."""

    rankings: list[Ranking]
    scored: list[tuple[float, int, int]]

    @property
    def tiers(self) -> list[str]:
        """The retrievers that ranked the question in some folder, in the faces' order."""
        used = set().union(*(r.answered for r in self.rankings))
        return [t for t in ("lexical", *VECTOR_TIERS) if t in used]


def _rank(
    folders: Sequence[Searchable],
    query: str,
    filters: Filters,
    mode: Mode,
    vectors: dict[str, np.ndarray] | None,
    tiers: Tiers,
) -> _Ranked:
    """The ranking pipeline (core/search/pipeline.py) in every folder, merged."""
    signals = query_signals(query)
    limit = FILTERED_CANDIDATES if filters.narrows else CANDIDATES
    if mode != "lexical" and vectors is None:
        # an explicit dense search asks for meaning: the model tier answers it too
        report = signals.report or mode == "dense"
        vectors = embed_query(folders, signals.text, signals.lead, report=report, tiers=tiers)
    if mode != "lexical" and vectors:
        prefetch(folders, vectors, limit, tiers)
    rankings: list[Ranking] = []
    scored: list[tuple[float, int, int]] = []  # (score, index in rankings, chunk id)
    for folder in folders:
        ranking = pipeline.rank(Ranking(folder, signals, mode, vectors or {}, limit, tiers))
        scored += ((score, len(rankings), i) for i, score in ranking.found.fused.items())
        rankings.append(ranking)
    scored.sort(key=itemgetter(0), reverse=True)  # stable: ties keep folder, then list order
    return _Ranked(rankings, scored)


def _hits(ranked: _Ranked, filters: Filters) -> Iterator[Hit]:
    """The candidates best first, each filtered and made a Hit only when the caller gets to it:
    a search keeps ~10 of ~400 candidates, and building the rest cost ~1 ms a query."""
    glob = _path_filter(filters.path_glob)
    for score, which, chunk_id in ranked.scored:
        ranking = ranked.rankings[which]
        folder, found = ranking.folder, ranking.found
        chunk = found.read.get(chunk_id)
        if chunk is not None and filters.accepts(chunk, glob):
            changed = chunk.path in getattr(folder, "uncommitted", ())
            yield Hit(folder.root, chunk, score, found.found_by[chunk_id], changed)


def search(
    folders: Sequence[Searchable],
    query: str,
    *,
    k: int | None = None,
    filters: Filters | None = None,
    mode: Mode = "hybrid",
    tiers: Tiers = ALL_TIERS,
) -> SearchResult:
    """The search behind `codeask search`, the LSP request, hover and ask. `tiers`: which
    vector tiers may rank (the MCP tools leave MiniLM out while its query path loads)."""
    settings = folders[0].settings.retrieve if folders else RetrieveSettings()
    k = k or settings.k
    query = input_text(query)
    live = [f for f in folders if f.storage.chunk_count()]
    embedded = sum(_dense_done(f) for f in folders)
    total = sum(f.storage.chunk_count() for f in folders)
    if not query.strip() or not live:
        return SearchResult([], embedded < total, embedded, total)
    dense_ready = embedded or any(f.storage.vector_count("static") for f in folders)
    if mode != "lexical" and not dense_ready:
        mode = "lexical"
    with fewer_collections():
        hits, used = _ranked_hits(live, query, filters or Filters(), mode, tiers, k, settings)
    return SearchResult(hits, embedded < total, embedded, total, used)


def _ranked_hits(
    folders: Sequence[Searchable],
    query: str,
    filters: Filters,
    mode: Mode,
    tiers: Tiers,
    k: int,
    settings: RetrieveSettings,
) -> tuple[list[Hit], list[str]]:
    """The diversified hits and the tiers that ranked them; the question's candidates are
    freed when this returns."""
    ranked = _rank(folders, query, filters, mode, None, tiers)
    return diversify(_hits(ranked, filters), k, settings.per_file_cap), ranked.tiers


def _dense_done(folder: Searchable) -> int:
    """Chunks done by the slowest configured tier: MiniLM when it is on, else the static one."""
    on = "minilm" in folder.settings.embed.tiers
    if on and model_on_demand.active(folder):  # on demand: complete for what it ranks
        return folder.storage.chunk_count()
    return folder.storage.vector_count("minilm" if on else "static")


#: A file's second and third best chunks add this share of their score, compounding: a file
#: that answers from several places outranks one lucky chunk, while a big file whose many
#: chunks each mention the words does not outrank the one file about them (the plain sum of
#: three: file NDCG@10 .838 on eval-search, .859 with 0.3; pasted reports R@5 .838 → .851;
#: benchmarks/README.md, Round 9).
FILE_CHUNK_DECAY = 0.3


def rank_files(hits: Sequence[Hit], limit: int = 50) -> list[tuple[str, float]]:
    """Chunk hits → ranked files: a file's best chunk plus its next two, decayed
    (FILE_CHUNK_DECAY)."""
    best: dict[str, list[float]] = defaultdict(list)
    for hit in hits:
        best[hit.path].append(hit.score)
    scored = []
    for path, scores in best.items():
        scores.sort(reverse=True)
        scored.append((path, sum(x * FILE_CHUNK_DECAY**i for i, x in enumerate(scores[:3]))))
    scored.sort(key=lambda item: item[1], reverse=True)
    return scored[:limit]


RELATED_CANDIDATES = 50


def chunk_query(chunk: Chunk, lines: int = 5) -> str:
    """A chunk as a lexical query: its name, parent, docstring and first non-blank lines."""
    body = [line.strip() for line in chunk.text.splitlines() if line.strip()][:lines]
    return " ".join([chunk.parent, chunk.symbol, chunk.docstring[:300], *body])[:1500]


def related(
    folders: Sequence[Searchable],
    chunk: Chunk,
    *,
    root: Path | None = None,
    k: int = 5,
    dense: bool = True,
    word: str = "",
) -> list[Hit]:
    """Chunks like `chunk` (hover links, code lenses): never itself, its own file only if alone.

    When `word` (the identifier under the cursor) names a definition in the index, that
    definition comes first: at a call site the callee is the most related code there is.

    Hover has a 100 ms budget, so this is one direct lookup per folder, no fusion: with
    `dense` and a stored vector, that vector is the query (neighbours, no model call);
    otherwise (not embedded yet, text outside every folder) the chunk's name, docstring and
    first lines are a BM25 query. `root` is the folder holding `chunk` (None if outside).
    """
    own = next((f for f in folders if f.root == root), None) if root is not None else None
    vector = None
    if dense and own is not None and chunk.id:
        vector = own.storage.vector("minilm", chunk.id)
    model = own.settings.embed.model if own is not None else ""
    query = chunk_query(chunk)
    in_tests = is_test_path(chunk.path)
    hits: list[Hit] = []
    for folder in folders:
        if (
            vector is not None
            and folder.settings.embed.model == model
            and folder.storage.vector_count("minilm")
        ):
            ranked = folder.storage.dense_top_k("minilm", vector, RELATED_CANDIDATES)
            found_by = "dense"
        else:
            ranked = folder.storage.lexical_top_k(query, RELATED_CANDIDATES)
            found_by = "lexical"
        for rank, (chunk_id, _) in enumerate(ranked):
            other = folder.storage.chunk(chunk_id)
            if other is None or other.kind in HISTORY_KINDS:
                continue
            score = 1.0 / (RRF_K + rank + 1)
            if not in_tests and is_test_path(other.path):
                score *= 0.5
            hits.append(Hit(folder.root, other, score, [found_by]))
    hits.sort(key=lambda h: h.score, reverse=True)

    def same_file(hit: Hit) -> bool:
        return hit.root == root and hit.path == chunk.path

    hits = [h for h in hits if not (same_file(h) and overlaps(h.chunk, chunk))]
    others = [h for h in hits if not same_file(h)]
    definitions = [
        d for d in _definitions(folders, word) if not (same_file(d) and overlaps(d.chunk, chunk))
    ]
    return diversify(definitions + (others or hits), k, per_file_cap=1)


def _definitions(folders: Sequence[Searchable], word: str, limit: int = 3) -> list[Hit]:
    """Chunks defining `word` (exact symbol name), when it is specific enough to mean one thing."""
    if len(word) < 3:
        return []
    found: list[Hit] = []
    for folder in folders:
        ids = folder.storage.symbol_ids(word)
        for chunk_id in ids if len(ids) <= limit else []:
            other = folder.storage.chunk(chunk_id)
            if other is not None:
                found.append(Hit(folder.root, other, 1.0, ["definition"]))
    return found
