"""A search's ranking as named steps: collect → fuse → adjust → diversify.

Per folder, each COLLECT step returns ranked lists (BM25, a report's lead line, the symbol
table, the vector tiers), `fuse` joins them by reciprocal rank, then each ADJUST step changes
the fused scores in place, in this order; `retrieve.search` merges the folders' candidates
best first, filters them and diversifies (steps/diversify.py). Each step is a function of the
question's `Ranking` in its own module under core/search/steps/, documented there with what
it was measured to do. docs/architecture.md lists the pipeline (a test checks the list) and
says how to add a step.
"""

from __future__ import annotations

from collections.abc import Callable

from codeask.core.search.steps.calls import propagate_calls
from codeask.core.search.steps.coherence import lift_coherent_files
from codeask.core.search.steps.demote import demote_paths
from codeask.core.search.steps.dense import dense, dense_on_demand
from codeask.core.search.steps.fields import lift_field_names
from codeask.core.search.steps.file_prior import lift_file_prior
from codeask.core.search.steps.frames import lift_deepest_frame
from codeask.core.search.steps.fuse import fuse
from codeask.core.search.steps.hub import lift_hub
from codeask.core.search.steps.mentions import lift_mentioned_paths
from codeask.core.search.steps.names import lift_named
from codeask.core.search.steps.packages import lift_prose_named_package
from codeask.core.search.steps.phrases import lift_quoted_phrases
from codeask.core.search.steps.releases import demote_released_copies
from codeask.core.search.steps.siblings import lift_named_sibling
from codeask.core.search.steps.state import Ranked, Ranking
from codeask.core.search.steps.tested import lift_tested_subjects
from codeask.core.search.steps.words import lead, lexical, symbols

Collect = Callable[[Ranking], list[Ranked]]
Adjust = Callable[[Ranking], None]

#: The retrievers, in fusion order (a list's order is its place in each chunk's `retrievers`).
COLLECT: tuple[Collect, ...] = (lexical, lead, symbols, dense)
#: The adjustments, in the order they run (each reads the scores the ones before it left).
ADJUST: tuple[Adjust, ...] = (
    lift_file_prior,
    lift_mentioned_paths,
    lift_named,
    lift_hub,
    demote_paths,
    demote_released_copies,
    lift_tested_subjects,
    lift_quoted_phrases,
    propagate_calls,
    lift_coherent_files,
    lift_named_sibling,
    lift_prose_named_package,
    lift_field_names,
    lift_deepest_frame,
)


def rank(ranking: Ranking) -> Ranking:
    """Collect, fuse and adjust one folder's candidates for the question; every candidate's
    chunk read (in one call) for the merge across folders."""
    lists = [ranked for step in COLLECT for ranked in step(ranking)]
    lists += dense_on_demand(ranking, lists)  # a folder past a full model pass: ranks the rest
    fuse(ranking, lists)
    for step in ADJUST:
        step(ranking)
    ranking.found.chunks(ranking.folder.storage)
    return ranking


def step_names() -> list[str]:
    """The pipeline as the doc lists it: collect steps, `fuse`, adjust steps, `diversify`."""
    return [s.__name__ for s in COLLECT] + ["fuse"] + [s.__name__ for s in ADJUST] + ["diversify"]
