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

from codeask.config import Settings
from codeask.core.storage.protocol import IndexReader, Tier


class Searchable(Protocol):
    """What these counts read of a folder (retrieve.Searchable has it, as does FolderIndex)."""

    settings: Settings

    @property
    def storage(self) -> IndexReader: ...


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

    @property
    def complete(self) -> bool:
        return self.done >= self.total

    def percent(self) -> int:
        """Whole percent, rounded down (100 only when complete)."""
        return 100 * self.done // self.total if self.total else 100


def answered(
    folders: Sequence[Searchable], mode: Literal["lexical", "dense", "hybrid"]
) -> list[str]:
    """The retrievers a search of `mode` over `folders` uses: `lexical` (BM25, symbols, paths)
    unless dense only; a vector tier when some folder has its vectors and weighs it."""
    tiers = [LEXICAL] if mode != "dense" else []
    if mode == "lexical":
        return tiers
    for tier in VECTOR_TIERS:
        if any(f.storage.vector_count(tier) and _weight(f, tier) > 0 for f in folders):
            tiers.append(tier)
    return tiers


def _weight(folder: Searchable, tier: Tier) -> float:
    weights = folder.settings.retrieve
    return weights.static_weight if tier == "static" else weights.dense_weight


def counts(folders: Sequence[Searchable]) -> list[TierCount]:
    """Each vector tier some folder builds (`embed.tiers`), summed over the folders that
    build it (one storage read each: `counts()` is cheap)."""
    done = dict.fromkeys(VECTOR_TIERS, 0)
    total = dict.fromkeys(VECTOR_TIERS, 0)
    built: set[str] = set()
    for folder in folders:
        read = folder.storage.counts()
        have = {"static": read.static_embedded, "minilm": read.embedded}
        for tier in folder.settings.embed.tiers:
            built.add(tier)
            done[tier] += have[tier]
            total[tier] += read.chunks
    return [TierCount(t, done[t], total[t]) for t in VECTOR_TIERS if t in built]


def describe(tiers: Sequence[str], coverage: Sequence[TierCount]) -> str:
    """`answered by lexical + static (static: all 9051 chunks; MiniLM: 1200 of 9051 chunks
    (13%), filling in)`; '' when every configured tier is complete and answered."""
    if all(c.complete and c.tier in tiers for c in coverage) and tiers:
        return ""
    parts = []
    for count in coverage:
        label = LABELS[count.tier]
        if count.complete:
            part = f"{label}: all {count.total} chunks"
        else:
            part = f"{label}: {count.done} of {count.total} chunks ({count.percent()}%), filling in"
        if count.tier not in tiers and count.done:
            part += ", not used here"
        parts.append(part)
    used = " + ".join(LABELS[t] for t in tiers) or "nothing"
    return f"answered by {used}" + (f" ({'; '.join(parts)})" if parts else "")
