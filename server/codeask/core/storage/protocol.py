"""The storage seam: what the rest of codeask may ask of one folder's index.

Retrieval, ask, the language server and the CLI read an index only through `IndexReader`;
the indexer writes it through `IndexWriter`. `Storage` is both. Each implementation owns its
locking (callers never take a store's lock) and whatever caches it keeps (the symbol table of
the local one lives on the instance, not in a module keyed by `id(store)`).

Implementations: `core/storage/local.py` (`LocalStorage`: exact vector tiers + msgspec snapshots +
SQLite FTS5, the default). How to add another: docs/storage.md.

Chunk ids are the implementation's business: callers only pass back ids it handed out
(`new_ids`, a hit's `Chunk.id`), never assume they are vector labels or table rows.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from codeask.core.records import Chunk, FileRecord
from codeask.core.storage.file_table import StatedT
from codeask.core.storage.quantized_rows import QuantizedRows

log = logging.getLogger(__name__)

#: The dense tiers: the configured model (`embed.model`, MiniLM by default) and the static one.
Tier = Literal["minilm", "static"]


class StorageUnavailable(Exception):
    """A remote part of an index did not answer (a database lost mid-query, a timeout). Its
    message is for people (no password). Hybrid search answers without the part that failed."""


class DenseBatcher(Protocol):
    """A reader that answers several readers' dense queries in one round trip."""

    def answer_asks(self, asks: Sequence[DenseAsk], vector: np.ndarray) -> None:
        """Run every ask (all of this batcher's `group`) at once; each ask's reader keeps its
        rows for its next `dense_top_k` with that vector and at most that `k`."""
        ...


@dataclass(frozen=True)
class DenseAsk:
    """A dense top-k that a reader will be asked for during this search and that it can answer
    together with others of the same `group` (one database, model and tier) in ONE query: a
    multi-root workspace on the team backend searches all its repositories at once."""

    group: Hashable
    reader: DenseBatcher
    k: int


@dataclass(frozen=True)
class IndexCounts:
    """Sizes of one index, read without waiting for a writer (cheap: status bars, every
    result). Mid-write, they may lag a write by one file."""

    files: int
    """Indexed files that were not skipped."""
    chunks: int
    embedded: int
    """Chunks with a vector of the configured model (tier `minilm`)."""
    static_embedded: int
    history_commits: int


class IndexReader(Protocol):
    """The read side: files, chunks, symbols, dense and lexical top-k, counts."""

    @property
    def generation(self) -> int:
        """The generation of the snapshot this reader matches (grows with every save)."""
        ...

    @property
    def model(self) -> str:
        """The embedding model of tier `minilm`."""
        ...

    def tier_model(self, tier: Tier) -> tuple[str, int]:
        """(model name, dimension) of a tier's vectors."""
        ...

    def counts(self) -> IndexCounts: ...

    def chunk_count(self) -> int:
        """Every chunk (code, text and history); 0: nothing to search."""
        ...

    def vector_count(self, tier: Tier) -> int:
        """Chunks with a vector in `tier`."""
        ...

    # ---- files and chunks ------------------------------------------------------------------
    def file(self, path: str) -> FileRecord | None:
        """The record of a workspace-relative POSIX path (skipped files included)."""
        ...

    def paths(self) -> list[str]:
        """Every indexed path (skipped files included)."""
        ...

    def chunk(self, chunk_id: int) -> Chunk | None: ...

    def chunks(self, chunk_ids: Iterable[int]) -> dict[int, Chunk]:
        """id → chunk for the known ones among `chunk_ids` (one round trip for a remote store:
        retrieval reads its few hundred candidates at once)."""
        ...

    def chunks_of(self, path: str) -> list[Chunk]:
        """A file's chunks in file order ([] when unknown)."""
        ...

    def all_chunks(self) -> list[Chunk]:
        """Every chunk, history included (a copy: safe to iterate while the index changes)."""
        ...

    def history_commits(self) -> list[str]:
        """The shas of the indexed commits."""
        ...

    # ---- exact evidence --------------------------------------------------------------------
    def symbol_ids(self, name: str) -> list[int]:
        """Ids of the code chunks that define `name` (exact symbol name, history excluded)."""
        ...

    def paths_named(self, key: str) -> list[str]:
        """Files whose path ends in `key` (see `retrieve.path_keys`: `c.py`, `b/c`, ...)."""
        ...

    # ---- dense and lexical top-k -----------------------------------------------------------
    def vector(self, tier: Tier, chunk_id: int) -> np.ndarray | None:
        """The stored vector of a chunk (None: not embedded in `tier`)."""
        ...

    def dense_top_k(
        self, tier: Tier, vector: np.ndarray, k: int, *, missing_from: Tier | None = None
    ) -> list[tuple[int, float]]:
        """(chunk id, similarity) of the `k` nearest chunks, best first. `missing_from`: only
        chunks without a vector in that tier ([] when it covers every chunk)."""
        ...

    def dense_asks(self, tier: Tier, k: int, *, missing_from: Tier | None = None) -> list[DenseAsk]:
        """The remote queries `dense_top_k(tier, _, k, missing_from=...)` would make, for
        `prefetch_dense` to batch across folders ([] for an in-process index)."""
        ...

    def lexical_top_k(self, query: str, k: int) -> list[tuple[int, float]]:
        """(chunk id, BM25 score) best first, higher is better (`lexical.LexicalIndex.search`)."""
        ...

    def lexical_files(self, query: str, k: int) -> list[tuple[str, float]]:
        """(path, score) best first: whole-file BM25."""
        ...

    # ---- the index on disk -------------------------------------------------------------------
    def saved_at(self) -> float:
        """When the live snapshot was saved (0: never)."""
        ...

    def disk_bytes(self) -> int: ...


