"""The team-wide embedding cache: (model, content hash) → vector in PostgreSQL, shared by every
editor and CI run, so a chunk embedded by anyone is never embedded again by anyone.

`PgEmbeddingCache` has the local `EmbeddingCache`'s interface (`get_many`, `put_many`, `close`,
`dim`), so `CachedEmbedder` takes either. Each call is one batch: `get_many` is one
`SELECT ... = ANY(array)`, `put_many` one transaction sent as a pipeline of
`INSERT ... ON CONFLICT DO NOTHING` (rows in hash order, so two writers of overlapping batches
cannot deadlock; the same hash written twice, by anyone, is stored once).

Faults:
- model/dim mismatch: the database records each model's dimension on first use; opening the
  cache for the same model name with another dimension raises `PgModelMismatch`, naming what
  is stored, and nothing is mixed.
- lost connection (server restart, `pg_terminate_backend`, network): the call raises
  `PgUnavailable` saying so; the next call reconnects.
- read-only role (editors get `GRANT SELECT`): the first `put_many` refused for lack of
  privilege logs one warning and turns the cache read-only for this session; later puts are
  dropped silently and reads go on. An index run never fails because it may not share its
  vectors: they are only a cache.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from codeask.core.storage.postgres.connect import (
    CONNECT_TIMEOUT,
    PgError,
    Session,
    dsn_from_env,
    redact,
)
from codeask.core.storage.postgres.schema import CACHE_TABLE, MODEL_TABLE, migrate

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

_HEADER = struct.Struct(">HH")  # pgvector's binary halfvec: dim, unused, then big-endian fp16s


class PgModelMismatch(PgError):
    """The team cache already holds this model with another dimension."""


class HalfVec:
    """A vector to send as pgvector `halfvec` in binary (what the dumper below adapts)."""

    __slots__ = ("values",)

    def __init__(self, values: np.ndarray) -> None:
        self.values = values


def register_halfvec(conn: psycopg.Connection) -> None:
    """Binary `halfvec` in and out of numpy for this connection (no pgvector Python package)."""
    from psycopg.adapt import Dumper, Loader
    from psycopg.pq import Format
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(conn, "halfvec")
    if info is None:
        raise PgError("the pgvector type halfvec is missing from the team database")
    halfvec_oid = info.oid

    class HalfVecDumper(Dumper):
        format = Format.BINARY
        oid = halfvec_oid

        def dump(self, obj: Any) -> bytes:
            row = np.asarray(obj.values, dtype=">f2").reshape(-1)
            return _HEADER.pack(row.shape[0], 0) + row.tobytes()

    class HalfVecLoader(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> np.ndarray:
            dim, _unused = _HEADER.unpack_from(data)
            return np.frombuffer(data, dtype=">f2", count=dim, offset=_HEADER.size).astype(
                np.float32
            )

    conn.adapters.register_dumper(HalfVec, HalfVecDumper)
    conn.adapters.register_loader(halfvec_oid, HalfVecLoader)


class PgEmbeddingCache:
    """content hash → vector for one model, in the team database (see the module docstring)."""

    def __init__(
        self,
        dsn: str,
        model: str,
        dim: int,
        *,
        timeout: int = CONNECT_TIMEOUT,
        migrate_schema: bool = True,
    ) -> None:
        self.model = model
        self.dim = dim
        self.read_only = False
        self._migrate = migrate_schema
        self._lock = threading.Lock()
        self._session = Session(dsn, "the team embedding cache", self._prepare, timeout=timeout)
        #: Where the vectors live, for messages: `user@host:port/db` (no password).
        self.location = self._session.location
        with self._lock:
            self._session.connection()

    @classmethod
    def from_env(cls, env_name: str, model: str, dim: int) -> PgEmbeddingCache:
        """The cache at the DSN held by the environment variable `env_name`."""
        return cls(dsn_from_env(env_name), model, dim)

    # -- connection -------------------------------------------------------------------------

    def _prepare(self, conn: psycopg.Connection) -> None:
        """A new connection: migrated (once), adapters registered, the model checked."""
        if self._migrate:
            migrate(conn)
            self._migrate = False  # once per session; a reconnect finds it done
        register_halfvec(conn)
        self._check_model(conn)

    def _check_model(self, conn: psycopg.Connection) -> None:
        import psycopg

        stored = self._stored_dim(conn)
        if stored is None and not self.read_only:
            try:
                conn.execute(
                    f"INSERT INTO {MODEL_TABLE} (model, dim) VALUES (%s, %s) "
                    "ON CONFLICT DO NOTHING",  # model or (model, dim): two first users at once
                    (self.model, self.dim),
                )
            except psycopg.errors.InsufficientPrivilege as exc:
                self._turn_read_only(exc)
            stored = self._stored_dim(conn)
        if stored is not None and stored != self.dim:
            raise PgModelMismatch(
                f"the team embedding cache {self.location} stores model '{self.model}' with "
                f"dimension {stored}, but this embedder makes {self.dim}-dimensional vectors: "
                "refusing to mix them. Use the model the team uses, or give this one another name."
            )

    def _stored_dim(self, conn: psycopg.Connection) -> int | None:
        query = f"SELECT dim FROM {MODEL_TABLE} WHERE model = %s"
        row = conn.execute(query, (self.model,)).fetchone()
        return int(row[0]) if row else None

    def _turn_read_only(self, exc: Exception) -> None:
        if not self.read_only:
            log.warning(
                "the team embedding cache %s is read-only for this role (%s): vectors computed "
                "here are not shared; reads go on. Writes need the writer role (CI's).",
                self.location,
                redact(getattr(getattr(exc, "diag", None), "message_primary", None) or str(exc)),
            )
        self.read_only = True

    # -- the EmbeddingCache interface -------------------------------------------------------

    def get_many(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors among `hashes`, in one query."""
        import psycopg

        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        with self._lock:
            conn = self._session.connection()
            try:
                cur = conn.cursor(binary=True)
                cur.execute(
                    f"SELECT content_hash, vec FROM {CACHE_TABLE} "
                    "WHERE model = %s AND content_hash = ANY(%s)",
                    (self.model, wanted),
                )
                rows = cur.fetchall()
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                raise self._session.lost(exc, "reading vectors") from None
        return {key: vec for key, vec in rows if vec.shape[0] == self.dim}

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors in one transaction; hashes already there are left as they are."""
        import psycopg

        unique = {key: vec for key, vec in items}
        if not unique or self.read_only:
            return
        for key, vec in unique.items():
            if np.shape(vec) != (self.dim,):
                raise ValueError(
                    f"vector for {key} has shape {np.shape(vec)}, the cache holds ({self.dim},)"
                )
        rows = [(self.model, key, self.dim, HalfVec(unique[key])) for key in sorted(unique)]
        with self._lock:
            conn = self._session.connection()
            try:
                with conn.transaction(), conn.cursor() as cur:
                    cur.executemany(
                        f"INSERT INTO {CACHE_TABLE} (model, content_hash, dim, vec) "
                        "VALUES (%s, %s, %s, %b) ON CONFLICT (model, content_hash) DO NOTHING",
                        rows,
                    )
            except psycopg.errors.InsufficientPrivilege as exc:
                self._turn_read_only(exc)
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                raise self._session.lost(exc, "storing vectors") from None

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._session.drop()
