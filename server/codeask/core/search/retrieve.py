"""Hybrid retrieval: dense + BM25 + exact symbol and path evidence, fused by reciprocal rank.

Two dense tiers feed the fusion when they exist: the static model (every chunk has a vector
right after the first pass; the query costs ~0.1 ms) and MiniLM (fills in behind). A chunk
without a MiniLM vector yet is still found densely through the static tier.

General signals only (nothing tuned to single questions): identifiers, dotted paths and file
names that a question mentions; symbol definitions; test files demoted unless the question is
about tests. Results are diversified (per-file cap, overlapping chunks collapsed) and each hit
says which retrievers found it.
"""

from __future__ import annotations

import functools
import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol

import numpy as np

from codeask.config import DEFAULT_EMBED_MODEL, RetrieveSettings, Settings
from codeask.core.embedding.embed import CachedEmbedder
from codeask.core.embedding.static import STATIC_MODEL_NAME, load_static_embedder
from codeask.core.records import ELISION, HISTORY_KINDS, Chunk
from codeask.core.search import model_gate, model_on_demand
from codeask.core.search.central import lift_central_files
from codeask.core.search.name_match import (
    defines,
    file_stems_for,
    name_match_share,
    names_a_file,
    queried_symbols,
    question_words,
    reexports,
)
from codeask.core.search.query import QuerySignals, query_signals
from codeask.core.search.rerank import subjects_of_test
from codeask.core.search.tiers import answered as answered_tiers
from codeask.core.source.languages import has_grammar, language_for_path
from codeask.core.source.names import input_text
from codeask.core.storage.lexical.index import expand_query
from codeask.core.storage.protocol import (
    DenseAsk,
    IndexReader,
    StorageUnavailable,
    Tier,
    prefetch_dense,
)
from codeask.core.storage.symbol_table import path_keys as path_keys

if TYPE_CHECKING:  # imported when a search has a path filter (~20 ms of a one-shot search)
    import pathspec

log = logging.getLogger(__name__)

Mode = Literal["lexical", "dense", "hybrid"]
RRF_K = 60
#: Longer suffixes of a mentioned path are not tried: no workspace file is nested this deep, and
#: trying every suffix of a pasted 50,000-part dotted or slashed run took 15 s (quadratic).
MAX_PATH_PARTS = 64
CANDIDATES = 200
FILE_CANDIDATES = 100
FILTERED_CANDIDATES = 2000
#: Test code in the languages codeask reads: test folders (`tests/`, `__tests__/`, `spec/`),
#: `test_x.py`, `x_test.go`, `x_spec.rb`, `x.test.ts`, `x.spec.js`, `FooTest.java`,
#: `FooTests.cs`, `FooSpec.scala`, `FooSuite.scala`, `conftest.py`.
TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|specs?)(/|$)"
    r"|(^|/)test_[^/]*$"
    r"|_(tests?|spec)\.[a-z]+$"
    r"|\.(test|spec)\.[a-z]+$"
    r"|[a-z0-9](Tests?|Spec|Suite)\.[a-z]+$"
    r"|(^|/)conftest\.py$"
)
PROSE_LANGUAGES = frozenset({"markdown", "rst", "text"})
VENDORED = re.compile(
    r"(^|/)(vendor|vendored|third_party|thirdparty|bower_components)/"
    r"|[-.]v?\d+\.\d+(\.\d+)?(\.min)?\.(js|css)$"
)
#: Code under these folders illustrates the project rather than implementing it (`_examples/`:
#: Go's convention for a folder the go tool skips).
EXAMPLES = re.compile(r"(^|/)_?(docs?|examples?|samples?|demos?)/")
DEMOTION = 0.5
#: Call propagation: the callers considered, calls read per caller, definitions per name.
CALLERS = 20
CALLS_PER_CHUNK = 30
CALLEE_DEFINITIONS = 2
#: Test files when a question's test words name code ("the test client"): code wins a tie.
TEST_MODIFIER_DEMOTION = 0.8
#: A file name matching fewer of a question's words than this share is a coincidence.
MIN_NAME_SHARE = 0.1
#: camelCase names inside prose may be incidental: half a symbol question's lift.
EMBEDDED_SYMBOL_SHARE = 0.5
#: A definition in a file named for its symbol (`response.rb` defines `Response`).
NAMED_FILE_LIFT = 1.5
#: The lift of a file's best candidate by its share of all candidate score (see
#: `_lift_coherent_files`): eval-search file NDCG@10 .859 → .864 and pasted reports R@5 .851 →
#: .858 at 0.1; 0.2 (semble's) cost the reports' MRR .641 → .626, 0.5 cost both.
FILE_COHERENCE = 0.1
#: The files ranked first before the hub step: when one of them is named by the question's
#: words, the question names its file and no hub is lifted over it.
HUB_NAMED_LEADERS = 2


