-- The codeask team database: two roles, one database, pgvector (docs/postgres.md, "A server").
-- Run once as a superuser, the passwords as psql variables:
--   sudo -u postgres psql -v ci_password='...' -v editor_password='...' -f init.sql
-- (docker compose runs it through init.sh, the passwords from the environment).
\set ON_ERROR_STOP on

-- CI publishes (writer: it owns the tables it creates); editors only read.
CREATE ROLE codeask_ci LOGIN PASSWORD :'ci_password';
CREATE ROLE codeask_editor LOGIN PASSWORD :'editor_password';
CREATE DATABASE codeask OWNER codeask_ci;

\connect codeask
-- pgvector is not a trusted extension: a superuser creates it, once.
CREATE EXTENSION IF NOT EXISTS vector;
GRANT CONNECT ON DATABASE codeask TO codeask_editor;
GRANT USAGE ON SCHEMA public TO codeask_editor;
-- The tables do not exist yet (codeask_ci's first run creates them): grant reading them now.
ALTER DEFAULT PRIVILEGES FOR ROLE codeask_ci IN SCHEMA public
    GRANT SELECT ON TABLES TO codeask_editor;
