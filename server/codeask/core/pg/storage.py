"""`PublishedReader`: one published revision (core/pg/publish.py) as a read-only `IndexReader`.

Retrieval (`retrieve.Searchable.storage`), ask and the LSP features read an index only through
`core.storage.IndexReader`; this class answers every one of its methods from ONE complete
published revision (repository, commit sha, embedding model) in the team database, so a folder
can be searched without indexing it locally. There is no writer side: a revision is immutable.

Chunk ids: the ids this reader hands out (`Chunk.id`, `dense_top_k`, `lexical_top_k`,
`symbol_ids`, `FileRecord.chunk_ids`) are the published rows' `chunk_id`, i.e. the local ids
the publisher's index gave them. They are unique within a revision (its primary key is
(revision_id, chunk_id)), which is all `IndexReader` promises; they mean nothing across
revisions and must only be passed back to the reader that returned them.

What is loaded once per instance (the revision cannot change, so nothing is ever invalidated):
the revision row, the file list and a small index of every chunk (id, path, kind, symbol,
whether it has a vector, a history chunk's commit). From it come `paths`, `file`,
`FileRecord.chunk_ids` (the file's chunk ids in id order: the indexer numbers a file's chunks
in file order), `history_commits`, the counts, and the exact-name tables (`symbol_ids`,
`paths_named`), built by `core/symbol_table.SymbolTable` from the `symbol` column, so their
semantics are the local storage's. Chunk rows (text, calls, meta ...) are fetched on demand
and kept in a bounded LRU (`cache_size`, 4,096 by default); the top-k queries return the full
rows of their hits and prime it, so retrieval's many `chunk(id)` calls on its candidates cost no
round trip.

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
  pgvector's HNSW (iterative scan) where local uses hnswlib: both approximate; on small
  revisions both are exact and agree otherwise.
- `lexical_top_k` / `lexical_files` rank with PostgreSQL's `ts_rank` over the same code-aware
  tokens and column weights (symbol 1 : path 0.5 : body 0.25, like the local FTS's 4:2:1, with
  length normalization 1), not BM25: ts_rank has no inverse document frequency, so a common
  query term counts as much as a rare one, and the local index's pruning of terms found in more
  than 20% of a large index's chunks is not done. `lexical_files` is the sum of the file's code
  chunks' ranks (core/pg/reader.py), not a whole-file BM25 row. Scores are therefore on another
  scale and the order can differ, while the chunks (and files) matched are the same set. In
  tests/pg/test_pg_published_reader.py, a lexical-only `retrieve.search` gives the same top-5
  files for four questions, in the same order for three; the fourth swaps its first two
  (ts_rank favours the file repeating a common term). Hybrid and dense searches agree exactly.
  Does any raw lexical score reach a comparison across sources? Read in retrieve.py: no.
  `_collect` keeps only the ids of `lexical_top_k` (both the question and its lead) and of the
  dense lists, fused by reciprocal rank (`_rrf`); the one place a raw score is used is
  `lexical_files`, whose scores are multiplied by each path's demotion (tests, prose,
  vendored: x0.5) and re-sorted, then only the resulting RANK feeds `_file_prior`. So the score
  scale only matters relative to other files of the same list: a demoted file overtakes
  another when its score is more than twice as high, which depends on the score's shape
  (ts_rank sum vs BM25), not on any other source.
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
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from codeask.core.lexical import MAX_QUERY_TERMS, query_terms
from codeask.core.pg.cache import HalfVec, _register_halfvec
from codeask.core.pg.connect import (
    PgError,
    PgUnavailable,
    Session,
    connect,
    redact,
)
from codeask.core.pg.reader import RANK_WEIGHTS, _meta, nearest_revision
from codeask.core.pg.schema import CHUNK_TABLE, FILE_TABLE, REPOSITORY_TABLE, REVISION_TABLE
from codeask.core.records import HISTORY_KINDS, Chunk, FileRecord
from codeask.core.static_embed import STATIC_MODEL_NAME
from codeask.core.storage import IndexCounts, IndexReader, Tier
from codeask.core.symbol_table import SymbolTable

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

#: Milliseconds any one query may take before the server cancels it.
STATEMENT_TIMEOUT_MS = 5000
#: Chunk rows kept in memory per reader (retrieval touches a few hundred per query).
CACHE_SIZE = 4096
#: TCP keepalives: a silent network drop is noticed within ~10 s, not the OS's two hours.
_KEEPALIVE: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 2,
}
#: The chunk columns a `Chunk` is built from (`_chunk_of` reads them in this order).
_CHUNK_COLUMNS = (
    "chunk_id, path, language, kind, start_line, end_line, text, symbol, parent, docstring, "
    "calls, part, meta"
)


@dataclass(frozen=True)
class RevisionInfo:
    """The published revision a reader serves."""

    id: int
    repository: str
    sha: str
    model: str
    dim: int
    chunk_count: int
    file_count: int
    published_at: float
    """Epoch seconds."""


def _chunk_of(row: Sequence[Any]) -> Chunk:
    return Chunk(
        path=row[1],
        language=row[2],
        kind=row[3],
        start_line=int(row[4]),
        end_line=int(row[5]),
        text=row[6],
        symbol=row[7],
        parent=row[8],
        docstring=row[9],
        calls=list(row[10]),
        part=int(row[11]),
        id=int(row[0]),
        meta=_meta(row[12]),
    )


def _tsquery(query: str) -> str:
    terms = query_terms(query)[:MAX_QUERY_TERMS]
    # code_tokens yields [a-z0-9]+ only, so quoting cannot be broken out of.
    return " | ".join(f"'{t}'" for t in terms)


class PublishedReader:
    """One complete published revision behind `core.storage.IndexReader` (see the module
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
    ) -> None:
        self._timeout_ms = max(1, int(statement_timeout_ms))
        self._lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._cache: OrderedDict[int, Chunk] = OrderedDict()
        self._cache_size = max(1, int(cache_size))
        self._disk_bytes: int | None = None
        if isinstance(conn_or_dsn, str):
            self._session = Session(conn_or_dsn, "the team index", self._prepare, **_KEEPALIVE)
        else:  # the caller's connection: prepared now, never reopened here
            self._session = Session("", "the team index", self._prepare, conn=conn_or_dsn)
            self._prepare(conn_or_dsn)
        self.location = self._session.location
        self._minilm_model = model
        self.load_seconds = 0.0
        self.revision = self._load(int(revision_id))
        self.tier: Tier = tier or (
            "static" if self.revision.model == STATIC_MODEL_NAME else "minilm"
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
        import psycopg

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

        dsn = conn_or_dsn if isinstance(conn_or_dsn, str) else ""
        if isinstance(conn_or_dsn, str):
            with connect(conn_or_dsn, **_KEEPALIVE) as conn:
                revision_id = find(conn)
        else:
            revision_id = find(conn_or_dsn)
        return cls(conn_or_dsn, revision_id, **options)

    # ---- the connection ------------------------------------------------------------------------
    def _prepare(self, conn: psycopg.Connection) -> None:
        import psycopg

        try:
            conn.execute(f"SET statement_timeout = {self._timeout_ms}")
            _register_halfvec(conn)
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise self._session.lost(exc, "opening the revision") from None

    def _rows(
        self, sql: str, args: Sequence[Any], doing: str, *, setup: Sequence[str] = ()
    ) -> list[tuple[Any, ...]]:
        """Run one query (binary results: halfvec comes back as numpy), errors translated."""
        import psycopg

        with self._lock:
            conn = self._session.connection()
            try:
                if setup:
                    with conn.transaction():
                        for statement in setup:
                            conn.execute(statement)
                        return conn.cursor(binary=True).execute(sql, args).fetchall()
                return conn.cursor(binary=True).execute(sql, args).fetchall()
            except psycopg.errors.QueryCanceled:
                raise PgUnavailable(
                    f"the team index {self.location} did not answer within "
                    f"{self._timeout_ms / 1000:g} s while {doing} (statement_timeout)"
                ) from None
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                raise self._session.lost(exc, doing) from None
            except psycopg.Error as exc:
                raise PgError(
                    f"the team index {self.location} failed while {doing}: "
                    f"{redact(str(exc), self._session.dsn or None)}"
                ) from None

    def close(self) -> None:
        """Close the connection if this reader opened it."""
        with self._lock:
            self._session.drop()

    def __enter__(self) -> PublishedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the load, once --------------------------------------------------------------------
    def _load(self, revision_id: int) -> RevisionInfo:
        import time

        started = time.perf_counter()
        row = self._rows(
            f"""SELECT r.id, p.name, r.sha, r.model, r.dim, r.chunk_count, r.file_count,
                       r.complete, extract(epoch FROM r.published_at)::float8
                FROM {REVISION_TABLE} r JOIN {REPOSITORY_TABLE} p ON p.id = r.repository_id
                WHERE r.id = %s""",
            (revision_id,),
            "reading the revision",
        )
        if not row or not row[0][7]:
            raise PgError(
                f"revision {revision_id} is not published in the team index {self.location} "
                "(or was removed by gc)"
            )
        r = row[0]
        info = RevisionInfo(
            int(r[0]), r[1], r[2], r[3], int(r[4]), int(r[5]), int(r[6]), float(r[8])
        )
        files = self._rows(
            f"SELECT path, sha256, language FROM {FILE_TABLE} WHERE revision_id = %s",
            (revision_id,),
            "reading the file list",
        )
        index = self._rows(
            f"""SELECT chunk_id, path, kind, symbol, vec IS NOT NULL, meta ->> 'sha'
                FROM {CHUNK_TABLE} WHERE revision_id = %s ORDER BY chunk_id""",
            (revision_id,),
            "reading the chunk index",
        )
        records = {
            path: FileRecord(path=path, size=0, mtime_ns=0, sha256=sha256, language=language)
            for path, sha256, language in files
        }
        self._ids: set[int] = set()
        self._embedded: set[int] = set()
        history: dict[str, list[int]] = {}
        light: list[Chunk] = []
        for chunk_id, path, kind, symbol, has_vec, sha in index:
            cid = int(chunk_id)
            self._ids.add(cid)
            if has_vec:
                self._embedded.add(cid)
            if kind in HISTORY_KINDS:
                history.setdefault(sha or "", []).append(cid)
                continue
            record = records.get(path)
            if record is not None:
                record.chunk_ids.append(cid)
            if symbol:
                light.append(
                    Chunk(
                        path=path,
                        language="",
                        kind=kind,
                        start_line=0,
                        end_line=0,
                        text="",
                        symbol=symbol,
                        id=cid,
                    )
                )
        history.pop("", None)
        big = float("inf")
        self._paths = sorted(
            records, key=lambda p: (records[p].chunk_ids[0] if records[p].chunk_ids else big, p)
        )
        self._records = records
        self._history = list(history)  # dict order: by first chunk id
        self._symbols = SymbolTable()
        self._symbols.rebuild(info.id, light, self._paths)
        self.load_seconds = time.perf_counter() - started
        return info

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
        embedded = len(self._embedded)
        return IndexCounts(
            files=len(self._records),
            chunks=len(self._ids),
            embedded=embedded if self.tier == "minilm" else 0,
            static_embedded=embedded if self.tier == "static" else 0,
            history_commits=len(self._history),
        )

    def chunk_count(self) -> int:
        return len(self._ids)

    def vector_count(self, tier: Tier) -> int:
        return len(self._embedded) if tier == self.tier else 0

    # ---- files and chunks ------------------------------------------------------------------
    def file(self, path: str) -> FileRecord | None:
        return self._records.get(path)

    def paths(self) -> list[str]:
        return list(self._paths)

    def _cached(self, ids: Sequence[int]) -> tuple[dict[int, Chunk], list[int]]:
        found: dict[int, Chunk] = {}
        missing: list[int] = []
        with self._cache_lock:
            for chunk_id in ids:
                chunk = self._cache.get(chunk_id)
                if chunk is None:
                    missing.append(chunk_id)
                else:
                    self._cache.move_to_end(chunk_id)
                    found[chunk_id] = chunk
        return found, missing

    def _remember(self, chunks: Sequence[Chunk]) -> None:
        with self._cache_lock:
            cache = self._cache
            for chunk in chunks:
                cache[chunk.id] = chunk
                cache.move_to_end(chunk.id)
            while len(cache) > self._cache_size:
                cache.popitem(last=False)

    def _fetch(self, ids: Sequence[int]) -> dict[int, Chunk]:
        """id → chunk for the known ones among `ids`: the cache, then one query for the rest."""
        wanted = [i for i in dict.fromkeys(int(i) for i in ids) if i in self._ids]
        found, missing = self._cached(wanted)
        if missing:
            rows = self._rows(
                f"SELECT {_CHUNK_COLUMNS} FROM {CHUNK_TABLE} "
                "WHERE revision_id = %s AND chunk_id = ANY(%s)",
                (self.revision.id, missing),
                "reading chunks",
            )
            fetched = [_chunk_of(r) for r in rows]
            self._remember(fetched)
            found.update((c.id, c) for c in fetched)
        return found

    def chunk(self, chunk_id: int) -> Chunk | None:
        return self._fetch([chunk_id]).get(int(chunk_id))

    def chunks_of(self, path: str) -> list[Chunk]:
        record = self._records.get(path)
        if record is None:
            return []
        found = self._fetch(record.chunk_ids)
        return [found[i] for i in record.chunk_ids if i in found]

    def all_chunks(self) -> list[Chunk]:
        """Every chunk, in id order (one query; not cached: the caller keeps the copy)."""
        rows = self._rows(
            f"SELECT {_CHUNK_COLUMNS} FROM {CHUNK_TABLE} WHERE revision_id = %s ORDER BY chunk_id",
            (self.revision.id,),
            "reading every chunk",
        )
        return [_chunk_of(r) for r in rows]

    def history_commits(self) -> list[str]:
        return list(self._history)

    # ---- exact evidence --------------------------------------------------------------------
    def symbol_ids(self, name: str) -> list[int]:
        return list(self._symbols.by_name.get(name, []))

    def paths_named(self, key: str) -> list[str]:
        return list(self._symbols.by_path_key.get(key, []))

    # ---- dense and lexical top-k -----------------------------------------------------------
    def vector(self, tier: Tier, chunk_id: int) -> np.ndarray | None:
        if tier != self.tier or int(chunk_id) not in self._embedded:
            return None
        rows = self._rows(
            f"SELECT vec FROM {CHUNK_TABLE} WHERE revision_id = %s AND chunk_id = %s",
            (self.revision.id, int(chunk_id)),
            "reading a vector",
        )
        return np.asarray(rows[0][0], dtype=np.float32) if rows and rows[0][0] is not None else None

    def dense_top_k(
        self, tier: Tier, vector: np.ndarray, k: int, *, missing_from: Tier | None = None
    ) -> list[tuple[int, float]]:
        """Cosine top-k over the revision's vectors (pgvector HNSW, iterative scan). With
        `missing_from` = the same tier, every chunk is covered: []. The other tier has no
        vectors here, so it excludes nothing."""
        if tier != self.tier or k <= 0 or not self._embedded or missing_from == tier:
            return []
        dim = int(self.revision.dim)  # a literal: the partial index's predicate must be provable
        if np.shape(vector) != (dim,):
            raise ValueError(
                f"query vector has shape {np.shape(vector)}; revision {self.revision.id} holds "
                f"{dim}-dimensional vectors of {self.revision.model}"
            )
        rows = self._rows(
            f"""WITH nearest AS MATERIALIZED (
                    SELECT {_CHUNK_COLUMNS},
                           vec::halfvec({dim}) <=> %s::halfvec({dim}) AS distance
                    FROM {CHUNK_TABLE}
                    WHERE revision_id = %s AND dim = {dim} AND vec IS NOT NULL
                    ORDER BY distance LIMIT %s)
                SELECT {_CHUNK_COLUMNS}, 1 - distance FROM nearest
                ORDER BY distance, chunk_id""",
            (HalfVec(np.asarray(vector, dtype=np.float32)), self.revision.id, int(k)),
            "searching vectors",
            setup=(
                "SET LOCAL hnsw.iterative_scan = relaxed_order",
                f"SET LOCAL hnsw.ef_search = {max(64, min(1000, 2 * int(k)))}",
            ),
        )
        chunks = [_chunk_of(r) for r in rows]
        self._remember(chunks)
        return [(c.id, float(r[13])) for c, r in zip(chunks, rows, strict=True)]

    def lexical_top_k(self, query: str, k: int) -> list[tuple[int, float]]:
        """(chunk id, ts_rank) best first over every chunk, history included (as the local
        lexical table): an OR of the query's informative terms."""
        tsquery = _tsquery(query)
        if not tsquery or k <= 0:
            return []
        rows = self._rows(
            f"""SELECT {_CHUNK_COLUMNS}, ts_rank('{RANK_WEIGHTS}'::float4[], lex, q, 1) AS score
                FROM {CHUNK_TABLE}, to_tsquery('simple', %s) AS q
                WHERE revision_id = %s AND lex @@ q
                ORDER BY score DESC, chunk_id LIMIT %s""",
            (tsquery, self.revision.id, int(k)),
            "searching words",
        )
        chunks = [_chunk_of(r) for r in rows]
        self._remember(chunks)
        return [(c.id, float(r[13])) for c, r in zip(chunks, rows, strict=True)]

    def lexical_files(self, query: str, k: int) -> list[tuple[str, float]]:
        """(path, score) best first: the sum of the ts_rank of a file's code chunks."""
        tsquery = _tsquery(query)
        if not tsquery or k <= 0:
            return []
        rows = self._rows(
            f"""SELECT path, sum(ts_rank('{RANK_WEIGHTS}'::float4[], lex, q, 1)) AS score
                FROM {CHUNK_TABLE}, to_tsquery('simple', %s) AS q
                WHERE revision_id = %s AND lex @@ q AND kind <> ALL(%s)
                GROUP BY path ORDER BY score DESC, path LIMIT %s""",
            (tsquery, self.revision.id, list(HISTORY_KINDS), int(k)),
            "searching files",
        )
        return [(str(r[0]), float(r[1])) for r in rows]

    # ---- the revision in the database ---------------------------------------------------------
    def saved_at(self) -> float:
        """When the revision was published (epoch seconds)."""
        return self.revision.published_at

    def disk_bytes(self) -> int:
        """The revision's chunk rows as stored (0 when the database cannot say right now)."""
        if self._disk_bytes is None:
            try:
                rows = self._rows(
                    f"SELECT coalesce(sum(pg_column_size(c.*)), 0)::int8 FROM {CHUNK_TABLE} c "
                    "WHERE revision_id = %s",
                    (self.revision.id,),
                    "measuring the revision",
                )
            except PgError as exc:
                log.info("%s", exc)
                return 0
            self._disk_bytes = int(rows[0][0]) if rows else 0
        return self._disk_bytes


if TYPE_CHECKING:

    def _is_an_index_reader(reader: PublishedReader) -> IndexReader:
        """mypy checks here that PublishedReader has every method of IndexReader."""
        return reader