class Searchable(Protocol):
    """What retrieval needs of a folder index (the indexer's FolderIndex provides it): the
    index itself only through `storage` (core/storage/protocol.py)."""

    root: Path
    settings: Settings

    @property
    def storage(self) -> IndexReader: ...

    @property
    def embedder(self) -> CachedEmbedder: ...


class WithSettings:
    """A folder searched with other settings (another tier's weights, a static-only pass):
    the index itself is shared, only the ranking's knobs differ."""

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


def is_test_path(path: str) -> bool:
    """tests/, test_x.py, x_test.go, conftest.py ..."""
    return bool(TEST_PATH.search(path))


def _path_matches(storage: IndexReader, signals: QuerySignals) -> dict[str, float]:
    """Files a question names, and the modules that named test files test; a name shared by
    several files gives each a share."""
    scores: dict[str, float] = {}
    for mention in signals.paths:
        candidates = _longest_known_suffix(storage, mention)
        subjects = [s for c in candidates if is_test_path(c) for s in _tested(storage, c)]
        for group in (candidates, subjects):
            for path in group:
                scores[path] = max(scores.get(path, 0.0), 1.0 / len(group))
    return scores


def _tested(storage: IndexReader, test_path: str) -> list[str]:
    """The module a named test file tests (`tests/test_pycode_ast.py` → `sphinx/pycode/ast.py`):
    a question that points at a test ("add a test case here") is about that module."""
    return subjects_of_test(storage, test_path, is_test_path)


def _longest_known_suffix(storage: IndexReader, mention: str) -> list[str]:
    """Files named by `mention` or by its longest suffix of two parts or more: a traceback's
    `/usr/lib/python3.9/site-packages/pkg/mod.py` names the workspace's `pkg/mod.py`."""
    found = storage.paths_named(mention)
    if found:
        return found
    parts = mention.split("/")
    for start in range(max(1, len(parts) - MAX_PATH_PARTS), len(parts) - 1):
        found = storage.paths_named("/".join(parts[start:]))
        if found:
            return found
    return []


def _rrf(ranked: Sequence[int], weight: float, into: dict[int, float]) -> None:
    for rank, chunk_id in enumerate(ranked):
        into[chunk_id] = into.get(chunk_id, 0.0) + weight / (RRF_K + rank + 1)


