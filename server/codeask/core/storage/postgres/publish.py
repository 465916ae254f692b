"""Publishing one commit's index to the team database: CI indexes `main` and publishes it once;
every editor then reads it (core/storage/postgres/published.py) instead of indexing the repository
itself.

`publish` writes one revision (repository, commit sha, embedding model) in ONE transaction:
files and chunks go in with binary COPY (into a temporary staging table, then one
`INSERT ... SELECT` that builds the weighted tsvector), and the revision's `complete` flag is
the transaction's last write, so a reader never sees half a revision. Idempotent: a
transaction-level advisory lock per (repository, sha, model) serialises publishers of the same
revision, and the second finds the first's complete revision and leaves it alone (one copy,
never two; `replace=True` rewrites it). The revisions table's UNIQUE key backs this up.

The model's dimension is checked against the team's `codeask_embedding_model` row (the same
row the embedding cache uses): a publish with another dimension for a known model is refused,
naming the model and the dimension the team database holds. A read-only role (editors) gets
`PgPermissionDenied` saying publishing needs the writer role; no message carries a password.

Why `vec` lives on the chunk row rather than being looked up in codeask_embedding_cache by
content hash: a dense query is "nearest vectors among THESE revisions' chunks". With the vector
on the row, one HNSW index scan filters by `revision_id` on the same row, and pgvector 0.8's
`hnsw.iterative_scan = relaxed_order` keeps scanning until k rows pass the filter. Through the
cache, the HNSW index would be over every model's vectors, including ones no published revision
uses, and the revision filter would sit behind a join on content hash that the index scan cannot
see, so recall would depend on how many neighbours happen to belong to the wanted revisions. The
price is 776 bytes per chunk per kept revision (384-dim halfvec), which `gc` bounds. Measured
(PostgreSQL 18.6 + pgvector 0.8.6, 2 shared cores, random 384-dim unit vectors): a dense top-10
over one of two 5,000-chunk revisions takes 1-4 ms. The cost is on the write side: 5,000 chunks
publish in ~11 s (~440 rows/s) with the HNSW graph updated per row, ~1.1 s without the index
(details in docs/postgres.md). The HNSW index is partial per dimension (one column serves every
model; an HNSW index needs a fixed dimension), made by the first publish of that dimension.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from codeask.core.records import Chunk, FileRecord
from codeask.core.storage.lexical.index import (
    doc_columns,  # the local FTS columns: same tokens, same split
)
from codeask.core.storage.postgres.cache import HalfVec, PgModelMismatch, register_halfvec
from codeask.core.storage.postgres.connect import (
    PgError,
    PgPermissionDenied,
    connect,
    describe,
    dsn_from_env,
    redact,
)
from codeask.core.storage.postgres.naming import RepositoryName, repository_name
from codeask.core.storage.postgres.naming import normalize_remote as normalize_remote  # re-exported
from codeask.core.storage.postgres.schema import (
    CACHE_TABLE,
    CHUNK_TABLE,
    FILE_TABLE,
    MODEL_TABLE,
    REPOSITORY_TABLE,
    REVISION_TABLE,
    migrate,
)

if TYPE_CHECKING:
    import psycopg

    from codeask.core.storage.protocol import IndexReader

log = logging.getLogger(__name__)

#: Key of the advisory lock taken while creating a dimension's HNSW index.
VECTOR_INDEX_LOCK_KEY = 0x636F6465_61736C
#: HNSW build parameters (pgvector's defaults are m=16, ef_construction=64; the local hnswlib
#: index uses M=16, ef_construction=100).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 100
_STAGE = "codeask_chunk_stage"


@dataclass(frozen=True)
class PublishResult:
    """What a publish did: the revision's id and whether this call wrote it."""

    revision_id: int
    repository_id: int
    created: bool
    """False when the same (repository, sha, model) was already published (nothing written)."""
    chunks: int
    files: int
    seconds: float
    #: The name published under (publish_folder says where it came from in `name`).
    repository: str = ""
    name: RepositoryName | None = None


