"""The dense tiers of one folder index: static vectors for every chunk within seconds, then the
MiniLM backlog, files the user looks at first. Both come from the content-hash cache when the
text was embedded before; the model loads only when a vector must really be computed.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Protocol

import numpy as np

from codeask.core.embedding import on_demand
from codeask.core.embedding.embed import CachedEmbedder, learned_dim
from codeask.core.embedding.static import StaticEmbedder, load_static_embedder
from codeask.core.indexer.run import (
    Cancelled,
    CancelToken,
    IndexReport,
    Progress,
    ProgressFn,
)
from codeask.core.records import Chunk
from codeask.core.storage.factory import load_embedder
from codeask.core.storage.protocol import Storage, Tier

if TYPE_CHECKING:
    from codeask.config import Settings

log = logging.getLogger(__name__)

#: Chunks embedded between cancellation checks: one model batch, so a cancel (or an editor
#: save preempting the backlog) waits ~1-2 s at most, not a whole 256-chunk step.
EMBED_STEP = 32
#: The message of the `embed` progress event sent while the embedding model loads.
LOADING = "loading the embedding model"
#: Chunks per static-tier batch: ~0.2 s of work, so a cancel is honoured quickly.
STATIC_STEP = 1024
#: Chunks per batch of the thread behind a pass: small, so it starts early and a small folder's
#: chunks are embedded beside its chunking too (every batch shares one widened matrix).
BEHIND_STEP = 256
#: History chunks: embedded after the code they explain.
HISTORY_KINDS = ("commit", "hunk")


class TierHost(Protocol):
    """What the dense tiers read of their folder index (`folder.FolderIndex`), at each call: a
    reload swaps `local`, tests swap `settings`. A Protocol, so this module need not import
    folder.py (which builds a VectorTiers: an import circle)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def local(self) -> Storage: ...
    def checkpoint(self) -> None:
        """Save a consistent snapshot if anything changed."""
        ...


