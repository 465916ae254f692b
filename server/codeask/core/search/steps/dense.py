"""Collect step `dense`: the vector tiers' nearest chunks (the static tier and the model tier).

Two dense tiers feed the fusion when they exist: the static model (every chunk has a vector
right after the first pass; the query costs ~0.1 ms) and MiniLM (fills in behind). A chunk
without a MiniLM vector yet is still found densely through the static tier. Which tiers a
search may use comes as data (`tiers.Tiers`): while MiniLM's query path loads, the static tier
answers for every chunk.

Measured (benchmarks/README.md): without the static tier eval-search .8481 vs .8643 (Round 12
ablations); lexical + MiniLM on pasted reports R@5 .857 vs the first pass's .843 (Round 4).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from codeask.core.embedding.static import STATIC_MODEL_NAME
from codeask.core.search import model_on_demand
from codeask.core.search.steps.fuse import rrf
from codeask.core.search.steps.state import Mode, Ranked, Ranking, Searchable
from codeask.core.search.tiers import Tiers
from codeask.core.storage.protocol import DenseAsk, StorageUnavailable, Tier, prefetch_dense

log = logging.getLogger(__name__)


class DenseList(NamedTuple):
    """One dense list a folder contributes: its name in `found_by`, tier, the query vector's
    key in `embed_query`'s dict, weight, and `missing_from` (static tier, scope `missing`:
    only chunks MiniLM has not embedded yet)."""

    name: str
    tier: Tier
    vector: str
    weight: float
    missing_from: Tier | None = None


def dense_lists(
    folder: Searchable, vectors: dict[str, np.ndarray], tiers: Tiers
) -> list[DenseList]:
    """The dense lists this folder ranks with for a question whose query `vectors` these are."""
    weights = folder.settings.retrieve
    model = folder.settings.embed.model
    plan: list[DenseList] = []
    # a size-0 vector: the model's server did not answer (core/embedding/remote.py)
    minilm = tiers.minilm and weights.dense_weight > 0
    full = not model_on_demand.active(folder)  # else `dense_on_demand`
    if minilm and model in vectors and vectors[model].size and full:
        plan.append(DenseList("dense", "minilm", model, weights.dense_weight))
    wants_static = weights.static_weight > 0 and STATIC_MODEL_NAME in vectors
    if wants_static and folder.storage.vector_count("static"):
        # without a MiniLM list for this question, the static tier ranks every chunk
        everything = weights.static_scope == "all" or not tiers.minilm
        all_chunks = everything or not any(d.tier == "minilm" for d in plan)
        missing: Tier | None = None if all_chunks else "minilm"
        static = DenseList("static", "static", STATIC_MODEL_NAME, weights.static_weight, missing)
        plan.append(static)
    return plan


def prefetch(
    folders: Sequence[Searchable], vectors: dict[str, np.ndarray], limit: int, tiers: Tiers
) -> None:
    """Every folder's remote dense queries of this search, batched: a workspace whose folders
    read one team database asks it ONE query per query vector, not one per folder."""
    asks: dict[str, list[DenseAsk]] = defaultdict(list)
    for folder in folders:
        for dense in dense_lists(folder, vectors, tiers):
            storage = folder.storage
            asks[dense.vector] += storage.dense_asks(
                dense.tier, limit, missing_from=dense.missing_from
            )
    for key, group in asks.items():
        prefetch_dense(group, vectors[key])


def dense(ranking: Ranking) -> list[Ranked]:
    """Each planned dense list (`retrieve.dense_weight`, `retrieve.static_weight`); a tier
    whose list ranked is recorded as answering."""
    if ranking.mode == "lexical":
        return []
    lists = []
    for plan in dense_lists(ranking.folder, ranking.vectors, ranking.tiers):
        vector = ranking.vectors[plan.vector]
        ranked = ranked_ids(ranking.folder, plan, vector, ranking.limit, ranking.mode)
        if ranked is not None:
            ranking.answered.add(plan.tier)
        lists.append(Ranked(plan.name, ranked or [], plan.weight))
    return lists


def ranked_ids(
    folder: Searchable, plan: DenseList, vector: np.ndarray, limit: int, mode: Mode
) -> list[int] | None:
    """`plan`'s nearest chunk ids; in hybrid mode None when a remote part of the index did not
    answer (the other retrievers still do; the team status line says the query failed)."""
    try:
        hits = folder.storage.dense_top_k(plan.tier, vector, limit, missing_from=plan.missing_from)
    except StorageUnavailable as exc:
        if mode != "hybrid":
            raise
        log.warning("%s: %s search skipped (%s)", folder.root, plan.name, exc)
        return None
    return [i for i, _ in hits]


def dense_on_demand(ranking: Ranking, lists: Sequence[Ranked]) -> list[Ranked]:
    """The model tier's list of a folder filled on demand (`model_on_demand`): the other
    lists' best candidates ranked by it; none when it does not rank this question. Measured
    (`benchmarks.reports_eval`, its `on_demand` tier): see `model_gate.ON_DEMAND_LANGUAGES`."""
    folder = ranking.folder
    model, weight = folder.settings.embed.model, folder.settings.retrieve.dense_weight
    vector = ranking.vectors.get(model)
    usable = ranking.mode != "lexical" and ranking.tiers.minilm and weight > 0
    if not usable or vector is None or not vector.size or not model_on_demand.active(folder):
        return []
    first: dict[int, float] = {}
    for _, ranked, each in lists:
        rrf(ranked, each, first)
    ranking.answered.add("minilm")
    return [Ranked("dense", model_on_demand.ranked(folder, vector, first), weight)]