@dataclass
class _Candidates:
    fused: dict[int, float] = field(default_factory=dict)
    found_by: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    file_rank: dict[str, int] = field(default_factory=dict)
    read: dict[int, Chunk | None] = field(default_factory=dict)
    """The candidates' chunks read so far (None: gone)."""
    demotions: dict[str, float] = field(default_factory=dict)
    """Each path's demotion for this question, once (the file list and candidates share paths)."""
    by_path: dict[str, list[Chunk]] = field(default_factory=dict)
    """The candidates read so far, grouped by file (`group`): the file prior and the demotions
    are per file, and ~400 candidates fall in ~150 files."""

    def chunks(
        self, storage: IndexReader, ids: Iterable[int] | None = None
    ) -> dict[int, Chunk | None]:
        """`read`, after reading the candidates (or `ids`) not read yet in ONE call: a remote
        store answers a few hundred candidates in one round trip, not one each."""
        wanted = [i for i in (self.fused if ids is None else ids) if i not in self.read]
        if wanted:
            found = storage.chunks(wanted)
            self.read.update((i, found.get(i)) for i in wanted)
        return self.read

    def group(self, storage: IndexReader, ids: Iterable[int] | None = None) -> None:
        """Add the candidates (or `ids`, new ones) to `by_path`; gone chunks are left out."""
        ids = list(self.fused if ids is None else ids)
        read = self.chunks(storage, ids)
        for chunk_id in ids:
            chunk = read.get(chunk_id)
            if chunk is not None:
                self.by_path.setdefault(chunk.path, []).append(chunk)


class _DenseList(NamedTuple):
    """One dense list a folder contributes: its name in `found_by`, tier, the query vector's
    key in `embed_query`'s dict, weight, and `missing_from` (static tier, scope `missing`:
    only chunks MiniLM has not embedded yet)."""

    name: str
    tier: Tier
    vector: str
    weight: float
    missing_from: Tier | None = None


def _dense_lists(folder: Searchable, vectors: dict[str, np.ndarray]) -> list[_DenseList]:
    weights = folder.settings.retrieve
    model = folder.settings.embed.model
    plan: list[_DenseList] = []
    # a size-0 vector: the model's server did not answer (core/embedding/remote.py)
    full = not model_on_demand.active(folder)  # else `_on_demand_list`
    if weights.dense_weight > 0 and model in vectors and vectors[model].size and full:
        plan.append(_DenseList("dense", "minilm", model, weights.dense_weight))
    wants_static = weights.static_weight > 0 and STATIC_MODEL_NAME in vectors
    if wants_static and folder.storage.vector_count("static"):
        # without a MiniLM list for this question, the static tier ranks every chunk
        all_chunks = weights.static_scope == "all" or not any(d.tier == "minilm" for d in plan)
        missing: Tier | None = None if all_chunks else "minilm"
        static = _DenseList("static", "static", STATIC_MODEL_NAME, weights.static_weight, missing)
        plan.append(static)
    return plan


def _prefetch_dense(
    folders: Sequence[Searchable], vectors: dict[str, np.ndarray], limit: int
) -> None:
    """Every folder's remote dense queries of this search, batched: a workspace whose folders
    read one team database asks it ONE query per query vector, not one per folder."""
    asks: dict[str, list[DenseAsk]] = defaultdict(list)
    for folder in folders:
        for dense in _dense_lists(folder, vectors):
            storage = folder.storage
            asks[dense.vector] += storage.dense_asks(
                dense.tier, limit, missing_from=dense.missing_from
            )
    for key, group in asks.items():
        prefetch_dense(group, vectors[key])


def _dense_ranked(
    folder: Searchable, dense: _DenseList, vector: np.ndarray, limit: int, mode: Mode
) -> list[int]:
    """A dense list; in hybrid mode, [] when a remote part of the index did not answer (the
    other retrievers still do; the team status line says the query failed)."""
    storage = folder.storage
    try:
        hits = storage.dense_top_k(dense.tier, vector, limit, missing_from=dense.missing_from)
    except StorageUnavailable as exc:
        if mode != "hybrid":
            raise
        log.warning("%s: %s search skipped (%s)", folder.root, dense.name, exc)
        return []
    return [i for i, _ in hits]


def _symbol_ranked(folder: Searchable, signals: QuerySignals) -> list[int]:
    hits: list[int] = []
    for name in sorted(signals.identifiers, key=lambda n: (-len(n), n)):  # not a set's order
        ids = folder.storage.symbol_ids(name)
        if 0 < len(ids) <= 20:
            hits.extend(ids)
    return list(dict.fromkeys(hits))