class VectorTiers:
    """Fills the static and MiniLM vectors of one folder index's chunks.

    Reads the index's store and settings at each call: a reload swaps the store, and tests
    swap the settings.
    """

    def __init__(self, index: TierHost, embedder: CachedEmbedder | None = None) -> None:
        #: Weak: the index holds these tiers, and a cycle between them kept a reader's replaced
        #: index (its mapped vectors: 36 MB a generation at 149k chunks) until a full garbage
        #: collection; the daemon reloads after each edit (issue 42).
        self._host = weakref.ref(index)
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        #: fill_backlog() takes only this lock: single-file updates (editor saves) can run
        #: while a long backlog embeds; both sides tolerate the other's removed chunks.
        self._backlog_lock = threading.Lock()
        self._priority: set[str] = set()

    @property
    def _index(self) -> TierHost:
        host = self._host()
        if host is None:
            raise RuntimeError("the folder index of these vector tiers is gone")
        return host

    @property
    def _storage(self) -> Storage:
        """The index's storage as it is now (a reader's reload replaces it)."""
        return self._index.local

    # ---- the embedder is loaded on first need: lexical search never waits for it ------------
    @property
    def embedder(self) -> CachedEmbedder:
        """The (shared, cached) embedding model; loaded once per process."""
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = load_embedder(self._index.settings)
            return self._embedder

    @property
    def embedder_loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._embedder is not None

    @property
    def static_tier(self) -> bool:
        """Whether this index builds static-tier vectors (`embed.tiers`)."""
        return "static" in self._index.settings.embed.tiers

    @property
    def minilm_tier(self) -> bool:
        """Whether this index builds vectors with the configured model (`embed.tiers`)."""
        return "minilm" in self._index.settings.embed.tiers

    # ---- static tier -------------------------------------------------------------------------
    def embed_static(
        self, ids: list[int], report: IndexReport, emit: ProgressFn, token: CancelToken
    ) -> None:
        """The static tier, during the first pass: every chunk in seconds (cached by hash)."""
        if not self.static_tier or not ids:
            return
        total = self._storage.chunk_count()
        done = total - len(ids)
        for start in range(0, len(ids), STATIC_STEP):
            token.check()
            found = map(self._storage.chunk, ids[start : start + STATIC_STEP])
            chunks = [c for c in found if c is not None]
            self.embed_static_chunks(chunks, report)
            done += len(chunks)
            emit(Progress("static", chunks_embedded=done, chunks_total=total))

    @contextmanager
    def static_behind(self, report: IndexReport) -> Iterator[StaticBehind]:
        """Static vectors for a pass's chunks, computed in a thread while the pass goes on."""
        behind = StaticBehind(self, report)
        try:
            yield behind
        finally:
            behind.close()

    def static_bulk(self) -> AbstractContextManager[object]:
        """Many static batches in a row share one widened matrix (static.py `widened`)."""
        model = load_static_embedder(self._index.settings).inner
        return model.widened() if isinstance(model, StaticEmbedder) else nullcontext()

    def embed_static_chunks(self, chunks: list[Chunk], report: IndexReport) -> None:
        """Static vectors for chunks just stored, while they are still in hand (a pass embeds
        as it goes, overlapping its chunking workers, instead of reading them back after)."""
        rows = self.static_rows(chunks, report)
        if rows is not None:
            self._storage.add_vectors("static", [c.id for c in chunks], rows)

    def static_rows(self, chunks: list[Chunk], report: IndexReport) -> np.ndarray | None:
        """Static-tier vectors of `chunks` (content-hash cached); None when the tier is off."""
        if not self.static_tier or not chunks:
            return None
        embedder = load_static_embedder(self._index.settings)
        before = embedder.computed
        rows = embedder.embed_keyed(
            [c.content_hash() for c in chunks], [c.embed_text() for c in chunks]
        )
        report.static_computed += embedder.computed - before
        return rows

    # ---- MiniLM tier ---------------------------------------------------------------------------
    def prioritize(self, rels: Iterable[str]) -> None:
        """Files the user is looking at: their chunks are embedded before the backlog."""
        self._priority.update(rels)

    def fill_backlog(self, emit: ProgressFn, token: CancelToken) -> IndexReport:
        """Embed whatever has no vector yet, checkpointing at the end even when cancelled.
        A backlog done drops the model's chunk session (it reloads from its copy in about a
        second for the next change): a server at rest does not keep its ~50 MB, and the
        query path built next does not load on top of it (issue 29)."""
        report = IndexReport()
        with self._backlog_lock:
            try:
                self.embed_pending(report, emit, token)
            except Cancelled:
                report.cancelled = True
            finally:
                self._index.checkpoint()
            if not report.cancelled and self.embedder_loaded:
                self.embedder.release_model()
        return report

    def _size_model_tier(self) -> None:
        """An index opened before its embedding server ever answered has a model tier of no
        size: once the server answers, the tier takes its size here, so a long-lived process
        (an editor's or an agent's server) fills it without a restart."""
        storage = self._storage
        if storage.tier_model("minilm")[1] == 0:
            dim = learned_dim(self._index.settings)
            if dim and storage.size_model_tier(dim):
                log.info("the model tier now has its size (%d) and fills in", dim)

    def embed_pending(self, report: IndexReport, emit: ProgressFn, token: CancelToken) -> None:
        """The MiniLM backlog in order, cache hits at once, checkpointing now and then."""
        if not self.minilm_tier:
            return
        pending = self._pending_in_order()
        total = self._storage.chunk_count()
        embedded = total - len(pending)
        if not pending:
            return
        if not self.embedder_loaded:  # the model loads first (seconds; a download the first time)
            emit(Progress("embed", chunks_embedded=embedded, chunks_total=total, message=LOADING))
            self._size_model_tier()
        embedder = self.embedder
        self._fill_from_cache(pending, embedder)
        storage = self._storage
        pending = [i for i in pending if not storage.has_vector("minilm", i)]
        embedded = total - len(pending)
        emit(Progress("embed", chunks_embedded=embedded, chunks_total=total))
        last_save = time.monotonic()
        for start in range(0, len(pending), EMBED_STEP):
            token.check()
            step = [i for i in pending[start : start + EMBED_STEP] if storage.chunk(i)]
            embedded += self.embed_ids(step, embedder, report)
            emit(Progress("embed", chunks_embedded=embedded, chunks_total=total))
            if time.monotonic() - last_save > self._index.settings.index.checkpoint_seconds:
                self._index.checkpoint()
                last_save = time.monotonic()

    def model_pending(self) -> list[int]:
        """The chunks the backlog embeds: every one without a vector, or for a folder whose model
        tier is filled on demand (`embedding.on_demand.full_pass`) only those of the files the
        user opened or changed (a search embeds the rest it needs)."""
        storage = self._storage
        if not self.minilm_tier:
            return []
        if on_demand.full_pass(storage.chunk_count(), self._index.settings):
            return storage.pending_ids("minilm")
        records = (storage.file(path) for path in sorted(self._priority))
        ids = (i for record in records if record is not None for i in record.chunk_ids)
        return [i for i in ids if not storage.has_vector("minilm", i)]

    def _pending_in_order(self) -> list[int]:
        """Chunks without a vector: prioritized files, then code (short first), then history."""
        storage = self._storage
        pending = self.model_pending()

        def rank(chunk_id: int) -> tuple[int, int]:
            chunk = storage.chunk(chunk_id)
            if chunk is None:
                return (3, 0)
            if chunk.path in self._priority and chunk.kind not in HISTORY_KINDS:
                return (0, 0)
            return (2 if chunk.kind in HISTORY_KINDS else 1, len(chunk.text))

        return sorted(pending, key=rank)

    def _fill_from_cache(self, ids: list[int], embedder: CachedEmbedder) -> None:
        """Warm runs: everything the cache knows lands at once, without touching the model."""
        chunks = [c for c in map(self._storage.chunk, ids) if c is not None]
        keys = [c.content_hash() for c in chunks]
        cached = embedder.cache.get_many(keys)
        hits = [(c.id, cached[k]) for c, k in zip(chunks, keys, strict=True) if k in cached]
        if hits:
            rows = np.stack([v for _, v in hits])
            self._storage.add_vectors("minilm", [i for i, _ in hits], rows)
            embedder.reused += len(hits)

    def embed_ids(self, ids: list[int], embedder: CachedEmbedder, report: IndexReport) -> int:
        """MiniLM vectors of these chunks (those still there); how many were embedded."""
        found = map(self._storage.chunk, ids)
        chunks = [c for c in found if c is not None]  # an update may have just removed some
        if not chunks:
            return 0
        before = embedder.computed
        rows = embedder.embed_keyed(
            [c.content_hash() for c in chunks], [c.embed_text() for c in chunks]
        )
        self._storage.add_vectors("minilm", [c.id for c in chunks], rows)
        report.vectors_computed += embedder.computed - before
        report.chunks_embedded += len(chunks)
        return len(chunks)

    def without_vector(self, rels: Iterable[str], tier: Tier) -> list[int]:
        """Chunk ids of these files that have no vector in `tier`."""
        storage = self._storage
        records = [r for r in map(storage.file, rels) if r is not None]
        return [i for r in records for i in r.chunk_ids if not storage.has_vector(tier, i)]


