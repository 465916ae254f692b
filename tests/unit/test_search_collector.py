"""Issue 44, LAT: a search's short-lived objects are freed by reference counting, unseen by the
cyclic collector. A question allocates ~1,000 tracked objects (its candidates' chunks, their
lists, the steps' dicts); at CPython's young threshold (700) a collection ran inside nearly every
search, promoting the question's live candidates to the older generations, so every ~20th
question paid a full collection of the process's heap (the p95 of eval-search's 811 questions).
`retrieve.search` now ranks under `fewer_collections` and drops the candidates before it puts
the thresholds back. Since issue 42's recent chunks (a long-lived process keeps the chunks it
decoded last), a chunk is not tracked by the collector at all (`Chunk` is a `gc=False` struct:
it cannot be part of a cycle), so no collection walks a candidate, kept or dropped. Real index:
a folder indexed by `FolderIndex.refresh` (lexical + static)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.gitrepo import ALICE, EPOCH, commit, make_repo

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.records import Chunk
from codeask.core.search.retrieve import search

#: Files and functions a file: enough candidates (200 lexical + 200 static) for a full list.
FILES, FUNCTIONS = 60, 8


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[FolderIndex]:
    repo = tmp_path / "repo"
    git = make_repo(repo)
    files = {
        f"billing/ledger_{n}.py": "".join(
            f"def settle_invoice_{n}_{j}(ledger, amount):\n"
            f"    '''Settle invoice {j} of ledger {n}: post the amount, update the balance.'''\n"
            f"    ledger.post(amount * {j + 1})\n    return ledger.balance_{j}\n\n"
            for j in range(FUNCTIONS)
        )
        for n in range(FILES)
    }
    commit(git, files, "add the ledgers", ALICE, EPOCH)
    settings, warnings = build_settings({"embed": {"tiers": ["static"]}}, {})
    assert warnings == []
    index = FolderIndex(repo, settings)
    try:
        index.refresh()
        yield index
    finally:
        index.close()


def test_no_collection_walks_a_search_s_candidates(folder: FolderIndex) -> None:
    """Whatever collection runs while a search is answered walks none of its chunks: neither
    the hits it returns nor the few hundred candidates it ranked (dropped, or kept as the
    folder's recent chunks)."""
    before = gc.get_threshold()
    walked: list[int] = []  # the chunks each collection is about to walk

    def seen(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            young = gc.get_objects(generation=0)
            walked.append(sum(isinstance(o, Chunk) for o in young))

    questions = ["settle the invoice amount", "update ledger balance", "post amount to ledger"]
    search([folder], questions[0])  # warm: the static model and the name tables load once
    gc.callbacks.append(seen)
    try:
        for question in questions * 2:
            gc.collect()  # the young count starts at 0, as after any collection
            walked.clear()
            result = search([folder], question, k=10)
            assert len(result.hits) == 10
            assert max(walked, default=0) == 0, (question, walked)
            assert not any(gc.is_tracked(hit.chunk) for hit in result.hits)
    finally:
        gc.callbacks.remove(seen)
    assert gc.get_threshold() == before
