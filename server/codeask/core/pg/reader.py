"""Searching published revisions (core/pg/publish.py writes them): dense, lexical and file-level
top-k over a LIST of revisions, one SQL query each, so one search spans several repositories.

Filters (core/pg/filters.py): scope (code/history), language and kind are SQL conditions. A
path glob keeps the local index's gitignore semantics (pathspec, as retrieve.Filters uses): SQL
narrows conservatively with `path ILIKE '%<longest literal run of the glob>%'` (a superset of
the matches), then Python checks each row with the same pathspec; the query over-fetches and
asks again with a larger limit when the exact check threw away too many rows. Author and date
filters (history) are checked in Python the same way, on the row's `meta`.

Dense queries use the dimension's partial HNSW index (publish.ensure_vector_index) with
pgvector 0.8's `hnsw.iterative_scan = relaxed_order`: the scan goes on until k rows pass the
revision and filter conditions (up to `hnsw.max_scan_tuples`) instead of returning the
ef_search nearest and filtering those. relaxed_order may return rows slightly out of order, so
the outer query sorts them again by distance. Lexical ranks are `ts_rank` over the weighted
tsvector (symbol A = 1.0, path B = 0.5, body C = 0.25: the local FTS weights 4:2:1) with
normalization 1 (÷ 1 + log length, as BM25 favours short chunks), for an OR of the query's
informative terms (`lexical.query_terms`). No filters means the local default, `Filters()`:
code only, history left out.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from codeask.core.lexical import MAX_QUERY_TERMS, query_terms
from codeask.core.pg.cache import HalfVec, PgModelMismatch, register_halfvec
from codeask.core.pg.connect import PgError, connect
from codeask.core.pg.filters import exact_in_sql, row_check, sql_conditions
from codeask.core.pg.revision import RevisionInfo, meta_of
from codeask.core.pg.schema import CHUNK_TABLE, REPOSITORY_TABLE, REVISION_TABLE
from codeask.core.records import HISTORY_KINDS, Chunk

if TYPE_CHECKING:
    import psycopg

    from codeask.core.retrieve import Filters

#: ts_rank's weights {D, C, B, A}: body C, path B, symbol A (local FTS: 1, 2, 4).
RANK_WEIGHTS = "{0, 0.25, 0.5, 1.0}"
#: Rows asked for per wanted hit when Python still filters (path glob, author, dates).
OVERFETCH = 4
#: ... doubled at most this many times when too few rows passed.
MAX_REFETCH = 3

#: (revision id, chunk id, path, score), best first.
Hit = tuple[int, int, str, float]


class PgIndexReader:
    """Top-k over the published revisions `revision_ids` (all of one embedding model)."""

    def __init__(
        self, conn_or_dsn: psycopg.Connection | str, revision_ids: Sequence[int] = ()
    ) -> None:
        self._own = isinstance(conn_or_dsn, str)
        self.conn = connect(conn_or_dsn) if isinstance(conn_or_dsn, str) else conn_or_dsn
        self._lock = threading.Lock()
        register_halfvec(self.conn)
        self.revision_ids: list[int] = []
        self.dim = 0
        self.model = ""
        if revision_ids:
            self.use(revision_ids)

    def use(self, revision_ids: Sequence[int]) -> None:
        """Search these revisions from now on; they must be published, complete and share one
        embedding model (one query vector must fit them all)."""
        ids = list(dict.fromkeys(int(i) for i in revision_ids))
        rows = self.conn.execute(
            f"SELECT id, model, dim FROM {REVISION_TABLE} WHERE id = ANY(%s) AND complete",
            (ids,),
        ).fetchall()
        missing = sorted(set(ids) - {int(r[0]) for r in rows})
        if missing:
            raise PgError(f"revisions {missing} are not published (or were removed by gc)")
        models = sorted({(str(r[1]), int(r[2])) for r in rows})
        if len(models) > 1:
            raise PgModelMismatch(
                "the revisions to search were published with different embedding models "
                f"({', '.join(f'{m} ({d})' for m, d in models)}): search one model at a time"
            )
        self.revision_ids = ids
        self.model, self.dim = models[0] if models else ("", 0)

    def _top(
        self,
        sql: str,
        args: Callable[[int], Sequence[Any]],
        k: int,
        filters: Filters | None,
        setup: Sequence[str] = (),
    ) -> list[Hit]:
        """Run a top-k query (its last parameter is the limit), over-fetching and asking again
        with a larger limit while the Python-side check drops too many rows."""
        if k <= 0 or not self.revision_ids:
            return []
        check = row_check(filters)
        exact = exact_in_sql(filters)
        limit = k if exact else k * OVERFETCH
        for _attempt in range(MAX_REFETCH + 1):
            with self._lock, self.conn.transaction():
                for statement in setup:
                    self.conn.execute(statement)
                rows = self.conn.cursor(binary=True).execute(sql, args(limit)).fetchall()
            hits = [
                (int(r[0]), int(r[1]), str(r[2]), float(r[6]))
                for r in rows
                if check(str(r[2]), str(r[3]), str(r[4]), meta_of(r[5]))
            ]
            if len(hits) >= k or len(rows) < limit or exact:
                return hits[:k]
            limit *= 2
        return hits[:k]

    # ---- queries ---------------------------------------------------------------------------
    def dense(self, vector: np.ndarray, k: int, filters: Filters | None = None) -> list[Hit]:
        """(revision id, chunk id, path, cosine similarity) best first, one HNSW query."""
        if not self.dim:
            return []
        if np.shape(vector) != (self.dim,):
            raise ValueError(
                f"query vector has shape {np.shape(vector)}; the revisions searched hold "
                f"{self.dim}-dimensional vectors of {self.model}"
            )
        dim = int(self.dim)  # a literal: the partial index's predicate must be provable
        where, extra = sql_conditions(filters)
        conditions = " AND ".join(["revision_id = ANY(%s)", f"dim = {dim}", *where])
        sql = f"""WITH nearest AS MATERIALIZED (
                SELECT revision_id, chunk_id, path, language, kind, meta,
                       vec::halfvec({dim}) <=> %s::halfvec({dim}) AS distance
                FROM {CHUNK_TABLE}
                WHERE {conditions} AND vec IS NOT NULL
                ORDER BY distance LIMIT %s)
            SELECT revision_id, chunk_id, path, language, kind, meta, 1 - distance
            FROM nearest ORDER BY distance, revision_id, chunk_id"""
        query = HalfVec(np.asarray(vector, dtype=np.float32))

        def args(limit: int) -> list[Any]:
            return [query, self.revision_ids, *extra, limit]

        setup = (
            "SET LOCAL hnsw.iterative_scan = relaxed_order",
            f"SET LOCAL hnsw.ef_search = {max(40, min(1000, k * OVERFETCH))}",
        )
        return self._top(sql, args, k, filters, setup)

    @staticmethod
    def _tsquery(query_text: str) -> str:
        terms = query_terms(query_text)[:MAX_QUERY_TERMS]
        # code_tokens yields [a-z0-9]+ only, so quoting cannot be broken out of.
        return " | ".join(f"'{t}'" for t in terms)

    def lexical(self, query_text: str, k: int, filters: Filters | None = None) -> list[Hit]:
        """(revision id, chunk id, path, ts_rank) best first for an OR of the query's terms."""
        tsquery = self._tsquery(query_text)
        if not tsquery:
            return []
        where, extra = sql_conditions(filters)
        conditions = " AND ".join(["revision_id = ANY(%s)", "lex @@ q", *where])
        sql = f"""SELECT revision_id, chunk_id, path, language, kind, meta,
                       ts_rank('{RANK_WEIGHTS}'::float4[], lex, q, 1) AS score
                FROM {CHUNK_TABLE}, to_tsquery('simple', %s) AS q
                WHERE {conditions}
                ORDER BY score DESC, revision_id, chunk_id LIMIT %s"""

        def args(limit: int) -> list[Any]:
            return [tsquery, self.revision_ids, *extra, limit]

        return self._top(sql, args, k, filters)

    def lexical_files(self, query_text: str, k: int) -> list[tuple[int, str, float]]:
        """(revision id, path, score) best first: the sum of a file's code chunks' ranks (a
        file whose chunks share the query's terms between them ranks high, as the local
        whole-file table does)."""
        tsquery = self._tsquery(query_text)
        if not tsquery or k <= 0 or not self.revision_ids:
            return []
        sql = f"""SELECT revision_id, path,
                       sum(ts_rank('{RANK_WEIGHTS}'::float4[], lex, q, 1)) AS score
                FROM {CHUNK_TABLE}, to_tsquery('simple', %s) AS q
                WHERE revision_id = ANY(%s) AND lex @@ q AND kind <> ALL(%s)
                GROUP BY revision_id, path
                ORDER BY score DESC, revision_id, path LIMIT %s"""
        with self._lock:
            rows = self.conn.execute(
                sql, (tsquery, self.revision_ids, list(HISTORY_KINDS), k)
            ).fetchall()
        return [(int(r[0]), str(r[1]), float(r[2])) for r in rows]

    def chunks(self, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], Chunk]:
        """(revision id, chunk id) → the chunk as it was indexed (one query)."""
        wanted = list(dict.fromkeys((int(r), int(c)) for r, c in keys))
        if not wanted:
            return {}
        sql = f"""SELECT revision_id, chunk_id, path, language, kind, start_line, end_line, text,
                       symbol, parent, docstring, calls, part, meta
                FROM {CHUNK_TABLE}
                WHERE (revision_id, chunk_id) IN (
                    SELECT * FROM unnest(%s::bigint[], %s::bigint[]))"""
        with self._lock:
            rows = self.conn.execute(
                sql, ([r for r, _ in wanted], [c for _, c in wanted])
            ).fetchall()
        return {
            (int(r[0]), int(r[1])): Chunk(
                path=r[2],
                language=r[3],
                kind=r[4],
                start_line=r[5],
                end_line=r[6],
                text=r[7],
                symbol=r[8],
                parent=r[9],
                docstring=r[10],
                calls=list(r[11]),
                part=r[12],
                id=int(r[1]),
                meta=meta_of(r[13]),
            )
            for r in rows
        }

    def nearest_revision(
        self, repo_name: str, candidate_shas: Sequence[str], model: str | None = None
    ) -> RevisionInfo | None:
        """See `nearest_revision`."""
        with self._lock:
            return nearest_revision(self.conn, repo_name, candidate_shas, model)

    def close(self) -> None:
        """Close the connection if this reader opened it."""
        if self._own:
            self.conn.close()


