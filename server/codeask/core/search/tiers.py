"""Which retrievers answered a search and how complete each vector tier is, in one sentence
every face prints (CLI, MCP, language server, the ask prompt).

An index whose static tier covers every chunk is searched densely already; only MiniLM fills in
behind. Saying "warming up, mostly lexical" then is false: each face says instead which tiers
answered and how many chunks each vector tier covers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from codeask.config import DEFAULT_EMBED_MODEL, Settings
from codeask.core.search import model_gate, model_on_demand
from codeask.core.storage.protocol import IndexCounts, IndexReader, Tier


class Searchable(Protocol):
    """What these counts read of a folder (retrieve.Searchable has it, as does FolderIndex)."""

    settings: Settings

    @property
    def storage(self) -> IndexReader: ...


@dataclass(frozen=True)
class Tiers:
    """Which vector tiers a search may rank with, passed down the pipeline as data.

    `minilm` False: the model tier's query path is still loading (the MCP tools never wait
    for it), so its list is left out and the static tier ranks every chunk instead."""

    minilm: bool = True


ALL_TIERS = Tiers()
STATIC_ONLY = Tiers(minilm=False)
LEXICAL = "lexical"
VECTOR_TIERS: tuple[Tier, ...] = ("static", "minilm")
LABELS = {"lexical": "lexical", "static": "static", "minilm": "MiniLM"}


@dataclass(frozen=True)
class TierCount:
    """One configured vector tier: chunks with its vector, of the chunks of the folders that
    build it."""

    tier: Tier
    done: int
    total: int
    #: What the faces call it: the model tier is "MiniLM" only when it is the packaged MiniLM
    #: (a remote or hub model is named by its model, not by a model it is not).
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or LABELS[self.tier]

    @property
    def complete(self) -> bool:
        return self.done >= self.total

    def percent(self) -> int:
        """Whole percent, rounded down (100 only when complete)."""
        return 100 * self.done // self.total if self.total else 100


def answered(
    folders: Sequence[Searchable],
    mode: Literal["lexical", "dense", "hybrid"],
    use: Tiers = ALL_TIERS,
) -> list[str]:
    """The retrievers that can rank a question of `mode` over `folders` now, said before any
    question is asked (status, the ask prompt's note): `lexical` (BM25, symbols, paths) unless
    dense only; a vector tier when some folder has its vectors, weighs it, and (the model
    tier) would rank some question there (`ranks_with_model`: with the packaged MiniLM, only
    reports in a language where it was measured to help). A search says what actually ranked
    it (`SearchResult.tiers`)."""
    tiers = [LEXICAL] if mode != "dense" else []
    if mode == "lexical":
        return tiers
    for tier in VECTOR_TIERS:
        if any(_answers(f, tier, use) for f in folders):
            tiers.append(tier)
    return tiers


def _answers(folder: Searchable, tier: Tier, use: Tiers) -> bool:
    weights = folder.settings.retrieve
    on_demand = tier == "minilm" and model_on_demand.active(folder)  # embeds as a report asks
    if not folder.storage.vector_count(tier) and not on_demand:
        return False
    if tier == "static":
        return weights.static_weight > 0
    if not use.minilm or weights.dense_weight <= 0:
        return False
    return ranks_with_model(folder, report=True)


def model_tier_for(settings: Settings) -> str:
    """`retrieve.model_tier_for` with `auto` resolved: typed questions too for a model the
    user chose; for the packaged MiniLM (it adds ~nothing to typed questions) `measured`:
    reports on code in a language where it was measured to help (`model_gate`)."""
    chosen = settings.retrieve.model_tier_for
    if chosen != "auto":
        return chosen
    packaged = settings.embed.provider == "local" and settings.embed.model == DEFAULT_EMBED_MODEL
    return "measured" if packaged else "all"


def model_ranks(folder: Searchable, report: bool) -> bool:
    """Whether `model_tier_for` lets the model tier rank this question in this folder."""
    chosen = model_tier_for(folder.settings)
    if chosen == "all" or not report:
        return chosen == "all"
    language = model_gate.folder_language(folder.storage)
    on_demand = model_on_demand.active(folder)
    return chosen == "reports" or model_gate.model_helps(language, on_demand=on_demand)


def ranks_with_model(folder: Searchable, report: bool) -> bool:
    """Whether a question is embedded by the model tier for this folder: when
    `model_tier_for` lets it, or when no static tier can answer (`embed.tiers = ["minilm"]`,
    a team revision that holds MiniLM only)."""
    weights = folder.settings.retrieve
    no_static = not folder.storage.vector_count("static") or weights.static_weight <= 0
    return no_static or model_ranks(folder, report)


def counts(
    folders: Sequence[Searchable], read: Sequence[IndexCounts] | None = None
) -> list[TierCount]:
    """Each vector tier some folder builds (`embed.tiers`), summed over the folders that
    build it. `read`: each folder's `storage.counts()` when the caller has them already (one
    read is ~0.4 ms on 9,000 chunks, and a status answer reads them anyway)."""
    done = dict.fromkeys(VECTOR_TIERS, 0)
    on_demand = False
    total = dict.fromkeys(VECTOR_TIERS, 0)
    built: set[str] = set()
    models: set[str] = set()
    if read is None:
        read = [folder.storage.counts() for folder in folders]
    for folder, sizes in zip(folders, read, strict=True):
        have = {"static": sizes.static_embedded, "minilm": sizes.embedded}
        if "minilm" in folder.settings.embed.tiers:
            models.add(folder.settings.embed.model)
            if model_on_demand.active(folder):  # it covers what it ranks: nothing fills in
                have["minilm"], on_demand = sizes.chunks, True
        for tier in folder.settings.embed.tiers:
            built.add(tier)
            done[tier] += have[tier]
            total[tier] += sizes.chunks
    label = model_label(models) + (" on demand" if on_demand else "")
    return [
        TierCount(t, done[t], total[t], label if t == "minilm" else "")
        for t in VECTOR_TIERS
        if t in built
    ]


def model_label(models: set[str]) -> str:
    """`MiniLM` for the packaged model; `model 'name'` for another one (one name, or the
    models of several folders joined)."""
    if not models or models == {DEFAULT_EMBED_MODEL}:
        return LABELS["minilm"]
    return "model " + ", ".join(f"'{m}'" for m in sorted(models))


def describe(tiers: Sequence[str], coverage: Sequence[TierCount]) -> str:
    """`answered by lexical + static (static: all 9051 chunks; MiniLM: 1200 of 9051 chunks
    (13%), filling in)`; '' when every configured tier is complete and answered."""
    if all(c.complete and c.tier in tiers for c in coverage) and tiers:
        return ""
    parts = "; ".join(_count_text(count, tiers) for count in coverage)
    names: dict[str, str] = {count.tier: count.name for count in coverage}
    used = " + ".join(names.get(t) or LABELS.get(t, t) for t in tiers) or "nothing"
    return f"answered by {used}" + (f" ({parts})" if parts else "")


def incomplete(coverage: Sequence[TierCount]) -> str:
    """`static: all 9051 chunks; MiniLM: 1200 of 9051 chunks (13%), filling in` for an answer
    that no search tier gave (related code, blame); '' when every configured tier is complete."""
    if all(c.complete for c in coverage):
        return ""
    return "; ".join(_count_text(count, [t.tier for t in coverage]) for count in coverage)


def _count_text(count: TierCount, tiers: Sequence[str]) -> str:
    label = count.name
    if label.endswith(" on demand"):
        text = f"{label}: a report's first candidates, embedded as asked and cached"
    elif count.complete:
        text = f"{label}: all {count.total} chunks"
    else:
        text = f"{label}: {count.done} of {count.total} chunks ({count.percent()}%), filling in"
    if count.tier not in tiers and count.done:
        text += ", not used here"
    return text