class StaticBehind:
    """A pass's chunks get their static vectors in a thread behind it, when no chunking worker
    embedded them (a pass under chunk_pool.POOL_FROM_BYTES, one core). `tokenizers` releases the
    GIL, so non-ASCII texts are tokenized beside the chunking; ASCII texts are tokenized in Python
    (wordpiece_ascii.py) and take turns with it (measured: the same wall time as embedding inline,
    benchmarks/README.md round 16). Batches of BEHIND_STEP; at most two wait, so memory stays
    bounded."""

    def __init__(self, tiers: VectorTiers, report: IndexReport) -> None:
        self._tiers, self._report = tiers, report
        self._waiting: list[Chunk] = []
        self._batches: queue.Queue[list[Chunk] | None] = queue.Queue(maxsize=2)
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def add(self, chunks: list[Chunk]) -> None:
        """Chunks just stored; a full batch goes to the thread (started on first need)."""
        self._raise_error()
        if not self._tiers.static_tier:
            return
        self._waiting += chunks
        if len(self._waiting) >= BEHIND_STEP:
            self._send(self._waiting)
            self._waiting = []

    def close(self) -> None:
        """Embed what is left and wait for the thread; its error, if any, is raised here."""
        if self._waiting and self._error is None:
            self._send(self._waiting)
            self._waiting = []
        if self._thread is not None:
            self._batches.put(None)
            self._thread.join()
        self._raise_error()

    def _send(self, batch: list[Chunk]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="codeask-static-behind", daemon=True
            )
            self._thread.start()
        self._batches.put(batch)

    def _run(self) -> None:
        try:
            with self._tiers.static_bulk():
                while (batch := self._batches.get()) is not None:
                    self._tiers.embed_static_chunks(batch, self._report)
        except BaseException as exc:  # handed to the pass, raised by add() or close()
            self._error = exc
            while self._batches.get() is not None:  # drain until told to stop
                pass

    def _raise_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error
