#!/bin/sh
# docker-entrypoint-initdb.d hook of compose.yaml: init.sql with the passwords from the
# environment (CODEASK_CI_PASSWORD, CODEASK_EDITOR_PASSWORD). Runs once, on an empty volume.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v ci_password="$CODEASK_CI_PASSWORD" -v editor_password="$CODEASK_EDITOR_PASSWORD" \
    -f /codeask/init.sql
