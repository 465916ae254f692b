"""Collect steps on the question's words: BM25 over chunks, a report's lead line, and the
symbol table (an identifier the question names, defined in at most 20 places).

Measured (benchmarks/README.md, Round 12 ablations, eval-search file NDCG@10 .8643): without
the BM25 chunk list .8562, without the symbol list .8641; the lead line was the largest single
gain on pasted reports (Round 3, "the title drowned by the body")."""

from __future__ import annotations

from codeask.core.search.query import QuerySignals
from codeask.core.search.steps.state import Ranked, Ranking, Searchable
from codeask.core.storage.lexical.index import expand_query

#: A name defined in more places than this is too common to point at its definitions.
MAX_SYMBOL_DEFINITIONS = 20


def lexical(ranking: Ranking) -> list[Ranked]:
    """BM25 over chunks on the question's text (`retrieve.lexical_weight`)."""
    if not ranking.lexical:
        return []
    ranking.answered.add("lexical")
    storage, weights = ranking.folder.storage, ranking.folder.settings.retrieve
    text = expand_query(ranking.signals.text)
    ranked = [i for i, _ in storage.lexical_top_k(text, ranking.limit)]
    return [Ranked("lexical", ranked, weights.lexical_weight)]


def lead(ranking: Ranking) -> list[Ranked]:
    """A pasted report's summary line searched on its own (`retrieve.lead_weight`): the rest of
    a report is mostly context that drowns it (benchmarks/README.md, pasted reports)."""
    signals, weights = ranking.signals, ranking.folder.settings.retrieve
    if not ranking.lexical or not signals.lead or weights.lead_weight <= 0:
        return []
    ranked = [
        i
        for i, _ in ranking.folder.storage.lexical_top_k(expand_query(signals.lead), ranking.limit)
    ]
    return [Ranked("lead", ranked, weights.lead_weight)]


def symbols(ranking: Ranking) -> list[Ranked]:
    """The definitions of the identifiers the question names (`retrieve.symbol_weight`)."""
    if not ranking.lexical:
        return []
    weight = ranking.folder.settings.retrieve.symbol_weight
    return [Ranked("symbol", symbol_ranked(ranking.folder, ranking.signals), weight)]


def symbol_ranked(folder: Searchable, signals: QuerySignals) -> list[int]:
    """The chunks defining the question's identifiers, longest name first."""
    hits: list[int] = []
    for name in sorted(signals.identifiers, key=lambda n: (-len(n), n)):  # not a set's order
        ids = folder.storage.symbol_ids(name)
        if 0 < len(ids) <= MAX_SYMBOL_DEFINITIONS:
            hits.extend(ids)
    return list(dict.fromkeys(hits))
