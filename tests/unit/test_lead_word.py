"""core/search/lead_word.py: a short question's first word names its subject, so the file
named for it gains a larger file-name lift than a file named for a later word.

The end-to-end case is the real CLI as processes (`codeask index`, `codeask search --json`) on a
git repository the test makes: "Mutex and Semaphore for synchronization" asked of `Mutex.kt`
and `Semaphore.kt` (whose text says "synchronization" twice); before the rule `Semaphore.kt`
ranked first.
"""

from __future__ import annotations

from pathlib import Path

from codeask.core.search.lead_word import LEAD_LIFT, lead_factor, lead_word
from codeask.core.search.name_match import question_words
from support.search_cli import ranked_files, search_hits

FILES = {
    "sync/Mutex.kt": "/** One owner at a time. */\nclass Mutex {\n"
    "    fun lock() {}\n    fun unlock() {}\n}\n",
    "sync/Semaphore.kt": "/** Synchronization of a fixed number of permits: synchronization for"
    " many owners. */\nclass Semaphore(val permits: Int) {\n"
    "    fun acquire() {}\n    fun release() {}\n}\n",
    **{
        f"sync/Util{i}.kt": f"fun helper{i}(value: Int): String = value.toString()\n"
        for i in range(1, 5)
    },
}


def test_the_lead_word_is_the_first_name_word_said() -> None:
    question = "how the Mutex and Semaphore work"
    assert lead_word(question, question_words(question)) == "mutex"
    assert lead_word("how it is", question_words("how it is")) == ""


def test_a_file_named_for_the_lead_word_gains_the_lift() -> None:
    assert lead_factor("mutex", "sync/Mutex.kt") == 1.0 + LEAD_LIFT
    assert lead_factor("mutex", "sync/Semaphore.kt") == 1.0
    assert lead_factor("", "sync/Mutex.kt") == 1.0


def test_codeask_search_ranks_the_file_named_first_first(tmp_path: Path) -> None:
    hits = search_hits(tmp_path, FILES, "Mutex and Semaphore for synchronization")
    assert ranked_files(hits)[:2] == ["sync/Mutex.kt", "sync/Semaphore.kt"]
