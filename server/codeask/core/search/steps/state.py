"""What every ranking step reads and writes: the question's `Ranking` and its `Candidates`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple, Protocol

import numpy as np

from codeask.config import Settings
from codeask.core.embedding.embed import CachedEmbedder
from codeask.core.records import Chunk
from codeask.core.search.query import QuerySignals
from codeask.core.search.tiers import Tiers
from codeask.core.storage.protocol import IndexReader

Mode = Literal["lexical", "dense", "hybrid"]


class Searchable(Protocol):
    """What retrieval needs of a folder index (the indexer's FolderIndex provides it): the
    index itself only through `storage` (core/storage/protocol.py)."""

    root: Path
    settings: Settings

    @property
    def storage(self) -> IndexReader: ...

    @property
    def embedder(self) -> CachedEmbedder: ...


@dataclass
class Candidates:
    """A question's candidate chunks in one folder and their fused scores."""

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

    def file_scores(self) -> dict[str, float]:
        """Each grouped file's best fused score (0.0 when none of its chunks is fused)."""
        fused = self.fused
        return {
            p: max((fused.get(c.id, 0.0) for c in cs), default=0.0)
            for p, cs in self.by_path.items()
        }

    def group(self, storage: IndexReader, ids: Iterable[int] | None = None) -> None:
        """Add the candidates (or `ids`, new ones) to `by_path`; gone chunks are left out."""
        ids = list(self.fused if ids is None else ids)
        read = self.chunks(storage, ids)
        for chunk_id in ids:
            chunk = read.get(chunk_id)
            if chunk is not None:
                self.by_path.setdefault(chunk.path, []).append(chunk)


class Ranked(NamedTuple):
    """One retriever's list for the fusion: its name in `found_by`, chunk ids best first, and
    its weight (`retrieve.*_weight`)."""

    name: str
    ids: list[int]
    weight: float


@dataclass
class Ranking:
    """One question being ranked in one folder: what the steps read, and `found`, what they
    change. `answered`: the tiers whose lists actually ranked it (what `tiers_answered` says)."""

    folder: Searchable
    signals: QuerySignals
    mode: Mode
    vectors: dict[str, np.ndarray]
    limit: int
    tiers: Tiers
    found: Candidates = field(default_factory=Candidates)
    answered: set[str] = field(default_factory=set)

    @property
    def lexical(self) -> bool:
        """Whether the lexical retrievers and the steps built on words take part."""
        return self.mode != "dense"


def leading(best: dict[str, float], count: int) -> list[str]:
    """The `count` files of `best` with the highest scores, best first."""
    return sorted(best, key=best.__getitem__, reverse=True)[:count]