def _collect(
    folder: Searchable,
    vectors: dict[str, np.ndarray],
    mode: Mode,
    signals: QuerySignals,
    limit: int,
) -> _Candidates:
    weights: RetrieveSettings = folder.settings.retrieve
    found = _Candidates()
    lists: list[tuple[str, list[int], float]] = []
    if mode in ("lexical", "hybrid"):
        lexical = [i for i, _ in folder.storage.lexical_top_k(expand_query(signals.text), limit)]
        lists.append(("lexical", lexical, weights.lexical_weight))
        if signals.lead and weights.lead_weight > 0:
            lead = expand_query(signals.lead)
            ranked = [i for i, _ in folder.storage.lexical_top_k(lead, limit)]
            lists.append(("lead", ranked, weights.lead_weight))
        lists.append(("symbol", _symbol_ranked(folder, signals), weights.symbol_weight))
    if mode in ("dense", "hybrid"):
        for dense in _dense_lists(folder, vectors):
            ranked = _dense_ranked(folder, dense, vectors[dense.vector], limit, mode)
            lists.append((dense.name, ranked, dense.weight))
    if mode != "lexical":
        lists += _on_demand_list(folder, vectors, lists)
    for name, ranked, weight in lists:
        _rrf(ranked, weight, found.fused)
        for chunk_id in ranked:
            found.found_by[chunk_id].append(name)
    if mode in ("lexical", "hybrid"):
        files = folder.storage.lexical_files(signals.text, FILE_CANDIDATES)
        demoted = [(path, score * _demoted(folder, found, path, signals)) for path, score in files]
        demoted.sort(key=lambda item: item[1], reverse=True)
        found.file_rank = {path: rank for rank, (path, _) in enumerate(demoted)}
    return found


def _on_demand_list(
    folder: Searchable, vectors: dict[str, np.ndarray], lists: list[tuple[str, list[int], float]]
) -> list[tuple[str, list[int], float]]:
    """The model tier's list of a folder filled on demand: the other lists' best candidates
    ranked by it (`model_on_demand`); none when it does not rank this question."""
    model, weight = folder.settings.embed.model, folder.settings.retrieve.dense_weight
    if weight <= 0 or model not in vectors or not model_on_demand.active(folder):
        return []
    first: dict[int, float] = {}
    for _, ranked, each in lists:
        _rrf(ranked, each, first)
    return [("dense", model_on_demand.ranked(folder, vectors[model], first), weight)]


@functools.lru_cache(maxsize=65536)
def _has_grammar(path: str) -> bool:
    """Code (a tree-sitter language) rather than prose or data; cached: it runs per candidate."""
    return language_for_path(path) is not None


def _demoted(folder: Searchable, found: _Candidates, path: str, signals: QuerySignals) -> float:
    """`_demotion`, remembered for the rest of this question."""
    factor = found.demotions.get(path)
    if factor is None:
        factor = found.demotions[path] = _demotion(folder, path, signals)
    return factor


def _demotion(folder: Searchable, path: str, signals: QuerySignals) -> float:
    """Tests and prose rank lower for code questions, never when the question asks for them,
    and only slightly when its test words name code ("how does the test client handle
    cookies" means the client, which its tests mention far more often than it does)."""
    settings = folder.settings.retrieve
    record = folder.storage.file(path)
    if not settings.demote_tests:
        tests = 1.0
    elif not signals.about_tests:
        tests = DEMOTION
    else:
        tests = TEST_MODIFIER_DEMOTION if signals.tests_as_modifier else 1.0
    prose = settings.demote_prose and not signals.about_docs
    return _path_demotion(path, record.language if record else "", tests, prose)


@functools.lru_cache(maxsize=65536)
def _path_demotion(path: str, language: str, tests: float, prose: bool) -> float:
    """The path's demotion (cached: it runs for every candidate chunk of every query)."""
    factor = tests if is_test_path(path) else 1.0
    if prose:
        code = _has_grammar(path) or has_grammar(language)  # `bin/tool`: its `#!` line's
        if language in PROSE_LANGUAGES:
            factor *= DEMOTION
        if not code:
            factor *= DEMOTION
        if EXAMPLES.search(path) and code:
            factor *= DEMOTION  # doc/conf.py, examples/demo.py: illustrations, not the code
    if VENDORED.search(path):
        factor *= DEMOTION
    return factor