def vector_index_name(dim: int) -> str:
    """The partial HNSW index of one dimension (reader.py's queries must match its predicate)."""
    return f"{CHUNK_TABLE}_vec_{int(dim)}"


def ensure_vector_index(conn: psycopg.Connection, dim: int) -> None:
    """Create the HNSW index for `dim` unless it exists (its own transaction, under a lock, so
    two first publishers do not race; later publishes cost one catalog lookup)."""
    name = vector_index_name(dim)
    if conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone() == (True,):
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (VECTOR_INDEX_LOCK_KEY,))
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON {CHUNK_TABLE} "
            f"USING hnsw ((vec::halfvec({int(dim)})) halfvec_cosine_ops) "
            f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
            f"WHERE dim = {int(dim)}"
        )


def _check_model(conn: psycopg.Connection, model: str, dim: int, where: str) -> None:
    """Register the model on first use; refuse another dimension for a known one."""
    query = f"SELECT dim FROM {MODEL_TABLE} WHERE model = %s"
    row = conn.execute(query, (model,)).fetchone()
    if row is None:
        conn.execute(
            f"INSERT INTO {MODEL_TABLE} (model, dim) VALUES (%s, %s) "
            "ON CONFLICT DO NOTHING",  # model or (model, dim): two first users at once
            (model, dim),
        )
        row = conn.execute(query, (model,)).fetchone()
    if row is not None and int(row[0]) != dim:
        raise PgModelMismatch(
            f"the team index {where} uses model '{model}' with dimension {row[0]}, but this "
            f"publish has {dim}-dimensional vectors: refusing to mix them. Publish with the "
            f"model the team index uses ('{model}', {row[0]} dimensions), or give this one "
            "another name."
        )


def _clean(text: str) -> str:
    """PostgreSQL text cannot hold NUL characters."""
    return text.replace("\x00", "") if "\x00" in text else text


def _chunk_row(chunk: Chunk, vec: np.ndarray | None) -> tuple[object, ...]:
    body, symbol, path = doc_columns(chunk)
    return (
        chunk.id,
        _clean(chunk.path),
        chunk.language,
        chunk.kind,
        _clean(chunk.symbol),
        _clean(chunk.parent),
        _clean(chunk.docstring),
        [_clean(c) for c in chunk.calls],
        chunk.part,
        _clean(json.dumps(chunk.meta)),
        chunk.start_line,
        chunk.end_line,
        chunk.content_hash(),
        _clean(chunk.text),
        body,
        symbol,
        path,
        None if vec is None else HalfVec(vec),
    )


_STAGE_COLUMNS = (
    ("chunk_id", "int8"),
    ("path", "text"),
    ("language", "text"),
    ("kind", "text"),
    ("symbol", "text"),
    ("parent", "text"),
    ("docstring", "text"),
    ("calls", "text[]"),
    ("part", "int4"),
    ("meta", "text"),
    ("start_line", "int4"),
    ("end_line", "int4"),
    ("content_hash", "text"),
    ("text", "text"),
    ("body_tokens", "text"),
    ("symbol_tokens", "text"),
    ("path_tokens", "text"),
    ("vec", "halfvec"),
)


