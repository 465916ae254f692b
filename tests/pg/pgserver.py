"""The test PostgreSQL server's address and helpers (tests/pg/conftest.py starts it)."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