def _file_prior(folder: Searchable, found: _Candidates) -> None:
    """Whole-file BM25 rank lifts every candidate of that file; top files missing get a chunk."""
    weight = folder.settings.retrieve.file_weight
    storage = folder.storage
    found.group(storage)
    firsts: list[int] = []
    for path, rank in found.file_rank.items():
        if path in found.by_path or rank >= FILE_CANDIDATES // 4:
            continue
        record = storage.file(path)
        if record and record.chunk_ids:
            first = record.chunk_ids[0]
            firsts.append(first)
            found.fused[first] = 0.0
            found.found_by[first].append("file")
    found.group(storage, firsts)
    for path, rank in found.file_rank.items():
        bonus = weight / (RRF_K + rank + 1)
        for chunk in found.by_path.get(path, ()):
            found.fused[chunk.id] += bonus


def _adjust(folder: Searchable, found: _Candidates, signals: QuerySignals, mode: Mode) -> None:
    """Path mentions lift a file's chunks; test files sink unless the question is about tests."""
    settings = folder.settings.retrieve
    _file_prior(folder, found)
    paths = _path_matches(folder.storage, signals) if mode != "dense" else {}
    mentioned: list[int] = []
    for path, strength in paths.items():
        record = folder.storage.file(path)
        for chunk_id in record.chunk_ids if record else []:
            bonus = settings.symbol_weight * strength / (RRF_K + 1)
            if chunk_id not in found.fused:
                mentioned.append(chunk_id)
            found.fused[chunk_id] = found.fused.get(chunk_id, 0.0) + bonus
            if "path" not in found.found_by[chunk_id]:
                found.found_by[chunk_id].append("path")
    found.group(folder.storage, mentioned)
    if mode != "dense" and not signals.report:
        _name_boosts(folder, found, signals)
        _lift_hub(found, signals, settings.central_weight)
    fused = found.fused
    for path, chunks in found.by_path.items():
        factor = _demoted(folder, found, path, signals)
        if factor != 1.0:  # most candidates' files are not demoted: nothing to multiply
            for chunk in chunks:
                if chunk.kind not in HISTORY_KINDS:
                    fused[chunk.id] *= factor
    if mode != "dense" and settings.call_weight > 0 and signals.report:
        _propagate_calls(folder, found, signals, settings.call_weight)
    if mode != "dense":  # a nearest-neighbour list asks for the closest chunks as they are
        _lift_coherent_files(found, FILE_COHERENCE)


def _lift_coherent_files(found: _Candidates, weight: float) -> None:
    """Each file's best candidate gains `weight` × the best score × the file's candidate
    score summed, over the largest such sum: the file where the answer lives usually matches
    in many places (a big module such as `SqlMapper.cs` or `_client.py`), which the per-file
    cap of a result list and `rank_files`' three chunks no longer show."""
    fused = found.fused
    if not fused:
        return
    top = max(fused.values())
    sums: dict[str, float] = {}
    best: dict[str, int] = {}
    for path, chunks in found.by_path.items():
        live = [c.id for c in chunks if c.kind not in HISTORY_KINDS and c.id in fused]
        if live:
            sums[path] = sum(fused[i] for i in live)
            best[path] = max(live, key=fused.__getitem__)
    if not sums:
        return
    largest = max(sums.values())
    for path, total in sums.items():
        fused[best[path]] += weight * top * total / largest


