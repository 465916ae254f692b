"""The team database's schema: numbered migrations, applied on start under an advisory lock.

`codeask_schema` holds one row: the schema version. `migrate` reads it; an up-to-date database
costs one query and needs no write rights (editors use a read-only role). Older: the missing
migrations run in one transaction while holding a transaction-level advisory lock, so two
processes starting at once apply each migration exactly once (the second waits, then finds the
work done). Newer than this codeask knows: refused, naming both versions.

Vectors are stored as `halfvec` (fp16): measured on 10,000 random unit 384-dim float32 vectors
(PostgreSQL 18.6, pgvector 0.8.6), a row's vector takes 776 bytes vs 1,544 for `vector`
(table + primary key 10.0 MB vs 20.7 MB) and comes back with max |1 - cosine| = 2.4e-7 and max
absolute error 8.7e-5 per component (`vector`: exact). Embeddings are unit vectors, far inside
fp16's range; the halved size is what the team cache pays for in disk, RAM and network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from codeask.core.storage.postgres.connect import PgError, PgPermissionDenied

if TYPE_CHECKING:
    import psycopg

#: Key of the advisory lock taken while migrating ("codeask" in ASCII, as a bigint).
MIGRATION_LOCK_KEY = 0x636F6465_61736B
SCHEMA_TABLE = "codeask_schema"
CACHE_TABLE = "codeask_embedding_cache"
MODEL_TABLE = "codeask_embedding_model"
#: The published team index (migration 2; core/storage/postgres/publish.py writes it,
#: core/storage/postgres/published.py reads).
REPOSITORY_TABLE = "codeask_repository"
REVISION_TABLE = "codeask_revision"
FILE_TABLE = "codeask_file"
CHUNK_TABLE = "codeask_chunk"


class SchemaTooNew(PgError):
    """The database was migrated by a newer codeask; this one must not touch it."""

    def __init__(self, found: int, known: int) -> None:
        super().__init__(
            f"the team database has schema version {found}, but this codeask knows versions up "
            f"to {known}: it was migrated by a newer codeask. Upgrade codeask (pip install -U "
            "codeask) to use it; nothing was changed."
        )
        self.found = found
        self.known = known


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "team-wide embedding cache: (model, content hash) -> halfvec",
        (
            # One row per embedding model: its dimension, fixed on first use.
            f"""CREATE TABLE {MODEL_TABLE} (
                model text PRIMARY KEY,
                dim integer NOT NULL CHECK (dim > 0 AND dim <= 16000),
                created_at timestamptz NOT NULL DEFAULT now(),
                UNIQUE (model, dim)
            )""",
            # The (model, dim) foreign key makes the database itself refuse a row whose size
            # is not its model's; the CHECK holds the vector to the row's own dim.
            f"""CREATE TABLE {CACHE_TABLE} (
                model text NOT NULL,
                content_hash text NOT NULL,
                dim integer NOT NULL,
                vec halfvec NOT NULL CHECK (vector_dims(vec) = dim),
                created_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (model, content_hash),
                FOREIGN KEY (model, dim) REFERENCES {MODEL_TABLE} (model, dim)
            )""",
        ),
    ),
    Migration(
        2,
        "published team index: repositories, revisions, files, chunks (tsvector + halfvec)",
        (
            # A repository by a stable identity: the normalized git remote URL or a folder name.
            f"""CREATE TABLE {REPOSITORY_TABLE} (
                id bigserial PRIMARY KEY,
                name text NOT NULL UNIQUE,
                created_at timestamptz NOT NULL DEFAULT now()
            )""",
            # One published index of one commit for one embedding model. `complete` is set by
            # the publishing transaction's last statement: readers only ever see complete ones.
            f"""CREATE TABLE {REVISION_TABLE} (
                id bigserial PRIMARY KEY,
                repository_id bigint NOT NULL REFERENCES {REPOSITORY_TABLE} (id)
                    ON DELETE CASCADE,
                sha text NOT NULL,
                model text NOT NULL,
                dim integer NOT NULL,
                chunk_count integer NOT NULL DEFAULT 0,
                file_count integer NOT NULL DEFAULT 0,
                complete boolean NOT NULL DEFAULT false,
                published_at timestamptz NOT NULL DEFAULT now(),
                UNIQUE (repository_id, sha, model),
                FOREIGN KEY (model, dim) REFERENCES {MODEL_TABLE} (model, dim)
            )""",
            f"""CREATE TABLE {FILE_TABLE} (
                revision_id bigint NOT NULL REFERENCES {REVISION_TABLE} (id) ON DELETE CASCADE,
                path text NOT NULL,
                sha256 text NOT NULL,
                language text NOT NULL DEFAULT '',
                PRIMARY KEY (revision_id, path)
            )""",
            # `lex`: the local index's code-aware tokens (lexical.code_tokens, tokenized in
            # Python) through to_tsvector('simple'): symbol A, path B, body C. `vec` lives on the
            # row (see the module docstring); its HNSW index is per dimension, made on the first
            # publish of that dimension (publish.ensure_vector_index), since the column serves
            # every model.
            f"""CREATE TABLE {CHUNK_TABLE} (
                revision_id bigint NOT NULL REFERENCES {REVISION_TABLE} (id) ON DELETE CASCADE,
                chunk_id bigint NOT NULL,
                path text NOT NULL,
                language text NOT NULL,
                kind text NOT NULL,
                symbol text NOT NULL DEFAULT '',
                parent text NOT NULL DEFAULT '',
                docstring text NOT NULL DEFAULT '',
                calls text[] NOT NULL DEFAULT '{{}}',
                part integer NOT NULL DEFAULT 0,
                meta jsonb NOT NULL DEFAULT '{{}}',
                start_line integer NOT NULL,
                end_line integer NOT NULL,
                content_hash text NOT NULL,
                text text NOT NULL,
                dim integer NOT NULL,
                lex tsvector NOT NULL,
                vec halfvec CHECK (vec IS NULL OR vector_dims(vec) = dim),
                PRIMARY KEY (revision_id, chunk_id)
            )""",
            f"CREATE INDEX {CHUNK_TABLE}_path ON {CHUNK_TABLE} (revision_id, path)",
            f"CREATE INDEX {CHUNK_TABLE}_lex ON {CHUNK_TABLE} USING gin (lex)",
            f"CREATE INDEX {REVISION_TABLE}_repo ON {REVISION_TABLE} (repository_id, published_at)",
        ),
    ),
)

#: The newest schema this codeask knows.
LATEST = MIGRATIONS[-1].version


def current_version(conn: psycopg.Connection) -> int:
    """The database's schema version; 0 when codeask never migrated it."""
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (SCHEMA_TABLE,)).fetchone()
    if not row or not row[0]:
        return 0
    found = conn.execute(f"SELECT version FROM {SCHEMA_TABLE} WHERE id = 1").fetchone()
    return int(found[0]) if found else 0