def publish(
    conn_or_dsn: psycopg.Connection | str,
    repo_name: str,
    sha: str,
    model: str,
    dim: int,
    chunks: Iterable[Chunk],
    vectors_by_chunk_id: Mapping[int, np.ndarray],
    files: Iterable[FileRecord],
    *,
    replace: bool = False,
) -> PublishResult:
    """Publish one revision in one transaction (see the module docstring).

    `chunks` carry their local ids (the reader returns them); a chunk without an entry in
    `vectors_by_chunk_id` is published without a vector (found lexically only). A DSN is
    connected to, migrated and closed here; a connection is used as it is (already migrated).
    """
    import psycopg

    if not repo_name or not sha:
        raise ValueError("publish needs a repository name and a commit sha")
    started = time.monotonic()
    own = isinstance(conn_or_dsn, str)
    dsn = conn_or_dsn if isinstance(conn_or_dsn, str) else ""
    conn = connect(conn_or_dsn) if isinstance(conn_or_dsn, str) else conn_or_dsn
    where = describe(dsn) if dsn else "database"
    chunk_list = list(chunks)
    file_list = list(files)
    _check_shapes(chunk_list, vectors_by_chunk_id, dim)
    try:
        if own:
            migrate(conn)
        register_halfvec(conn)
        _check_model(conn, model, dim, where)
        ensure_vector_index(conn, dim)
        result = _publish(
            conn, repo_name, sha, model, dim, chunk_list, vectors_by_chunk_id, file_list, replace
        )
    except psycopg.errors.InsufficientPrivilege as exc:
        reason = redact(exc.diag.message_primary or str(exc), dsn or None)
        raise PgPermissionDenied(
            f"this role may not publish to the team index {where}: {reason}. Publishing needs "
            "the writer role (the one CI uses); editors' read-only roles search published "
            "revisions only."
        ) from None
    except psycopg.Error as exc:
        raise PgError(
            f"publishing {repo_name}@{sha[:12]} to the team index {where} failed: "
            f"{redact(str(exc), dsn or None)}"
        ) from None
    finally:
        if own:
            conn.close()
    return _timed(result, repo_name, sha, model, time.monotonic() - started)


def _check_shapes(chunks: list[Chunk], vectors: Mapping[int, np.ndarray], dim: int) -> None:
    """Refuse a vector of another shape before anything is written (a revision is one dim)."""
    for chunk in chunks:
        vec = vectors.get(chunk.id)
        if vec is not None and np.shape(vec) != (dim,):
            raise ValueError(
                f"chunk {chunk.id} ({chunk.path}) has a vector of shape {np.shape(vec)}, "
                f"the revision is published with dimension {dim}"
            )


def _timed(
    result: PublishResult, repo_name: str, sha: str, model: str, seconds: float
) -> PublishResult:
    """The transaction's result with the publish's wall time and name (logged when written)."""
    if result.created:
        log.info(
            "published %s@%s (%s): %d chunks, %d files in %.2f s",
            repo_name,
            sha[:12],
            model,
            result.chunks,
            result.files,
            seconds,
        )
    return PublishResult(
        result.revision_id,
        result.repository_id,
        result.created,
        result.chunks,
        result.files,
        seconds,
        repo_name,
    )


def _publish(
    conn: psycopg.Connection,
    repo_name: str,
    sha: str,
    model: str,
    dim: int,
    chunks: list[Chunk],
    vectors: Mapping[int, np.ndarray],
    files: list[FileRecord],
    replace: bool,
) -> PublishResult:
    from psycopg.types import TypeInfo

    halfvec = TypeInfo.fetch(conn, "halfvec")
    assert halfvec is not None  # register_halfvec checked it
    with conn.transaction():
        claimed = _claim_revision(conn, repo_name, sha, model, dim, replace)
        if isinstance(claimed, PublishResult):
            return claimed
        repo_id, rev_id = claimed
        cur = conn.cursor()
        _copy_files(cur, rev_id, files)
        _stage_chunks(cur, halfvec.oid, chunks, vectors)
        # One pass builds the weighted tsvector (symbol A, path B, body C) from the tokens
        # storage/lexical/index.py made, so PostgreSQL's parser never splits an identifier its own
        # way.
        inserted = cur.execute(
            f"""INSERT INTO {CHUNK_TABLE} (revision_id, chunk_id, path, language, kind, symbol,
                    parent, docstring, calls, part, meta, start_line, end_line, content_hash,
                    text, dim, lex, vec)
                SELECT %s, chunk_id, path, language, kind, symbol, parent, docstring, calls,
                    part, meta::jsonb, start_line, end_line, content_hash, text, %s,
                    setweight(to_tsvector('simple', symbol_tokens), 'A')
                    || setweight(to_tsvector('simple', path_tokens), 'B')
                    || setweight(to_tsvector('simple', body_tokens), 'C'),
                    vec
                FROM {_STAGE}""",
            (rev_id, dim),
        ).rowcount
        # The revision's vectors join the team embedding cache too: CI's own local cache may
        # have had every one of them (then the cache layer sent nothing to the team), and a
        # developer indexing a nearby commit must not embed them again. Hash order: two
        # publishers insert overlapping keys without deadlocking.
        cur.execute(
            f"INSERT INTO {CACHE_TABLE} (model, content_hash, dim, vec) "
            f"SELECT DISTINCT ON (content_hash) %s, content_hash, %s, vec FROM {_STAGE} "
            "WHERE vec IS NOT NULL ORDER BY content_hash ON CONFLICT DO NOTHING",
            (model, dim),
        )
        conn.execute(
            f"UPDATE {REVISION_TABLE} SET complete = true, chunk_count = %s, file_count = %s, "
            "published_at = now() WHERE id = %s",
            (inserted, len(files), rev_id),
        )
    return PublishResult(rev_id, repo_id, True, inserted, len(files), 0.0)


