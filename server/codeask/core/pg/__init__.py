"""The team index on PostgreSQL + pgvector (docs/postgres.md).

Needs the `postgres` extra (psycopg); nothing else in codeask imports this package unless the
team backend is configured. So far: connecting (`connect`), the versioned schema (`schema`) and
the team-wide embedding cache (`cache`),
the published team index (`publish`, `reader`).
"""
