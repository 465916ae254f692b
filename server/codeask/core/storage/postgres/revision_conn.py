"""The connection a `PublishedReader` queries through: bounded, reconnecting, errors translated.

Every query runs under `statement_timeout` (set on the connection, also on a connection passed
in) and the connection uses TCP keepalives, so a dead server or a lost network is an error
within seconds, never a hang. A lost connection raises `PgUnavailable` (no password); when the
DSN was given, the next call reconnects (`pg.connect.Session`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from codeask.core.storage.postgres.cache import register_halfvec
from codeask.core.storage.postgres.connect import PgError, PgUnavailable, Session, redact

if TYPE_CHECKING:
    import psycopg

#: Milliseconds any one query may take before the server cancels it.
STATEMENT_TIMEOUT_MS = 5000
#: TCP keepalives: a silent network drop is noticed within ~10 s, not the OS's two hours.
KEEPALIVE: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 2,
}


class RevisionConnection:
    """One connection to the team index, one query at a time."""

    def __init__(self, conn_or_dsn: psycopg.Connection | str, statement_timeout_ms: int) -> None:
        self.timeout_ms = max(1, int(statement_timeout_ms))
        self._lock = threading.Lock()
        #: Queries sent so far (benchmarks: round trips per search).
        self.sent = 0
        if isinstance(conn_or_dsn, str):
            self.session = Session(conn_or_dsn, "the team index", self._prepare, **KEEPALIVE)
        else:  # the caller's connection: prepared now, never reopened here
            self.session = Session("", "the team index", self._prepare, conn=conn_or_dsn)
            self._prepare(conn_or_dsn)
        self.location = self.session.location

    def _prepare(self, conn: psycopg.Connection) -> None:
        import psycopg

        try:
            conn.execute(f"SET statement_timeout = {self.timeout_ms}")
            register_halfvec(conn)
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise self.session.lost(exc, "opening the revision") from None

    def rows(
        self, sql: str, args: Sequence[Any], doing: str, *, setup: Sequence[str] = ()
    ) -> list[tuple[Any, ...]]:
        """Run one query (binary results: halfvec comes back as numpy), errors translated;
        `setup` statements run first in the same transaction (SET LOCAL)."""
        import psycopg

        with self._lock:
            self.sent += 1
            conn = self.session.connection()
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
                    f"{self.timeout_ms / 1000:g} s while {doing} (statement_timeout)"
                ) from None
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                raise self.session.lost(exc, doing) from None
            except psycopg.Error as exc:
                raise PgError(
                    f"the team index {self.location} failed while {doing}: "
                    f"{redact(str(exc), self.session.dsn or None)}"
                ) from None

    def close(self) -> None:
        """Close the connection if it was opened here."""
        with self._lock:
            self.session.drop()
