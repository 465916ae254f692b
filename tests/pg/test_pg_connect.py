"""Connecting: redaction, the DSN from the environment, wrong passwords, unreachable servers."""

from __future__ import annotations

import time

import pytest
from pgserver import PgServer, free_port

from codeask.core.storage.postgres.connect import (
    PgConfigError,
    PgUnavailable,
    connect,
    dsn_from_env,
    redact,
)


def test_redact_removes_passwords_in_both_dsn_forms() -> None:
    text = (
        "tried postgresql://ci:hunter2x@db.example:5432/codeask and "
        "host=db user=ci password=hunter2x dbname=codeask and password = 'two words' and "
        "postgres://bob:p%40ss@h/db?sslmode=require&password=q1w2e3 PGPASSWORD=zz9plural"
    )
    out = redact(text)
    for secret in ("hunter2x", "two words", "p%40ss", "q1w2e3", "zz9plural"):
        assert secret not in out
    assert "postgresql://ci:***@db.example:5432/codeask" in out
    assert "user=ci password=*** dbname=codeask" in out
    # the DSN's own password, wherever else a message quotes it
    assert redact("auth failed near hunter2x", "postgresql://ci:hunter2x@h/db") == (
        "auth failed near ***"
    )
    assert redact("postgresql://ci@h/db") == "postgresql://ci@h/db"  # nothing to hide


def test_dsn_comes_from_the_named_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEASK_TEST_DSN", raising=False)
    with pytest.raises(PgConfigError, match="CODEASK_TEST_DSN"):
        dsn_from_env("CODEASK_TEST_DSN")
    monkeypatch.setenv("CODEASK_TEST_DSN", " postgresql://u:p@h/db ")
    assert dsn_from_env("CODEASK_TEST_DSN") == "postgresql://u:p@h/db"


def test_wrong_password_is_refused_without_the_password_in_the_message(
    pg_server: PgServer,
) -> None:
    dsn = pg_server.dsn("postgres", password="Wr0ngPassw0rd-xyz")
    with pytest.raises(PgUnavailable) as caught:
        connect(dsn)
    message = str(caught.value)
    assert "Wr0ngPassw0rd-xyz" not in message
    assert "password authentication failed" in message
    assert "check the user name and password" in message
    assert f"postgres@127.0.0.1:{pg_server.port}/postgres" in message
    assert caught.value.transient is False  # waiting does not fix it: team_retry gives up


def test_unreachable_port_fails_fast_with_a_clear_message() -> None:
    port = free_port()  # nothing listens there
    dsn = f"postgresql://ci:Sekr1t-pw@127.0.0.1:{port}/codeask"
    started = time.monotonic()
    with pytest.raises(PgUnavailable) as caught:
        connect(dsn, timeout=2)
    assert time.monotonic() - started < 5
    message = str(caught.value)
    assert "Sekr1t-pw" not in message
    assert f"ci@127.0.0.1:{port}/codeask" in message
    assert "is PostgreSQL running" in message
    assert caught.value.transient is True
