"""A walked pass tests every chunk id for a static vector once, before history; a second test
after history only when history added commits (issue 42: each test reads all 1.28M chunk ids
of the kernel, ~0.05-0.25 s of a one-file edit's pass). The real test is counted, not mocked."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.core.indexer.folder import FolderIndex
from codeask.core.storage.local import LocalStorage
from support.gitrepo import commit, make_repo


def test_a_walked_pass_tests_the_static_tier_again_only_after_new_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    repo = make_repo(root)
    commit(repo, {"ledger.py": "def post_entry(book, row):\n    book.append(row)\n"}, "ledger")
    monkeypatch.setenv("CODEASK_INDEX__LOCATION", str(tmp_path / "index"))
    tests: list[str] = []
    real = LocalStorage.pending_ids

    def counted(self: LocalStorage, tier: str) -> list[int]:
        tests.append(tier)
        return real(self, tier)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalStorage, "pending_ids", counted)
    writer = FolderIndex.open(root, mode="write")
    try:
        writer.refresh(embed=False, history=True)  # the first pass: commits came
        assert tests.count("static") == 2
        tests.clear()
        (root / "ledger.py").write_text("def post_entry(book, row):\n    book.insert(0, row)\n")
        report = writer.refresh(embed=False, history=True)  # walked, no new commit
        assert report.watched is None and report.commits_added == 0 and report.files_indexed == 1
        assert tests.count("static") == 1
        assert not writer.local.pending_ids("static")  # the edit's chunks have their vectors
        tests.clear()
        commit(repo, {"audit.py": "def audit_trail(book):\n    return list(book)\n"}, "audit")
        report = writer.refresh(embed=False, history=True)
        assert report.commits_added == 1 and tests.count("static") == 2
        assert not writer.local.pending_ids("static")
    finally:
        writer.close()
