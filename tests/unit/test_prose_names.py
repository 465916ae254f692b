"""core/search/prose_names.py: "the Job interface", or "Job" opening a question, names the
definition of `Job` when the folder defines it.

The end-to-end cases are the real CLI as processes (`codeask index`, `codeask search --json`) on
a git repository the test makes: "Job interface and its lifecycle" and "Job scheduling and its
lifecycle" asked of `Api.kt` (which defines `interface Job`) and `Scope.kt` (which says job,
lifecycle and interface more often); before the rules `Scope.kt` ranked first for both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.core.search.prose_names import KIND_NAMED, LEAD_NAME
from support.search_cli import search_hits

FILES = {
    "src/Api.kt": "interface Job {\n    fun cancel()\n    fun join()\n}\n",
    "src/Scope.kt": "/** The interface to a job's lifecycle: each job is started, tracked and ended"
    " here. */\nclass Scope {\n"
    "    /** Starts a job, then tracks the job's lifecycle until the job ends. */\n"
    "    fun launch(block: () -> Unit): Job = StandaloneJob(block).also { it.start() }\n\n"
    "    /** Ends a job's lifecycle: the job's interface to its children is closed. */\n"
    "    fun end(job: Job) = job.cancel()\n}\n",
    **{
        f"src/Util{i}.kt": f"fun helper{i}(value: Int): String = value.toString()\n"
        for i in range(1, 5)
    },
}


def test_a_capitalised_word_before_a_definition_kind_is_a_name() -> None:
    assert KIND_NAMED.findall("Job interface and coroutine lifecycle management") == ["Job"]
    assert KIND_NAMED.findall("how Key type is used as object field identifier") == ["Key"]
    assert KIND_NAMED.findall("Content protocol for encoding request bodies") == ["Content"]
    assert KIND_NAMED.findall("the job interface of a scope") == []  # not capitalised
    assert KIND_NAMED.findall("Job lifecycle management") == []  # no kind after it


def test_a_capitalised_first_word_may_be_a_name() -> None:
    assert LEAD_NAME.match("Mutex and Semaphore for synchronization").group(1) == "Mutex"
    assert LEAD_NAME.match("HTTP response construction") is None  # an acronym
    assert LEAD_NAME.match("how the Mutex works") is None  # not the first word


@pytest.mark.parametrize(
    "question", ["Job interface and its lifecycle", "Job scheduling and its lifecycle"]
)
def test_codeask_search_ranks_the_named_definition_first(tmp_path: Path, question: str) -> None:
    hits = search_hits(tmp_path, FILES, question)
    assert hits[0]["relative_path"] == "src/Api.kt"
    assert "definition" in hits[0]["retrievers"]