def _lift_hub(found: _Candidates, signals: QuerySignals, weight: float) -> None:
    """A question that names no file and no symbol ("how are requests dispatched") is about
    the module the other candidates call into (core/search/central.py); one that names its
    file (`Flow`, "the lockfile") or a symbol is answered by that, not by its callers' hub."""
    if weight <= 0 or queried_symbols(signals.text)[0]:
        return
    fused = found.fused
    best = {p: max(fused.get(c.id, 0.0) for c in cs) for p, cs in found.by_path.items() if cs}
    leaders = sorted(best, key=best.__getitem__, reverse=True)[:HUB_NAMED_LEADERS]
    if names_a_file(question_words(signals.text), leaders):
        return
    lift_central_files(found.by_path, found.fused, weight)


def _name_boosts(folder: Searchable, found: _Candidates, signals: QuerySignals) -> None:
    """A typed question's names (core/search/name_match.py): files named by its words, and the
    definitions of the symbol it is (or of camelCase names inside it), lifted by a share of
    the best candidate's score so that they win ties with chunks that merely mention them."""
    if not found.fused:
        return
    settings = folder.settings.retrieve
    top = max(found.fused.values())
    names, whole = queried_symbols(signals.text)
    if settings.file_name_weight > 0 and not whole:
        words = question_words(signals.text)
        for path, chunks in found.by_path.items():
            share = name_match_share(words, path)
            if share >= MIN_NAME_SHARE:
                bonus = top * settings.file_name_weight * share
                for chunk in chunks:
                    if chunk.kind not in HISTORY_KINDS:
                        found.fused[chunk.id] += bonus
    if settings.definition_weight > 0 and names:
        unit = top * settings.definition_weight * (1.0 if whole else EMBEDDED_SYMBOL_SHARE)
        _lift_definitions(folder, found, names, unit)


def _lift_definitions(folder: Searchable, found: _Candidates, names: set[str], unit: float) -> None:
    """Candidates defining one of `names` get `unit` (1.5× in a file named for the symbol);
    a file named for it (`response.rb` for `Response`) joins the candidates with the chunks
    that define it."""
    storage = folder.storage
    joined: list[int] = []
    for name in names:
        named_files = {p for stem in file_stems_for(name) for p in storage.paths_named(stem)}
        for path in named_files:
            record = storage.file(path)
            ids = [i for i in (record.chunk_ids if record else []) if i not in found.fused]
            read = found.chunks(storage, ids)
            for chunk_id in ids:
                chunk = read.get(chunk_id)
                if chunk is not None and _defines(chunk, name):
                    found.fused[chunk_id] = 0.0
                    joined.append(chunk_id)
        found.group(storage, joined)
        joined.clear()
        lifted = False
        for path, chunks in found.by_path.items():
            lift = unit * (NAMED_FILE_LIFT if path in named_files else 1.0)
            for chunk in chunks:
                if chunk.kind not in HISTORY_KINDS and _defines(chunk, name):
                    lifted = True
                    found.fused[chunk.id] += lift
                    if "definition" not in found.found_by[chunk.id]:
                        found.found_by[chunk.id].append("definition")
        if not lifted and not storage.symbol_ids(name):
            _lift_reexports(found, name, unit)


def _lift_reexports(found: _Candidates, name: str, unit: float) -> None:
    """A symbol nothing in the tree defines (another crate's, a package's): the candidates
    that make it public here (`pub use`, `export { }`) stand where its definition would."""
    for chunks in found.by_path.values():
        for chunk in chunks:
            if chunk.kind not in HISTORY_KINDS and reexports(chunk.text, name):
                found.fused[chunk.id] += unit
                if "definition" not in found.found_by[chunk.id]:
                    found.found_by[chunk.id].append("definition")


def _defines(chunk: Chunk, name: str) -> bool:
    return chunk.symbol == name or defines(chunk.text, name)


