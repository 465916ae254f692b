"""A multi-root workspace on the team backend: two repositories published to one database, one
SQL query per search for both (real git, the real model, the embedded PostgreSQL).

Each folder reads its own published revision through its own `PublishedReader`; retrieval first
collects every folder's dense asks and the database answers them in one LATERAL query
(core/storage/postgres/dense_batch.py). The queries are counted by wrapping the readers' real query
method (every query still runs)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest
from test_pg_team_overlay import DSN_ENV, committed, settings_for

from codeask.core.indexer import FolderIndex
from codeask.core.search.retrieve import search
from codeask.core.storage.postgres.publish import publish_folder
from codeask.core.storage.postgres.revision_conn import RevisionConnection
from codeask.core.storage.protocol import prefetch_dense

BILLING = {
    "billing/invoice.py": "def invoice_total(lines, vat_rate):\n"
    '    """Net amount of the invoice lines plus value added tax."""\n'
    "    return sum(lines) * (1 + vat_rate)\n",
    "billing/reminder.py": "def send_payment_reminder(customer, days_overdue):\n"
    '    """Email a reminder when an invoice is overdue."""\n'
    "    return f'{customer}: {days_overdue} days overdue'\n",
}


def billing_repo(root: Path) -> None:
    for rel, text in BILLING.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    repo = pygit2.init_repository(str(root))
    repo.remotes.create("origin", "git@github.com:Acme/Billing.git")
    repo.index.add_all()
    repo.index.write()
    who = pygit2.Signature("CI", "ci@example.com")
    repo.create_commit("HEAD", who, who, "B", repo.index.write_tree(), [])


class Queries:
    """What the team database was asked: the `doing` of every `RevisionConnection.rows`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.doing: list[str] = []
        real = RevisionConnection.rows

        def counted(conn: RevisionConnection, sql: str, args: Any, doing: str, **kw: Any) -> Any:
            self.doing.append(doing)
            return real(conn, sql, args, doing, **kw)

        monkeypatch.setattr(RevisionConnection, "rows", counted)


@pytest.fixture
def workspace(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[FolderIndex]]:
    """CI publishes both repositories; a laptop opens fresh clones of both, base BM25 warm."""
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    clones = []
    for name, make in (("shop", committed), ("billing", billing_repo)):
        repo = tmp_path / "ci" / name
        make(repo)
        settings = settings_for(tmp_path / f"ci-index-{name}", tmp_path / "ci-cache")
        ci = FolderIndex(repo, settings, read_team=False)
        ci.refresh()
        assert publish_folder(ci.root, ci.storage, DSN_ENV).created
        ci.close()
        clone = tmp_path / "laptop" / name
        shutil.copytree(repo, clone, ignore=shutil.ignore_patterns(".codeask"))
        clones.append(clone)
    folders = [
        FolderIndex(clone, settings_for(tmp_path / f"index-{clone.name}", tmp_path / "cache"))
        for clone in clones
    ]
    for folder in folders:
        assert folder.team.kind == "base"
        folder.refresh(embed=False)
        folder.storage.warm_up()  # as the server does: the base's BM25 tables in memory
    yield folders
    for folder in folders:
        folder.close()


def test_one_search_over_two_published_repositories_is_one_sql_query(
    workspace: list[FolderIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = Queries(monkeypatch)
    for query, mode in (
        ("value added tax on the invoice lines", "hybrid"),
        ("take the coupon percentage off", "dense"),
        ("send_payment_reminder overdue", "hybrid"),
    ):
        queries.doing.clear()
        hits = search(workspace, query, k=10, mode=mode).hits  # type: ignore[arg-type]
        assert queries.doing == ["searching vectors"], query  # both repositories, one query
        assert {h.root.name for h in hits} == {"shop", "billing"}  # answers from both
    top = search(workspace, "value added tax on the invoice lines", k=3).hits[0]
    assert (top.root.name, top.chunk.symbol) == ("billing", "invoice_total")
    top = search(workspace, "take the coupon percentage off", k=3, mode="dense").hits[0]
    assert (top.root.name, top.chunk.symbol) == ("shop", "apply_coupon_discount")


def test_the_batched_lists_are_each_readers_own_nearest(
    workspace: list[FolderIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    readers = [folder.team.reader for folder in workspace]
    vector = workspace[0].embedder.embed(["tax on an invoice, discounts and shipping"])[0]
    alone = [reader.dense_top_k("minilm", vector, 2) for reader in readers if reader]
    assert [len(hits) for hits in alone] == [2, 2]
    asks = [ask for folder in workspace for ask in folder.storage.dense_asks("minilm", 2)]
    assert len(asks) == 2 and len({ask.group for ask in asks}) == 1  # one database, one model
    assert workspace[0].storage.dense_asks("static", 5) == []  # the revision holds MiniLM only
    queries = Queries(monkeypatch)
    prefetch_dense(asks, vector)
    batched = [reader.dense_top_k("minilm", vector, 2) for reader in readers if reader]
    assert queries.doing == ["searching vectors"]  # the batch; the readers then answer from it
    for mine, theirs in zip(batched, alone, strict=True):
        assert [i for i, _ in mine] == [i for i, _ in theirs]
        assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], abs=1e-6)
    # a larger k than the batch asked for (the revision has more) asks the database again
    assert readers[0] is not None and readers[0].chunk_count() > 2
    wider = readers[0].dense_top_k("minilm", vector, 3)
    assert [i for i, _ in wider][:2] == [i for i, _ in alone[0]]
    assert queries.doing == ["searching vectors"] * 2


def test_an_overlay_edit_keeps_one_query_and_hides_the_published_chunk(
    workspace: list[FolderIndex], monkeypatch: pytest.MonkeyPatch
) -> None:
    shop = workspace[0]
    (shop.root / "shop/coupon.py").write_text(
        "def apply_voucher(total, voucher):\n"
        '    """Take the voucher\'s fixed amount off the total."""\n'
        "    return total - voucher.amount\n"
    )
    shop.update_paths(["shop/coupon.py"])
    queries = Queries(monkeypatch)
    search(workspace, "take the coupon percentage off the total", k=10)
    # the first search after the edit also counts the shadowed chunks' published vectors
    assert queries.doing.count("searching vectors") == 1
    queries.doing.clear()
    hits = search(workspace, "take the coupon percentage off", k=10).hits
    assert queries.doing == ["searching vectors"]
    queries.doing.clear()  # the same search again: the revisions cannot change, no query
    assert search(workspace, "take the coupon percentage off", k=10).hits == hits
    assert queries.doing == []
    symbols = {h.chunk.symbol for h in hits if h.root.name == "shop"}
    assert "apply_voucher" in symbols and "apply_coupon_discount" not in symbols
