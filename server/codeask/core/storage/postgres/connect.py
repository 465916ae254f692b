"""Connecting to the team database: the DSN comes from an environment variable (never a file),
passwords never reach a message or a log, failures say what to do, start-up retries with backoff.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from codeask.core.storage.protocol import StorageUnavailable

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger(__name__)

#: Seconds libpq waits for a server to answer before giving up (per host; the minimum it honours
#: is 2). Kept short: an editor must not hang on an unreachable team database.
CONNECT_TIMEOUT = 5
#: The default name of the environment variable holding the DSN (`index.dsn_env` will name it).
DEFAULT_DSN_ENV = "CODEASK_PG_DSN"
REDACTED = "***"

# postgresql://user:secret@host → postgresql://user:***@host (also postgres:// and any scheme).
_URI_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*):(?P<pw>[^@/\s]*)@")
# password=secret, password = 'se cret', password="x" (key=value DSNs), ?password=x in a URI,
# PGPASSWORD=x.
_KV_PASSWORD = re.compile(
    r"(?P<head>\b(?:pg)?password\s*=\s*)(?P<pw>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s&;]+)",
    re.IGNORECASE,
)


class PgError(Exception):
    """A problem with the team database; the message never holds a password and says what to do."""


class PgConfigError(PgError):
    """The team database is not configured (the DSN variable is unset or empty)."""


class PgUnavailable(PgError, StorageUnavailable):
    """The team database cannot be reached or refused the login (or the connection was lost).

    `transient` is False for a refusal that waiting will not fix (wrong password, unknown role or
    database): `connect_with_retry` gives up on those at once.
    """

    def __init__(self, message: str, *, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient


class PgPermissionDenied(PgError):
    """The role may not do this (a read-only role writing, or creating the pgvector extension)."""


def redact(text: str, dsn: str | None = None) -> str:
    """`text` without passwords: URI `user:pw@`, `password=...`, and the DSN's own password
    wherever else it appears (a driver message might quote it)."""
    out = _URI_PASSWORD.sub(lambda m: f"{m['head']}:{REDACTED}@" if m["pw"] else m[0], text)
    out = _KV_PASSWORD.sub(lambda m: f"{m['head']}{REDACTED}", out)
    secret = _password_of(dsn) if dsn else ""
    if len(secret) >= 3:  # a one- or two-letter password would blank out ordinary words
        out = out.replace(secret, REDACTED)
    return out


def _password_of(dsn: str) -> str:
    try:
        from psycopg.conninfo import conninfo_to_dict

        value = conninfo_to_dict(dsn).get("password")
    except Exception:  # unparsable DSN or psycopg missing: the regexes still apply
        return ""
    return str(value) if value else ""


def dsn_from_env(env_name: str = DEFAULT_DSN_ENV) -> str:
    """The DSN held by the environment variable `env_name` (the setting names the variable)."""
    dsn = os.environ.get(env_name, "").strip()
    if not dsn:
        raise PgConfigError(
            f"the team index needs a PostgreSQL DSN in the environment variable {env_name} "
            f"(e.g. {env_name}=postgresql://user:password@host:5432/codeask); it is read from "
            "the environment only, never from a settings file"
        )
    return dsn


def describe(dsn: str) -> str:
    """`user@host:port/dbname` for messages: where we tried to go, without the password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:
        return redact(dsn)
    user = parts.get("user") or os.environ.get("PGUSER") or "?"
    host = parts.get("host") or os.environ.get("PGHOST") or "localhost"
    port = parts.get("port") or os.environ.get("PGPORT") or "5432"
    db = parts.get("dbname") or user
    return f"{user}@{host}:{port}/{db}"


_LOGIN_REFUSED = ("password authentication failed", "no password supplied", "does not exist")


def _hint(message: str) -> str:
    lowered = message.lower()
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return "check the user name and password in the DSN"
    if "does not exist" in lowered:
        return "check the database and role names in the DSN"
    if "timeout" in lowered or "timed out" in lowered:
        return "the server did not answer in time: check the host, port and firewall"
    if "connection refused" in lowered or "no such file" in lowered:
        return "is PostgreSQL running and listening on that host and port?"
    return "check the DSN and that the server is up"


def unavailable(exc: BaseException, dsn: str, doing: str = "connect to") -> PgUnavailable:
    """A `PgUnavailable` for `exc`: where, why (redacted) and what to do."""
    reason = redact(str(exc).strip() or type(exc).__name__, dsn)
    refused = any(marker in reason.lower() for marker in _LOGIN_REFUSED)
    return PgUnavailable(
        f"cannot {doing} the team database {describe(dsn)}: {reason} ({_hint(reason)})",
        transient=not refused,
    )


def connect(
    dsn: str, *, timeout: int = CONNECT_TIMEOUT, autocommit: bool = True, **params: Any
) -> psycopg.Connection:
    """An open connection (autocommit by default), or `PgUnavailable` with a redacted message.
    `params`: more libpq connection parameters (e.g. `options`, `keepalives_idle`)."""
    import psycopg

    try:
        return psycopg.connect(
            dsn,
            connect_timeout=max(2, int(timeout)),
            autocommit=autocommit,
            application_name="codeask",
            **params,
        )
    except psycopg.Error as exc:
        raise unavailable(exc, dsn) from None


class Session:
    """One connection to the team database for a long-lived user of it (the embedding cache,
    a published revision): opened on first use, reopened after a loss when this session opened
    it, and every loss a redacted `PgUnavailable` naming `what` and where. Callers serialise
    their use of it (each holds its own lock)."""

    def __init__(
        self,
        dsn: str,
        what: str,
        prepare: Callable[[psycopg.Connection], None],
        *,
        conn: psycopg.Connection | None = None,
        timeout: int = CONNECT_TIMEOUT,
        **params: Any,
    ) -> None:
        self.dsn = dsn
        self.what = what
        #: Opened here (and so reopened after a loss), or passed in by the caller.
        self.owned = conn is None
        #: `user@host:port/db` for messages (no password).
        self.location = describe(dsn if conn is None else conn.info.dsn)
        self._prepare = prepare
        self._timeout = timeout
        self._params = params
        self._conn = conn

    def connection(self) -> psycopg.Connection:
        """The open connection, or a new prepared one; `PgUnavailable` when a passed-in one
        broke (it is not ours to reopen)."""
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        if not self.owned:
            raise PgUnavailable(
                f"the connection to {self.what} {self.location} is closed or broken "
                "(it was passed in, so this reader cannot reconnect)"
            )
        self.drop()
        conn = connect(self.dsn, timeout=self._timeout, **self._params)
        try:
            self._prepare(conn)
        except BaseException:
            with contextlib.suppress(Exception):
                conn.close()
            raise
        self._conn = conn
        return conn

    def drop(self) -> None:
        """Close (if ours) and forget the connection; the next call opens another."""
        if self._conn is not None and self.owned:
            with contextlib.suppress(Exception):  # already broken: nothing left to release
                self._conn.close()
            self._conn = None

    def lost(self, exc: BaseException, doing: str) -> PgUnavailable:
        """The connection failed mid-call: forget it and say so, redacted."""
        self.drop()
        reason = redact(str(exc).strip() or type(exc).__name__, self.dsn or None)
        again = " The next call reconnects." if self.owned else ""
        return PgUnavailable(
            f"lost the connection to {self.what} {self.location} while {doing}: {reason}.{again}"
        )