def _propagate_calls(
    folder: Searchable, found: _Candidates, signals: QuerySignals, weight: float
) -> None:
    """The functions the best candidates call are lifted by a share of their caller's score:
    a report describes what the user called, and the fault is often one call further down
    (a directive that renders wrongly, the parser it calls). Reports only: a typed search
    names the thing itself ("how are chunks embedded" wants `embed_chunks`, not what it
    calls). Only names with at most
    CALLEE_DEFINITIONS definitions count: `get` or `run` would lift half the project."""
    storage = folder.storage
    best = sorted(found.fused.items(), key=lambda item: item[1], reverse=True)[:CALLERS]
    lift: dict[int, float] = {}
    read = found.chunks(storage)
    for chunk_id, score in best:
        chunk = read.get(chunk_id)
        for name in chunk.calls[:CALLS_PER_CHUNK] if chunk is not None else []:
            callees = storage.symbol_ids(name.rsplit(".", 1)[-1])
            if len(callees) > CALLEE_DEFINITIONS:
                continue
            for callee in callees:
                if callee != chunk_id:
                    lift[callee] = max(lift.get(callee, 0.0), weight * score)
    read = found.chunks(storage, lift)
    for callee, bonus in lift.items():
        chunk = read.get(callee)
        if chunk is None:
            continue
        found.fused[callee] = found.fused.get(callee, 0.0) + bonus * _demoted(
            folder, found, chunk.path, signals
        )
        found.found_by[callee].append("calls")


def _diversify(hits: Iterable[Hit], k: int, per_file_cap: int) -> list[Hit]:
    """Best first, at most `per_file_cap` per file, the same lines of one file shown once."""
    taken: list[Hit] = []
    per_file: dict[tuple[Path, str], list[Hit]] = defaultdict(list)
    for hit in hits:
        key = (hit.root, hit.path)
        same_file = per_file[key]
        if len(same_file) >= per_file_cap:
            continue
        if any(_shows_same_lines(hit.chunk, other.chunk) for other in same_file):
            continue
        same_file.append(hit)
        taken.append(hit)
        if len(taken) >= k:
            break
    return taken


def _overlaps(a: Chunk, b: Chunk) -> bool:
    """The two chunks' line ranges meet (one's class outline and its methods do)."""
    if a.kind in HISTORY_KINDS or b.kind in HISTORY_KINDS:
        return a.id == b.id
    return a.start_line <= b.end_line and b.start_line <= a.end_line


def _shows_same_lines(a: Chunk, b: Chunk) -> bool:
    """A result list shows each line once. An outline (a class's header and signatures, the
    bodies elided as `...` lines) spans its members' lines without holding them: a member
    inside it is shown beside it (before, `urlmap.rb`'s module outline hid every method)."""
    return _overlaps(a, b) and not (_outlines(a, b) or _outlines(b, a))


def _outlines(outer: Chunk, inner: Chunk) -> bool:
    return (
        ELISION in outer.text
        and outer.start_line <= inner.start_line
        and inner.end_line <= outer.end_line
        and (outer.start_line, outer.end_line) != (inner.start_line, inner.end_line)
    )


def embed_query(
    folders: Sequence[Searchable], query: str, lead: str = "", *, report: bool = True
) -> dict[str, np.ndarray]:
    """One query vector per distinct model among the folders' filled tiers (a tier without
    vectors, or weighted 0, costs no model call: MiniLM's first load is ~1 s). A report's
    `lead` line is blended into the MiniLM vector (`retrieve.lead_dense_weight`). A typed
    question (`report` False) asks the model tier only as `retrieve.model_tier_for` says."""
    vectors: dict[str, np.ndarray] = {}
    for folder in folders:
        weights = folder.settings.retrieve
        model = folder.settings.embed.model
        storage = folder.storage
        # the model tier answers typed questions too when asked to, or when no static tier
        # can (`embed.tiers = ["minilm"]`, a team revision that holds MiniLM only)
        no_static = not storage.vector_count("static") or weights.static_weight <= 0
        wanted = no_static or _model_ranks(folder, report)
        if (
            wanted
            and model not in vectors
            and (storage.vector_count("minilm") or model_on_demand.active(folder))
            and weights.dense_weight > 0
        ):
            vectors[model] = _minilm_query(folder, query, lead)
        wants_static = storage.vector_count("static") and weights.static_weight > 0
        if STATIC_MODEL_NAME not in vectors and wants_static:
            vectors[STATIC_MODEL_NAME] = load_static_embedder(folder.settings).embed([query])[0]
    return vectors