def _claim_revision(
    conn: psycopg.Connection, repo_name: str, sha: str, model: str, dim: int, replace: bool
) -> PublishResult | tuple[int, int]:
    """(repository id, new revision id) under the revision's advisory lock, or the complete
    revision already published (nothing to write unless `replace`, which deletes it first)."""
    key = f"codeask-publish\x1f{repo_name}\x1f{sha}\x1f{model}"
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))
    repo_row = conn.execute(
        f"INSERT INTO {REPOSITORY_TABLE} (name) VALUES (%s) ON CONFLICT (name) "
        "DO UPDATE SET name = EXCLUDED.name RETURNING id",
        (repo_name,),
    ).fetchone()
    assert repo_row is not None
    repo_id = int(repo_row[0])
    existing = conn.execute(
        f"SELECT id, complete, chunk_count, file_count FROM {REVISION_TABLE} "
        "WHERE repository_id = %s AND sha = %s AND model = %s",
        (repo_id, sha, model),
    ).fetchone()
    if existing is not None:
        if existing[1] and not replace:
            return PublishResult(
                int(existing[0]), repo_id, False, int(existing[2]), int(existing[3]), 0.0
            )
        conn.execute(f"DELETE FROM {REVISION_TABLE} WHERE id = %s", (existing[0],))
    rev_row = conn.execute(
        f"INSERT INTO {REVISION_TABLE} (repository_id, sha, model, dim) "
        "VALUES (%s, %s, %s, %s) RETURNING id",
        (repo_id, sha, model, dim),
    ).fetchone()
    assert rev_row is not None
    return repo_id, int(rev_row[0])


