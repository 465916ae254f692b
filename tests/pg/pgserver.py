"""The test PostgreSQL server's address and helpers (tests/pg/conftest.py starts it)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

SUPERUSER = "postgres"
SUPERUSER_PASSWORD = "sup3r-Secret-pw"


@dataclass
class PgServer:
    host: str
    port: int
    pgdata: Path
    start_seconds: float

    def dsn(self, dbname: str, user: str = SUPERUSER, password: str = SUPERUSER_PASSWORD) -> str:
        return f"postgresql://{user}:{password}@{self.host}:{self.port}/{dbname}"

    def admin(self, dbname: str = "postgres") -> Any:
        """A superuser connection (autocommit) to `dbname`."""
        import psycopg

        return psycopg.connect(self.dsn(dbname), autocommit=True, connect_timeout=5)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def at_once(dsn: str, count: int, work: Callable[[Any], T]) -> list[T]:
    """`work(conn)` on `count` threads, each on its own connection, released together by a
    barrier (concurrent writers); their results in finishing order. Any error is re-raised."""
    from codeask.core.storage.postgres.connect import connect

    barrier = threading.Barrier(count)
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with connect(dsn) as conn:
                barrier.wait()
                results.append(work(conn))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    return results
