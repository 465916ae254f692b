"""The team index on PostgreSQL + pgvector (docs/postgres.md).

Needs the `postgres` extra (psycopg); nothing imports this package unless the team backend is
configured. `connect` and `schema`; the team-wide embedding cache (`cache`, `layered`);
publishing one commit (`publish`, `naming`); reading a published revision (`published`:
`PublishedReader`, with `revision*`, `dense_batch`, `chunk_cache`); `health`. Only the
storage factory (`storage.factory`) and checks/health.py import it.

`__all__` lists the modules other rooms (and the faces) may import (tests/test_architecture.py
checks it); the others are this room's own.
"""

__all__ = [
    "connect",
    "health",
    "publish",
]
