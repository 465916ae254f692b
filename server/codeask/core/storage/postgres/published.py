"""`PublishedReader`: one published revision (core/storage/postgres/publish.py) as a read-only
`IndexReader`.

Retrieval (`retrieve.Searchable.storage`), ask and the LSP features read an index only through
`core.storage.protocol.IndexReader`; this class answers every one of its methods from ONE complete
published revision (repository, commit sha, embedding model) in the team database, so a folder
can be searched without indexing it locally. There is no writer side: a revision is immutable.

Chunk ids: the ids this reader hands out (`Chunk.id`, `dense_top_k`, `lexical_top_k`,
`symbol_ids`, `FileRecord.chunk_ids`) are the published rows' `chunk_id`, i.e. the local ids
the publisher's index gave them. They are unique within a revision (its primary key is
(revision_id, chunk_id)), which is all `IndexReader` promises; they mean nothing across
revisions and must only be passed back to the reader that returned them.

What is loaded once per instance (the revision cannot change, so nothing is ever invalidated):
the revision row, the file list and a small index of every chunk
(core/storage/postgres/revision.py). Chunk rows (text, calls, meta ...) are fetched on demand and
kept in a bounded LRU (core/storage/postgres/chunk_cache.py, 4,096 by default); the top-k queries
return the full rows of their hits and prime it, so retrieval's many `chunk(id)` calls on its
candidates cost no round trip; the rest come in one batch (`chunks(ids)`). Dense queries of several
folders' readers on one database go out as ONE query per search (`dense_asks`,
core/storage/postgres/dense_batch.py).

Measured (PostgreSQL 18.6 + pgvector 0.8.6 over TCP on 127.0.0.1, 2 shared cores; a synthetic
revision of 15,000 chunks of 40 words in 600 files, 64-dim vectors): opening + the load above
0.12 s; then `symbol_ids`, `paths_named`, `file`, `counts` are dict lookups (~40 us together).
`lexical_top_k(k=200)` 15-28 ms, `lexical_files(k=100)` 14-57 ms, `dense_top_k(k=200)`
21-72 ms; 200 `chunk()` after a top-k 0.4 ms (cached), 200 uncached 35 ms (one round trip
each); `all_chunks()` 160 ms; `disk_bytes()` 21 ms (29 MB). A whole lexical
`retrieve.search` over the reader: ~80 ms.

Tiers: a revision is published with ONE tier's vectors (its `model`, `dim`). That tier answers
`vector` and `dense_top_k`; the other has no vectors (`vector_count` 0, `dense_top_k` [],
`vector` None). The tier is inferred (the static model's name → "static", else "minilm") unless
given. `model` (tier minilm's model) is the revision's model when it holds the minilm tier, else
the `model` given to the constructor (the configured `embed.model`; "" by default).

Where it differs from `LocalStorage` of the index that was published (and why):
- `file(path).size` and `.mtime_ns` are 0 (not published: a working tree's stat means nothing
  to another machine); skipped files (binary, too large) are not published, so `paths()` and
  `file()` know only indexed files. `paths()` is in the order of each file's first chunk id.
- `history_commits()`: commits are known through their chunks' `meta["sha"]`, so a commit that
  produced no chunk is missing. Order: by their first chunk id (the local insertion order).
- `vector()` returns the halfvec (fp16) the revision stores: within ~1e-3 per component of the
  local float32 vector; `dense_top_k` similarities differ by as much, so two neighbours whose
  similarities are within ~1e-4 may swap (the test saw one pair 1.3e-5 apart). Its ranking is
  pgvector's HNSW (iterative scan), approximate, where local search is exact; on small
  revisions both are exact and agree otherwise.
- `lexical_top_k` / `lexical_files`: after the first few queries (or `warm_up`), a background
  thread reads the revision's rows once and builds its chunk and whole-file BM25 tables in
  memory (core/storage/lexical/frozen.py): the same tokens, rows, weights, term selection and scores
  as the local storage of the published index, so lexical results are the local ones. Until then
  (and if the build fails) PostgreSQL answers with `ts_rank` over the same code-aware tokens
  and column weights (symbol 1 : path 0.5 : body 0.25, like the local FTS's 4:2:1, length
  normalization 1): no idf, so a common term counts as much as a rare one; the chunks matched
  are the same set, the order can differ, and `lexical_files` is then the sum of the file's
  code chunks' ranks. `lexical_scale` says which ("bm25" or "ts_rank"): merging with a local
  BM25 list by raw score is only right for the first (core/storage/team.py).
- `saved_at()` is the revision's `published_at`; `generation` its id; `disk_bytes()` the size of
  its chunk rows (`pg_column_size`, TOAST-compressed; 0 when the database cannot say).

Errors: every query runs under `statement_timeout` (5 s by default; set on the connection, also
on a connection passed in) and the connection uses TCP keepalives, so a dead server or a lost
network is an error within seconds, never a hang. A lost connection (restart,
`pg_terminate_backend`, network) raises `PgUnavailable` ("lost the connection ... while ...",
no password); when this reader opened the connection (a DSN was given) the next call
reconnects. A query cut by the timeout raises `PgUnavailable` too. The revision must exist and
be complete (else `PgError`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from codeask.core.embedding.static import STATIC_MODEL_NAME
from codeask.core.records import Chunk, FileRecord
from codeask.core.storage.lexical.frozen import MEMORY_AFTER_QUERIES, LazyLexical
from codeask.core.storage.postgres import revision_sql
from codeask.core.storage.postgres.chunk_cache import CACHE_SIZE, ChunkCache
from codeask.core.storage.postgres.connect import PgError, PgUnavailable, connect, redact
from codeask.core.storage.postgres.dense_batch import RevisionNearest
from codeask.core.storage.postgres.revision import (
    RevisionIndex,
    RevisionInfo,
    chunk_of,
    load_revision,
    nearest_revision,
)
from codeask.core.storage.postgres.revision_conn import (
    KEEPALIVE,
    STATEMENT_TIMEOUT_MS,
    RevisionConnection,
)
from codeask.core.storage.protocol import DenseAsk, IndexCounts, IndexReader, Tier

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

__all__ = ["CACHE_SIZE", "STATEMENT_TIMEOUT_MS", "PublishedReader", "RevisionInfo"]


def _find_revision(
    conn_or_dsn: psycopg.Connection | str, repo_name: str, sha: str, model: str | None
) -> int:
    """The id of `repo_name`@`sha`'s published revision (see `PublishedReader.open`)."""
    import psycopg

    dsn = conn_or_dsn if isinstance(conn_or_dsn, str) else ""

    def find(conn: psycopg.Connection) -> int:
        try:
            found = nearest_revision(conn, repo_name, [sha], model)
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise PgUnavailable(
                f"lost the connection to the team index while looking up {repo_name}@"
                f"{sha[:12]}: {redact(str(exc), dsn or None)}"
            ) from None
        if found is None:
            raise PgError(
                f"{repo_name}@{sha[:12]}{f' ({model})' if model else ''} is not published "
                "in the team index"
            )
        return found.id

    if isinstance(conn_or_dsn, str):
        with connect(conn_or_dsn, **KEEPALIVE) as conn:
            return find(conn)
    return find(conn_or_dsn)