class IndexWriter(Protocol):
    """The write side: what the indexer needs. Each call is atomic for readers (a file's
    chunks, its vectors and its lexical rows change together)."""

    def new_ids(self, count: int) -> list[int]:
        """Fresh chunk ids, never reused (a stale vector can never answer for a new chunk)."""
        ...

    def replace_file(
        self,
        record: FileRecord,
        chunks: Sequence[Chunk],
        static_rows: np.ndarray | QuantizedRows | None = None,
        columns: Sequence[tuple[str, str, str]] | None = None,
    ) -> list[int]:
        """Swap a file's chunks (fresh ids), their lexical rows and, when given, their static
        vectors; returns the removed ids. `columns`: each chunk's lexical columns when the
        caller computed them already (a chunking worker did)."""
        ...

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        """Same content, new stat: keep chunks and vectors."""
        ...

    def changed_files(self, files: Sequence[StatedT]) -> list[StatedT]:
        """`files` whose size or mtime is not their local record's (or with none): the pass's
        is-it-unchanged check, cheaper than `file` (no record is decoded and kept for a file
        that did not change), for every file of a walk in one call."""
        ...

    def remove_file(self, path: str) -> list[int]:
        """Forget a file everywhere; returns its removed chunk ids."""
        ...

    def sync_history(
        self, removed: Iterable[str], added: dict[str, list[Chunk]], head: str
    ) -> None:
        """Drop commits, add others (their chunks get fresh ids here), remember HEAD."""
        ...

    def add_vectors(self, tier: Tier, ids: list[int], rows: np.ndarray) -> None:
        """Attach vectors to the chunks that still exist (a concurrent edit may remove some)."""
        ...

    def pending_ids(self, tier: Tier) -> list[int]:
        """Chunks without a vector in `tier`."""
        ...

    def has_vector(self, tier: Tier, chunk_id: int) -> bool: ...

    def release_checks(self) -> None:
        """Start the background hash of the big tiers a writer's open only size-checked
        (called after its first pass, so the hash does not race it for a core)."""
        ...

    def size_model_tier(self, dim: int) -> bool:
        """Give a model tier that has no size yet (its server had not answered when the index
        opened: it holds no vectors) the size `dim`; False when it has a size already."""
        ...

    def clear(self) -> None:
        """Forget everything (a full rebuild)."""
        ...

    def save(self) -> None:
        """Persist a consistent snapshot if anything changed (never by a reader)."""
        ...

    def close(self) -> None:
        """Release files and connections."""
        ...

    def warm_up(self) -> None:
        """Make the next query fast (build in-memory copies); called off the request path."""
        ...


class Storage(IndexReader, IndexWriter, Protocol):
    """One folder's index, both sides."""


def prefetch_dense(asks: Iterable[DenseAsk], vector: np.ndarray) -> None:
    """One round trip per group for every folder's dense query of this search (the readers
    keep the rows). A failure is only logged: each reader's own `dense_top_k` then asks again
    and raises to its caller as it would have without the prefetch."""
    groups: dict[Hashable, list[DenseAsk]] = {}
    for ask in asks:
        groups.setdefault(ask.group, []).append(ask)
    for group in groups.values():
        try:
            group[0].reader.answer_asks(group, vector)
        except StorageUnavailable as exc:
            log.warning("batched dense query failed (each folder asks on its own): %s", exc)
