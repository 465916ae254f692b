"""Git history in the shared index: commits and hunks are searchable, filterable, re-synced."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.search.retrieve import Filters, search
from support.gitrepo import ALICE, BOB, EPOCH, amend, commit, make_repo

DAY = 86_400


def history_index(root: Path) -> FolderIndex:
    settings, _ = build_settings({"history": {"enabled": True}})
    return FolderIndex(root, settings)


@pytest.fixture()
def repo_root(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    commit(
        repo,
        {"client.py": "def fetch(url):\n    return get(url)\n"},
        "Add the HTTP client",
        ALICE,
        EPOCH,
    )
    commit(
        repo,
        {
            "client.py": (
                "def fetch(url, attempts=3):\n"
                "    for attempt in range(attempts):\n"
                "        try:\n"
                "            return get(url)\n"
                "        except TimeoutError:\n"
                "            sleep(2 ** attempt)\n"
            )
        },
        "Retry timed-out requests with exponential backoff\n\nFlaky networks made imports fail.",
        BOB,
        EPOCH + 10 * DAY,
    )
    commit(
        repo,
        {"README.md": "# Client\n\nFetches things.\n"},
        "Document the client",
        ALICE,
        EPOCH + 20 * DAY,
    )
    return tmp_path / "repo"


def test_history_search_finds_the_commit_by_description(repo_root: Path) -> None:
    folder = history_index(repo_root)
    report = folder.refresh(embed=False)
    assert report.commits_added == 3
    hits = search(
        [folder],
        "when was retry with backoff added",
        mode="lexical",
        filters=Filters(scope="history"),
    ).hits
    assert hits, "history search returned nothing"
    top = hits[0].chunk
    assert top.kind in ("commit", "hunk")
    assert top.meta["subject"].startswith("Retry timed-out requests")
    assert top.meta["author"] == BOB[0]
    code_only = search([folder], "retry backoff", mode="lexical").hits
    assert all(h.chunk.kind not in ("commit", "hunk") for h in code_only), (
        "scope code is the default"
    )


def test_author_and_date_filters(repo_root: Path) -> None:
    folder = history_index(repo_root)
    folder.refresh(embed=False)
    by_alice = search(
        [folder], "client", mode="lexical", filters=Filters(scope="history", author="alice")
    ).hits
    assert by_alice and all(h.chunk.meta["author"] == ALICE[0] for h in by_alice)
    late = search(
        [folder], "client", mode="lexical", filters=Filters(scope="history", since="2024-03-15")
    ).hits
    assert late and all(h.chunk.meta["date"] >= "2024-03-15" for h in late)
    early = search(
        [folder], "client", mode="lexical", filters=Filters(scope="history", until="2024-03-05")
    ).hits
    assert early and all(h.chunk.meta["date"][:10] <= "2024-03-05" for h in early)


def test_amend_resyncs_history(repo_root: Path) -> None:
    import pygit2

    folder = history_index(repo_root)
    folder.refresh(embed=False)
    before = set(folder.storage.history_commits())
    new_sha = amend(pygit2.Repository(str(repo_root)), "Document the HTTP client and its retries")
    report = folder.refresh(embed=False)
    assert report.commits_added == 1 and report.commits_removed == 1
    after = set(folder.storage.history_commits())
    assert new_sha in after and len(before - after) == 1
    hits = search(
        [folder], "document retries", mode="lexical", filters=Filters(scope="history")
    ).hits
    assert any(h.chunk.meta.get("sha") == new_sha for h in hits)
    assert all(h.chunk.meta.get("sha") in after for h in hits), "stale commits must be gone"


def test_history_survives_restart_without_rework(repo_root: Path) -> None:
    folder = history_index(repo_root)
    folder.refresh(embed=False)
    folder.close()
    again = history_index(repo_root)
    report = again.refresh(embed=False)
    assert report.commits_added == 0
    assert len(again.storage.history_commits()) == 3


def test_non_git_workspace_still_works(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def plain_function():\n    pass\n")
    folder = history_index(tmp_path)
    report = folder.refresh(embed=False)
    assert report.commits_added == 0
    assert (
        search([folder], "plain_function", mode="lexical").hits[0].chunk.symbol == "plain_function"
    )
    assert search([folder], "anything", mode="lexical", filters=Filters(scope="history")).hits == []


def test_working_tree_changes_are_flagged_uncommitted(repo_root: Path) -> None:
    folder = history_index(repo_root)
    folder.refresh(embed=False)
    client = repo_root / "client.py"
    client.write_text(
        client.read_text() + "\n\ndef fetch_json(url):\n    return fetch(url).json()\n"
    )
    folder.update_paths(["client.py"], embed=False)
    hits = search([folder], "fetch_json", mode="lexical").hits
    assert hits[0].chunk.symbol == "fetch_json" and hits[0].uncommitted
    readme = search([folder], "things", mode="lexical").hits
    assert readme and not readme[0].uncommitted