def nearest_revision(
    conn: psycopg.Connection,
    repo_name: str,
    candidate_shas: Sequence[str],
    model: str | None = None,
) -> RevisionInfo | None:
    """The complete published revision of `repo_name` for the FIRST of `candidate_shas` that has
    one (the caller passes HEAD, then its ancestors nearest first); None when none is. With
    several models published for that sha, the newest publish wins unless `model` is given."""
    shas = [s for s in candidate_shas if s]
    if not shas:
        return None
    row = conn.execute(
        f"""SELECT r.id, p.name, r.sha, r.model, r.dim, r.chunk_count, r.file_count,
                   extract(epoch FROM r.published_at)::float8
            FROM {REVISION_TABLE} r JOIN {REPOSITORY_TABLE} p ON p.id = r.repository_id
            WHERE p.name = %s AND r.sha = ANY(%s) AND r.complete
              AND (%s::text IS NULL OR r.model = %s)
            ORDER BY array_position(%s::text[], r.sha), r.published_at DESC, r.id DESC
            LIMIT 1""",
        (repo_name, shas, model, model, shas),
    ).fetchone()
    if row is None:
        return None
    return RevisionInfo(
        int(row[0]), row[1], row[2], row[3], int(row[4]), int(row[5]), int(row[6]), float(row[7])
    )