def _ensure_vector_extension(conn: psycopg.Connection) -> None:
    import psycopg

    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        with conn.transaction():  # a savepoint: the caller's transaction holds the lock
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.errors.InsufficientPrivilege as exc:
        raise PgPermissionDenied(
            "the pgvector extension is not installed in this database and this role may not "
            "install it: ask an administrator to run `CREATE EXTENSION vector;` in it once "
            f"({exc.diag.message_primary or exc})"
        ) from None
    except psycopg.errors.FeatureNotSupported as exc:
        raise PgError(f"pgvector is not available on this server: {exc}") from None
    except psycopg.errors.UndefinedFile as exc:
        raise PgError(
            "pgvector is not installed on this PostgreSQL server (install pgvector >= 0.7, "
            f"which has halfvec): {exc.diag.message_primary or exc}"
        ) from None


def migrate(conn: psycopg.Connection, migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Bring the schema up to the newest of `migrations`; the version after. Needs an autocommit
    connection (the migrations run in a transaction of their own)."""
    import psycopg

    known = migrations[-1].version
    try:
        found = current_version(conn)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise PgPermissionDenied(
            f"this role may not read {SCHEMA_TABLE}: grant it SELECT on the codeask tables "
            f"(docs/postgres.md, Roles) ({exc.diag.message_primary or exc})"
        ) from None
    if found > known:
        raise SchemaTooNew(found, known)
    if found == known:
        return found  # the common case: no lock, no write (a read-only role gets here)
    before = found
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
            _ensure_vector_extension(conn)  # under the lock: two CREATE EXTENSIONs would race
            conn.execute(
                f"""CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (
                    id integer PRIMARY KEY CHECK (id = 1),
                    version integer NOT NULL,
                    migrated_at timestamptz NOT NULL DEFAULT now()
                )"""
            )
            found = current_version(conn)  # again, under the lock: another process may be done
            if found > known:
                raise SchemaTooNew(found, known)
            for migration in migrations:
                if migration.version <= found:
                    continue
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute(
                    f"""INSERT INTO {SCHEMA_TABLE} (id, version) VALUES (1, %s)
                        ON CONFLICT (id) DO UPDATE
                        SET version = EXCLUDED.version, migrated_at = now()""",
                    (migration.version,),
                )
                found = migration.version
    except psycopg.errors.InsufficientPrivilege as exc:
        raise PgPermissionDenied(
            f"the team database needs schema version {known} (it has {before}) and this role may "
            "not create tables: run codeask once with the writer role (the one CI uses) to "
            f"migrate it ({exc.diag.message_primary or exc})"
        ) from None
    return found
