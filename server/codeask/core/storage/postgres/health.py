"""The team database as `codeask health` and `codeask/health` show it, read-only.

With `index.backend = "postgres"` a user needs to see at once whether the team database is
there, which schema it has, which model and dimension the team's vectors use, and whether this
role may write (publishers) or only read (editors). The probe connects with a short timeout and
runs a few catalogue queries; it never migrates or writes (a health check must not change
anything), and every message goes through `redact`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

from codeask.core.storage.postgres.connect import (
    DEFAULT_DSN_ENV,
    PgError,
    connect,
    describe,
    dsn_from_env,
    redact,
)
from codeask.core.storage.postgres.schema import CACHE_TABLE, LATEST, MODEL_TABLE, current_version

if TYPE_CHECKING:
    import psycopg


@dataclasses.dataclass(frozen=True)
class TeamHealth:
    """The team database `index.dsn_env` points at, as a read-only probe found it."""

    dsn_env: str
    """The environment variable holding the DSN (the DSN itself is never shown)."""
    where: str = ""
    """`user@host:port/db`, no password; '' when the variable is unset."""
    reachable: bool = False
    schema_version: int = 0
    """The database's codeask schema (0: never migrated)."""
    schema_known: int = LATEST
    """The newest schema this codeask knows (a larger `schema_version` is refused)."""
    model_dim: int = 0
    """The dimension the team stores for `embed.model` (0: no vector of that model yet)."""
    writable: bool = False
    """This role may add vectors (publishers need it; editors may be read-only)."""
    millis: int = 0
    """How long the probe took."""
    error: str = ""
    """Why it is unusable, one line, redacted; '' when it answered."""


def team_health(dsn_env: str, model: str, timeout: float = 2.0) -> TeamHealth:
    """Probe the team database; never raises, never writes."""
    started = time.monotonic()
    env = dsn_env or DEFAULT_DSN_ENV
    try:
        dsn = dsn_from_env(env)
    except PgError as exc:
        return TeamHealth(env, error=str(exc))
    where = describe(dsn)
    try:
        import psycopg
    except ImportError:
        return TeamHealth(env, where, error="psycopg is missing: pip install 'codeask[postgres]'")
    try:
        with connect(dsn, timeout=max(2, round(timeout))) as conn:
            version = current_version(conn)
            dim, writable = _model_and_rights(conn, model) if version else (0, False)
    except PgError as exc:
        return TeamHealth(env, where, error=redact(str(exc), dsn))
    except psycopg.Error as exc:
        return TeamHealth(env, where, reachable=True, error=redact(str(exc).strip(), dsn))
    millis = round(1000 * (time.monotonic() - started))
    error = ""
    if version > LATEST:
        error = f"schema version {version} is newer than this codeask's {LATEST}: upgrade codeask"
    return TeamHealth(env, where, True, version, LATEST, dim, writable, millis, error)


def _model_and_rights(conn: psycopg.Connection, model: str) -> tuple[int, bool]:
    """(the team's dimension for `model` or 0, may this role insert vectors?)."""
    row = conn.execute(f"SELECT dim FROM {MODEL_TABLE} WHERE model = %s", (model,)).fetchone()
    rights = conn.execute(
        "SELECT has_table_privilege(current_user, %s, 'INSERT')", (CACHE_TABLE,)
    ).fetchone()
    return (int(row[0]) if row else 0), bool(rights and rights[0])