class PublishedReader:
    """One complete published revision behind `core.storage.protocol.IndexReader` (see the module
    docstring: ids, caching, tiers, what differs from the local storage, errors)."""

    def __init__(
        self,
        conn_or_dsn: psycopg.Connection | str,
        revision_id: int,
        *,
        tier: Tier | None = None,
        model: str = "",
        statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
        cache_size: int = CACHE_SIZE,
        lexical_after: int | None = MEMORY_AFTER_QUERIES,
    ) -> None:
        """`lexical_after`: lexical queries answered by PostgreSQL before the in-memory BM25
        is built in the background (None: only `warm_up` builds it)."""
        import time

        self._db = RevisionConnection(conn_or_dsn, statement_timeout_ms)
        self._rows = self._db.rows
        self._cache = ChunkCache(cache_size)
        self._disk_bytes: int | None = None
        self.location = self._db.location
        self._minilm_model = model
        started = time.perf_counter()
        self.index: RevisionIndex = load_revision(self._rows, int(revision_id), self.location)
        self.load_seconds = time.perf_counter() - started
        self.revision: RevisionInfo = self.index.info
        self.tier: Tier = tier or (
            "static" if self.revision.model == STATIC_MODEL_NAME else "minilm"
        )
        self.nearest = RevisionNearest(
            self._db, self.revision, self.tier, bool(self.index.embedded), self._primed
        )
        self.lexical = LazyLexical(
            self._every_chunk, f"{self.revision.repository}@{self.revision.sha[:12]}", lexical_after
        )

    @classmethod
    def open(
        cls,
        conn_or_dsn: psycopg.Connection | str,
        repo_name: str,
        sha: str,
        model: str | None = None,
        **options: Any,
    ) -> PublishedReader:
        """The reader of `repo_name`@`sha` (with `model`: that model's revision; without, the
        newest published for that sha); `PgError` when it is not published."""
        return cls(conn_or_dsn, _find_revision(conn_or_dsn, repo_name, sha, model), **options)

    @property
    def queries_sent(self) -> int:
        """Queries this reader sent to the database so far."""
        return self._db.sent

    def close(self) -> None:
        """Close the connection if this reader opened it."""
        self._db.close()

    def __enter__(self) -> PublishedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- IndexReader: sizes ----------------------------------------------------------------
    @property
    def generation(self) -> int:
        """The revision id: stable (a revision never changes)."""
        return self.revision.id

    @property
    def model(self) -> str:
        return self.revision.model if self.tier == "minilm" else self._minilm_model

    def tier_model(self, tier: Tier) -> tuple[str, int]:
        if tier == self.tier:
            return self.revision.model, self.revision.dim
        return (self._minilm_model, 0) if tier == "minilm" else ("", 0)

    def counts(self) -> IndexCounts:
        embedded = len(self.index.embedded)
        return IndexCounts(
            files=len(self.index.records),
            chunks=len(self.index.ids),
            embedded=embedded if self.tier == "minilm" else 0,
            static_embedded=embedded if self.tier == "static" else 0,
            history_commits=len(self.index.history),
        )

    def chunk_count(self) -> int:
        return len(self.index.ids)

    def vector_count(self, tier: Tier) -> int:
        return len(self.index.embedded) if tier == self.tier else 0

    # ---- files and chunks ------------------------------------------------------------------
    def file(self, path: str) -> FileRecord | None:
        return self.index.records.get(path)

    def paths(self) -> list[str]:
        return list(self.index.paths)

    def _fetch(self, ids: Sequence[int]) -> dict[int, Chunk]:
        """id → chunk for the known ones among `ids`: the cache, then one query for the rest."""
        wanted = [i for i in dict.fromkeys(int(i) for i in ids) if i in self.index.ids]
        found, missing = self._cache.get(wanted)
        if missing:
            fetched = revision_sql.chunks(self._db, self.revision.id, missing)
            self._cache.put(fetched)
            found.update((c.id, c) for c in fetched)
        return found

    def chunk(self, chunk_id: int) -> Chunk | None:
        return self._fetch([chunk_id]).get(int(chunk_id))

    def chunks(self, chunk_ids: Iterable[int]) -> dict[int, Chunk]:
        return self._fetch(list(chunk_ids))

    def chunks_of(self, path: str) -> list[Chunk]:
        record = self.index.records.get(path)
        if record is None:
            return []
        found = self._fetch(record.chunk_ids)
        return [found[i] for i in record.chunk_ids if i in found]

    def all_chunks(self) -> list[Chunk]:
        """Every chunk, in id order (one query; not cached: the caller keeps the copy)."""
        return revision_sql.chunks(self._db, self.revision.id, None)

    def _every_chunk(self) -> list[Chunk]:
        """Every chunk, kept resident from now on (for the BM25 build:
        core/storage/postgres/chunk_cache.py)."""
        chunks = self.all_chunks()
        self._cache.keep_all(chunks)
        return chunks

    def history_commits(self) -> list[str]:
        return list(self.index.history)

    # ---- exact evidence --------------------------------------------------------------------
    def symbol_ids(self, name: str) -> list[int]:
        return list(self.index.symbols.by_name.get(name, []))

    def paths_named(self, key: str) -> list[str]:
        return self.index.symbols.paths_named(key)

    # ---- dense and lexical top-k -----------------------------------------------------------
    def vector(self, tier: Tier, chunk_id: int) -> np.ndarray | None:
        if tier != self.tier or int(chunk_id) not in self.index.embedded:
            return None
        return revision_sql.vector(self._db, self.revision.id, int(chunk_id))

    def dense_asks(self, tier: Tier, k: int, *, missing_from: Tier | None = None) -> list[DenseAsk]:
        return self.nearest.asks(tier, k, missing_from)

    def dense_top_k(
        self, tier: Tier, vector: np.ndarray, k: int, *, missing_from: Tier | None = None
    ) -> list[tuple[int, float]]:
        """Cosine top-k over the revision's vectors (pgvector HNSW, iterative scan), or the
        rows a batched query of this search already fetched
        (core/storage/postgres/dense_batch.py)."""
        return self.nearest.top_k(tier, vector, k, missing_from)

    def _primed(self, rows: list[tuple[Any, ...]]) -> list[tuple[int, float]]:
        """(chunk id, the score in column 13) of rows of CHUNK_COLUMNS + score; the chunks
        go to the cache (retrieval reads its candidates next)."""
        chunks = [chunk_of(r) for r in rows]
        self._cache.put(chunks)
        return [(c.id, float(r[13])) for c, r in zip(chunks, rows, strict=True)]

    @property
    def lexical_scale(self) -> Literal["bm25", "ts_rank"]:
        """What `lexical_top_k`'s scores are now (see the module docstring)."""
        return "bm25" if self.lexical.built is not None else "ts_rank"

    def warm_up(self) -> None:
        """Build the in-memory lexical tables now (a server, after opening the folder)."""
        self.lexical.warm_up()

    def lexical_top_k(self, query: str, k: int) -> list[tuple[int, float]]:
        """(chunk id, score) best first over every chunk, history included (as the local
        lexical table): BM25 in memory once built, else ts_rank of an OR of the terms."""
        memory = self.lexical.for_query()
        if memory is not None:
            return memory.search(query, k)
        return self._primed(revision_sql.ranked_chunks(self._db, self.revision.id, query, k))

    def lexical_files(self, query: str, k: int) -> list[tuple[str, float]]:
        """(path, score) best first: whole-file BM25 once built, else the sum of the ts_rank
        of a file's code chunks."""
        memory = self.lexical.for_query()
        if memory is not None:
            return memory.search_files(query, k)
        return revision_sql.ranked_files(self._db, self.revision.id, query, k)

    # ---- the revision in the database ---------------------------------------------------------
    def saved_at(self) -> float:
        """When the revision was published (epoch seconds)."""
        return self.revision.published_at

    def disk_bytes(self) -> int:
        """The revision's chunk rows as stored (0 when the database cannot say right now)."""
        if self._disk_bytes is None:
            try:
                self._disk_bytes = revision_sql.stored_bytes(self._db, self.revision.id)
            except PgError as exc:
                log.info("%s: %s", self.location, exc)
                return 0
        return self._disk_bytes


if TYPE_CHECKING:

    def _is_an_index_reader(reader: PublishedReader) -> IndexReader:
        """mypy checks here that PublishedReader has every method of IndexReader."""
        return reader