def model_tier_for(settings: Settings) -> str:
    """`retrieve.model_tier_for` with `auto` resolved: typed questions too for a model the
    user chose; for the packaged MiniLM (it adds ~nothing to typed questions) `measured`:
    reports on code in a language where it was measured to help (`model_gate`)."""
    chosen = settings.retrieve.model_tier_for
    if chosen != "auto":
        return chosen
    packaged = settings.embed.provider == "local" and settings.embed.model == DEFAULT_EMBED_MODEL
    return "measured" if packaged else "all"


def _model_ranks(folder: Searchable, report: bool) -> bool:
    """Whether the model tier ranks this question in this folder (`model_tier_for`)."""
    chosen = model_tier_for(folder.settings)
    if chosen == "all" or not report:
        return chosen == "all"
    return chosen == "reports" or model_gate.model_helps(model_gate.folder_language(folder.storage))


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
) -> list[Hit]:
    """Every candidate chunk with its fused score, best first, before diversification."""
    return list(_ranked_hits(folders, query, filters=filters, mode=mode, vectors=vectors))


def _path_filter(glob: str | None) -> pathspec.PathSpec | None:
    """A `--path` glob in gitignore syntax, matched in linear time (an agent's glob must not
    stall the daemon); pathspec is imported only for a search that has one."""
    if not glob:
        return None
    from codeask.core.source.globs import path_spec

    return path_spec(glob)


def _ranked_hits(
    folders: Sequence[Searchable],
    query: str,
    *,
    filters: Filters | None = None,
    mode: Mode = "hybrid",
    vectors: dict[str, np.ndarray] | None = None,
) -> Iterator[Hit]:
    """The candidates best first, each filtered and made a Hit only when the caller gets to it:
    a search keeps ~10 of ~400 candidates, and building the rest cost ~1 ms a query."""
    filters = filters or Filters()
    signals = query_signals(query)
    limit = FILTERED_CANDIDATES if filters.narrows else CANDIDATES
    if mode != "lexical" and vectors is None:
        # an explicit dense search asks for meaning: the model tier answers it too
        report = signals.report or mode == "dense"
        vectors = embed_query(folders, signals.text, signals.lead, report=report)
    glob = _path_filter(filters.path_glob)
    if mode != "lexical" and vectors:
        _prefetch_dense(folders, vectors, limit)
    found_in: list[tuple[Searchable, _Candidates]] = []
    scored: list[tuple[float, int, int]] = []  # (score, index in found_in, chunk id)
    for folder in folders:
        found = _collect(folder, vectors or {}, mode, signals, limit)
        _adjust(folder, found, signals, mode)
        found.chunks(folder.storage)
        scored += ((score, len(found_in), i) for i, score in found.fused.items())
        found_in.append((folder, found))
    scored.sort(key=itemgetter(0), reverse=True)  # stable: ties keep folder, then list order
    for score, which, chunk_id in scored:
        folder, found = found_in[which]
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
) -> SearchResult:
    """The search behind `codeask search`, the LSP request, hover and ask."""
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
    hits = _ranked_hits(live, query, filters=filters, mode=mode)
    return SearchResult(
        _diversify(hits, k, settings.per_file_cap),
        embedded < total,
        embedded,
        total,
        answered_tiers(live, mode),
    )


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

    hits = [h for h in hits if not (same_file(h) and _overlaps(h.chunk, chunk))]
    others = [h for h in hits if not same_file(h)]
    definitions = [
        d for d in _definitions(folders, word) if not (same_file(d) and _overlaps(d.chunk, chunk))
    ]
    return _diversify(definitions + (others or hits), k, per_file_cap=1)


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
