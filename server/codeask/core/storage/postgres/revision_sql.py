"""The queries a `PublishedReader` sends (besides its load, core/storage/postgres/revision.py): rows
by id, one vector, the stored size, and the top-k queries: nearest vectors, and `ts_rank` word
search (the lexical answer until the revision's BM25 tables are in memory:
core/storage/lexical/frozen.py).

Nearest: the dimension's partial HNSW index with pgvector's iterative scan (relaxed order,
sorted again outside). Words: an OR of the query's informative terms over the weighted
tsvector (symbol 1 : path 0.5 : body 0.25), length normalization 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from codeask.core.records import HISTORY_KINDS, Chunk
from codeask.core.storage.lexical.index import MAX_QUERY_TERMS, query_terms
from codeask.core.storage.postgres.cache import HalfVec
from codeask.core.storage.postgres.revision import CHUNK_COLUMNS, RevisionInfo, chunk_of
from codeask.core.storage.postgres.revision_conn import RevisionConnection
from codeask.core.storage.postgres.schema import CHUNK_TABLE

Rows = list[tuple[Any, ...]]

#: ts_rank's weights {D, C, B, A}: body C, path B, symbol A (local FTS: 1, 2, 4).
RANK_WEIGHTS = "{0, 0.25, 0.5, 1.0}"


def tsquery(query: str) -> str:
    """`'a' | 'b' | ...` of the query's terms ('' when it has none)."""
    terms = query_terms(query)[:MAX_QUERY_TERMS]
    # code_tokens yields [a-z0-9]+ only, so quoting cannot be broken out of.
    return " | ".join(f"'{t}'" for t in terms)


def nearest_many(
    db: RevisionConnection, like: RevisionInfo, wanted: dict[int, int], vector: np.ndarray
) -> dict[int, Rows]:
    """For each revision (revision id → k; all of `like`'s model and dimension), rows of
    CHUNK_COLUMNS + cosine similarity, the k nearest first, in ONE query: a LATERAL join runs
    each revision's own HNSW scan (one revision: a folder's own query; several: a multi-root
    workspace's, core/storage/postgres/dense_batch.py)."""
    dim = int(like.dim)  # a literal: the partial index's predicate must be provable
    if np.shape(vector) != (dim,):
        raise ValueError(
            f"query vector has shape {np.shape(vector)}; revisions {sorted(wanted)} hold "
            f"{dim}-dimensional vectors of {like.model}"
        )
    ids, ks = list(wanted), [int(wanted[i]) for i in wanted]
    columns = ", ".join(f"n.{c.strip()}" for c in CHUNK_COLUMNS.split(","))
    rows = db.rows(
        f"""SELECT a.rev, {columns}, 1 - n.distance
            FROM unnest(%s::int8[], %s::int4[]) AS a(rev, k)
            CROSS JOIN LATERAL (
                SELECT * FROM (
                    SELECT {CHUNK_COLUMNS},
                           vec::halfvec({dim}) <=> %s::halfvec({dim}) AS distance
                    FROM {CHUNK_TABLE}
                    WHERE revision_id = a.rev AND dim = {dim} AND vec IS NOT NULL
                    ORDER BY distance LIMIT a.k) AS scan
                ORDER BY distance, chunk_id) AS n
            ORDER BY a.rev, n.distance, n.chunk_id""",
        (ids, ks, HalfVec(np.asarray(vector, dtype=np.float32))),
        "searching vectors",
        setup=(
            "SET LOCAL hnsw.iterative_scan = relaxed_order",
            f"SET LOCAL hnsw.ef_search = {max(64, min(1000, 2 * max(ks, default=0)))}",
        ),
    )
    found: dict[int, Rows] = {i: [] for i in ids}
    for row in rows:
        found[int(row[0])].append(row[1:])
    return found


def ranked_chunks(db: RevisionConnection, revision_id: int, query: str, k: int) -> Rows:
    """Rows of CHUNK_COLUMNS + ts_rank, best first, history chunks included."""
    terms = tsquery(query)
    if not terms or k <= 0:
        return []
    return db.rows(
        f"""SELECT {CHUNK_COLUMNS}, ts_rank('{RANK_WEIGHTS}'::float4[], lex, q, 1)
            FROM {CHUNK_TABLE}, to_tsquery('simple', %s) AS q
            WHERE revision_id = %s AND lex @@ q
            ORDER BY 14 DESC, chunk_id LIMIT %s""",
        (terms, revision_id, int(k)),
        "searching words",
    )


def ranked_files(
    db: RevisionConnection, revision_id: int, query: str, k: int
) -> list[tuple[str, float]]:
    """(path, the sum of its code chunks' ts_rank) best first."""
    terms = tsquery(query)
    if not terms or k <= 0:
        return []
    rows = db.rows(
        f"""SELECT path, sum(ts_rank('{RANK_WEIGHTS}'::float4[], lex, q, 1)) AS score
            FROM {CHUNK_TABLE}, to_tsquery('simple', %s) AS q
            WHERE revision_id = %s AND lex @@ q AND kind <> ALL(%s)
            GROUP BY path ORDER BY score DESC, path LIMIT %s""",
        (terms, revision_id, list(HISTORY_KINDS), int(k)),
        "searching files",
    )
    return [(str(r[0]), float(r[1])) for r in rows]


def chunks(db: RevisionConnection, revision_id: int, ids: list[int] | None) -> list[Chunk]:
    """The chunks with these ids (any order), or every chunk in id order (`ids` None)."""
    where, args = ("", ()) if ids is None else ("AND chunk_id = ANY(%s)", (ids,))
    rows = db.rows(
        f"SELECT {CHUNK_COLUMNS} FROM {CHUNK_TABLE} WHERE revision_id = %s {where}"
        + (" ORDER BY chunk_id" if ids is None else ""),
        (revision_id, *args),
        "reading every chunk" if ids is None else "reading chunks",
    )
    return [chunk_of(r) for r in rows]


def vector(db: RevisionConnection, revision_id: int, chunk_id: int) -> np.ndarray | None:
    """One chunk's stored vector (float32), None when it has none."""
    rows = db.rows(
        f"SELECT vec FROM {CHUNK_TABLE} WHERE revision_id = %s AND chunk_id = %s",
        (revision_id, chunk_id),
        "reading a vector",
    )
    return np.asarray(rows[0][0], dtype=np.float32) if rows and rows[0][0] is not None else None


def stored_bytes(db: RevisionConnection, revision_id: int) -> int:
    """The revision's chunk rows as stored (TOAST-compressed)."""
    rows = db.rows(
        f"SELECT coalesce(sum(pg_column_size(c.*)), 0)::int8 FROM {CHUNK_TABLE} c "
        "WHERE revision_id = %s",
        (revision_id,),
        "measuring the revision",
    )
    return int(rows[0][0]) if rows else 0