def _copy_files(cur: psycopg.Cursor, rev_id: int, files: list[FileRecord]) -> None:
    """The revision's file rows, by binary COPY."""
    with cur.copy(
        f"COPY {FILE_TABLE} (revision_id, path, sha256, language) FROM STDIN (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["int8", "text", "text", "text"])
        for record in files:
            copy.write_row((rev_id, _clean(record.path), record.sha256, record.language))


def _stage_chunks(
    cur: psycopg.Cursor, halfvec_oid: int, chunks: list[Chunk], vectors: Mapping[int, np.ndarray]
) -> None:
    """The chunks into a temporary staging table (binary COPY), dropped at commit: one
    INSERT ... SELECT then builds the tsvector and the cache rows from it."""
    cur.execute(
        f"CREATE TEMPORARY TABLE {_STAGE} ("
        + ", ".join(f"{name} {kind}" for name, kind in _STAGE_COLUMNS)
        + ") ON COMMIT DROP"
    )
    names = ", ".join(name for name, _ in _STAGE_COLUMNS)
    with cur.copy(f"COPY {_STAGE} ({names}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types([halfvec_oid if t == "halfvec" else t for _, t in _STAGE_COLUMNS])
        for chunk in chunks:
            copy.write_row(_chunk_row(chunk, vectors.get(chunk.id)))


# ---- publishing a local folder index ---------------------------------------------------------


def revision_rows(
    storage: IndexReader, tier: Literal["minilm", "static"]
) -> tuple[str, int, list[Chunk], dict[int, np.ndarray], list[FileRecord]]:
    """What `publish` takes from an index: the tier's (model, dim), every chunk, the tier's
    vectors by chunk id, the indexed (not skipped) files."""
    chunks = storage.all_chunks()
    files = [f for p in storage.paths() if (f := storage.file(p)) is not None and not f.skipped]
    model, dim = storage.tier_model(tier)
    vectors = {c.id: v for c in chunks if (v := storage.vector(tier, c.id)) is not None}
    return model, dim, chunks, vectors, files


def publish_folder(
    root: Path,
    reader: IndexReader,
    dsn_env: str,
    repo_name: str | None = None,
    *,
    tier: Literal["minilm", "static"] = "minilm",
    allow_dirty: bool = False,
    replace: bool = False,
) -> PublishResult:
    """Publish the index `reader` of the folder `root` as its HEAD commit (code and history
    chunks). A reader, not a folder index: the team backend never imports the indexer.

    Refused when indexed files differ from HEAD (the index would not be HEAD's; CI checks out
    clean trees) unless `allow_dirty`, and when chunks still lack the tier's vector (run the
    embedding first): a published revision is complete or absent.
    """
    from codeask.core.git.repo import head_sha, uncommitted_paths

    dsn = dsn_from_env(dsn_env)
    sha = head_sha(root)
    if not sha:
        raise PgError(f"{root} has no HEAD commit: only a commit can be published")
    # the publisher is the folder's writer: nothing changes meanwhile
    model, dim, chunks, vectors, files = revision_rows(reader, tier)
    if not allow_dirty:
        dirty = sorted(uncommitted_paths(root) & {f.path for f in files})
        if dirty:
            raise PgError(
                f"{len(dirty)} indexed file(s) differ from HEAD ({', '.join(dirty[:5])}): the "
                "index is not HEAD's. Publish from a clean checkout (or allow_dirty=True)."
            )
    missing = len(chunks) - len(vectors)
    if missing:
        raise PgError(
            f"{missing} of {len(chunks)} chunks have no {tier} vector yet ({model}): finish "
            "embedding (`codeask index`) before publishing"
        )
    name = repository_name(root, repo_name)
    done = publish(dsn, name.name, sha, model, dim, chunks, vectors, files, replace=replace)
    return dataclasses.replace(done, name=name)


# ---- garbage collection ------------------------------------------------------------------------


def gc(conn: psycopg.Connection, keep_per_repo: int = 5) -> list[int]:
    """Delete all but the newest `keep_per_repo` published revisions of each repository and
    model (their files and chunks go with them, by ON DELETE CASCADE); the ids deleted.

    Per model, so publishing the static tier does not push out the MiniLM revisions. Newest
    means most recently published. Incomplete revisions cannot outlive their transaction, so
    there is nothing else to collect.
    """
    import psycopg

    if keep_per_repo < 1:
        raise ValueError("gc keeps at least one revision per repository")
    try:
        with conn.transaction():
            rows = conn.execute(
                f"""DELETE FROM {REVISION_TABLE} WHERE id IN (
                    SELECT id FROM (
                        SELECT id, row_number() OVER (
                            PARTITION BY repository_id, model
                            ORDER BY published_at DESC, id DESC) AS newest
                        FROM {REVISION_TABLE}) AS ranked
                    WHERE newest > %s)
                RETURNING id""",
                (keep_per_repo,),
            ).fetchall()
    except psycopg.errors.InsufficientPrivilege as exc:
        raise PgPermissionDenied(
            "this role may not delete published revisions: gc needs the writer role "
            f"({redact(exc.diag.message_primary or str(exc))})"
        ) from None
    if rows:
        log.info("gc: removed %d old published revision(s)", len(rows))
    return sorted(int(r[0]) for r in rows)
