"""The team base in status, and coming back: a database unreachable when the folder opens is
retried with backoff and, once it answers, read as the base; a connection lost mid-query is a
clear error (hybrid search answers without its dense part), shown in the status, and the next
query reconnects (real git, the embedded
PostgreSQL behind a TCP relay that is down, comes up and drops its connections)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from pgserver import PgServer, free_port
from tcp_relay import Relay
from test_pg_team_overlay import DSN_ENV, committed, settings_for, symbols

from codeask.core.indexer import FolderIndex
from codeask.core.indexer.team_retry import BaseRetry, retry_base, schedule_retry
from codeask.core.storage.postgres.connect import PgUnavailable
from codeask.core.storage.postgres.publish import publish_folder
from codeask.core.storage.team import TeamStorage


class Clock:
    """Monotonic seconds the test moves by hand (the backoff's clock)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def relay(pg_server: PgServer) -> Iterator[Relay]:
    """A relay to the test server, down until the test brings it up."""
    gate = Relay(free_port(), (pg_server.host, pg_server.port))
    yield gate
    gate.down()


def via(relay: Relay, dsn: str) -> str:
    """`dsn` through the relay (same user, password and database)."""
    host, port = relay.target
    return dsn.replace(f"@{host}:{port}/", f"@127.0.0.1:{relay.port}/")


def publish(pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """CI publishes commit A; returns a clone of it (the developer's folder) and A."""
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    repo = tmp_path / "ci"
    sha = committed(repo)
    ci = FolderIndex(
        repo, settings_for(tmp_path / "ci-index", tmp_path / "ci-cache"), read_team=False
    )
    ci.refresh()  # a revision is published with its vectors (the real model)
    assert publish_folder(ci.root, ci.storage, DSN_ENV).created
    ci.close()
    clone = tmp_path / "laptop"
    shutil.copytree(repo, clone)
    return clone, sha


def test_an_unreachable_database_is_retried_and_its_base_taken_when_it_answers(
    pg_dsn: str, relay: Relay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone, sha = publish(pg_dsn, tmp_path, monkeypatch)
    monkeypatch.setenv(DSN_ENV, via(relay, pg_dsn))  # the relay is down: nothing listens there
    folder = FolderIndex(clone, settings_for(tmp_path / "index", tmp_path / "cache"))
    assert folder.team.reader is None and folder.team.kind == "unreachable"
    folder.refresh(embed=False)
    assert sorted(folder.local.paths()) == ["shop/cart.py", "shop/coupon.py", "shop/shipping.py"]
    team = folder.status().team
    assert (team.backend, team.kind, team.base) == ("postgres", "unreachable", "")
    assert team.summary().startswith("no team base: database unreachable, indexed locally")
    assert "sup3r-Secret-pw" not in team.reason and "refused" in team.reason

    clock = Clock()
    schedule_retry(folder.team, lambda: BaseRetry(first=30, maximum=100, clock=clock))
    assert folder.status().team.retry_in == 30
    assert not retry_base(folder)  # not due yet: nothing is tried
    clock.now += 30
    assert not retry_base(folder)  # due, still down: the wait doubles
    retry = folder.team.retry
    assert retry is not None and (retry.attempts, retry.delay) == (1, 60)
    assert folder.status().team.summary().endswith("; retrying in 60 s")

    relay.up()
    clock.now += 59
    assert not retry_base(folder) and folder.team.reader is None  # the backoff is honoured
    clock.now += 1
    assert retry_base(folder)
    assert folder.team.kind == "base" and folder.team.sha == sha and folder.team.retry is None
    assert isinstance(folder.storage, TeamStorage)
    # until the full pass, the local index shadows the whole base: reads do not change
    assert sorted(folder.storage.paths()) == sorted(folder.local.paths())
    report = folder.refresh(embed=False)
    assert report.files_indexed == 0 and folder.local.paths() == []  # the base has them all
    assert symbols(folder, "shipping_fee", "lexical")[0] == "shop/shipping.py:shipping_fee"
    team = folder.status().team
    assert (team.kind, team.base, team.behind, team.overlay_files, team.retry_in) == (
        "base",
        f"github.com/acme/shop@{sha[:12]}",
        0,
        0,
        None,
    )
    assert not retry_base(folder)  # a folder with a base has nothing to retry
    folder.close()


def test_a_connection_lost_mid_query_is_a_clear_error_in_the_status_until_it_reconnects(
    pg_dsn: str, relay: Relay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone, _sha = publish(pg_dsn, tmp_path, monkeypatch)
    relay.up()
    monkeypatch.setenv(DSN_ENV, via(relay, pg_dsn))
    folder = FolderIndex(clone, settings_for(tmp_path / "index", tmp_path / "cache"))
    assert folder.team.kind == "base"
    folder.refresh(embed=False)
    folder.storage.warm_up()  # as the server does after a run: the base's BM25 in memory
    assert symbols(folder, "take the coupon percentage off", "dense")[0].startswith(
        "shop/coupon.py"
    )
    assert folder.status().team.query_error == ""

    relay.down()  # the database goes away with the connection open
    # the search's batched dense query loses the connection (logged); the reader's own query
    # then cannot reconnect: that is the error the caller and the status line see
    with pytest.raises(PgUnavailable, match="cannot connect to the team database"):
        symbols(folder, "the coupon percentage taken off a total", "dense")
    team = folder.status().team
    assert team.query_error.startswith("cannot connect to the team database")
    assert "sup3r-Secret-pw" not in team.query_error
    assert "; last team query failed: cannot connect" in team.summary()
    # lexical search still answers while the base is down: the overlay, and the base's
    # chunks from memory (its BM25 tables and rows were read at warm_up)
    (clone / "shop/tax.py").write_text("def sales_tax(total):\n    return total * 0.2\n")
    folder.update_paths(["shop/tax.py"], embed=False)
    assert folder.local.paths() == ["shop/tax.py"]
    assert symbols(folder, "sales_tax", "lexical")[0] == "shop/tax.py:sales_tax"
    assert symbols(folder, "apply_coupon_discount", "lexical")[0].startswith("shop/coupon.py")
    # and hybrid search answers without its dense list (a warning in the log), not an error
    assert symbols(folder, "apply_coupon_discount", "hybrid")[0].startswith("shop/coupon.py")
    assert symbols(folder, "sales_tax")[0] == "shop/tax.py:sales_tax"
    with pytest.raises(PgUnavailable, match="cannot connect"):  # still down: a clear error
        symbols(folder, "shipping fee per kilogram", "dense")
    assert folder.status().team.query_error.startswith("cannot connect to the team database")

    relay.up()  # back: the next query reconnects and the status clears
    assert symbols(folder, "shipping fee per kilogram", "dense")[0].startswith("shop/shipping.py")
    assert folder.status().team.query_error == ""
    folder.close()


def test_a_database_that_answers_with_nothing_published_is_not_retried(
    pg_dsn: str, relay: Relay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone, _sha = publish(pg_dsn, tmp_path, monkeypatch)
    other = tmp_path / "other"
    shutil.copytree(clone, other)
    repo = pygit2.Repository(str(other))
    repo.remotes.set_url("origin", "git@github.com:Acme/Other.git")
    # Another history (a root commit of its own): the published commit is no ancestor, so it
    # is not found by commit under the other name either (core/storage/postgres/naming.py).
    who = pygit2.Signature("Dev", "dev@example.com")
    tree = repo.head.peel(pygit2.Commit).tree_id
    root = repo.create_commit(None, who, who, "unrelated history", tree, [])
    repo.head.set_target(root)
    monkeypatch.setenv(DSN_ENV, via(relay, pg_dsn))
    folder = FolderIndex(other, settings_for(tmp_path / "index", tmp_path / "cache"))
    assert folder.team.kind == "unreachable"
    clock = Clock()
    schedule_retry(folder.team, lambda: BaseRetry(first=1, clock=clock))
    relay.up()
    clock.now += 1
    assert not retry_base(folder)  # it answered: nothing of github.com/acme/other there
    assert folder.team.kind == "unpublished" and folder.team.retry is None
    assert "nothing published" in folder.team.reason
    assert "'github.com/acme/other' (from the `origin` URL)" in folder.team.reason
    team = folder.status().team
    assert team.retry_in is None
    assert team.summary() == "no team base: nothing published near HEAD, indexed locally"
    clock.now += 1000
    assert not retry_base(folder) and folder.team.retry is None  # and never again
    folder.close()
