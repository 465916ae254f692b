"""A short question's first word names its subject.

"Mutex and Semaphore for coroutine synchronization", "MIME type detection from file
extensions", "HTTP response construction and headers", "how git status changes are listed in a
picker": a question is written subject first, then what it wants to know about it. The
file-name lift (`retrieve._name_boosts`) weighs every word alike, so a file named for a later
word ties with (or beats, matching more words) the file named for the subject.
"""

from __future__ import annotations

from codeask.core.search.name_match import MIN_PREFIX, WORD, matches_any, name_heads, path_words

#: The file-name lift of a file whose name or folder the lead word matches is 1 + LEAD_LIFT
#: times as large. eval-search dev NDCG@10 .8981 → .9005 at 0.2 (13 questions up in 11
#: repositories, 9 down; java +.018, php +.012, ruby +.011, lua +.009, no language below
#: −.003); 0.1 .8993, 0.3 .9004 (typescript −.016, elixir −.009).
LEAD_LIFT = 0.2


def lead_word(question: str, words: frozenset[str]) -> str:
    """The first of the question's name words (`words`, `name_match.question_words`) in the
    order it says them; "" when it has none. (Test words skipped: typescript −.013, vitest's
    "test runner worker pool" then leads with "runner", lifting `poolRunner.ts`.)"""
    return next((w for w in (x.lower() for x in WORD.findall(question)) if w in words), "")


def lead_factor(lead: str, path: str) -> float:
    """**Lead word**: the file-name lift × (1 + LEAD_LIFT) when the question's lead word
    matches the file's name or folder (as the file-name lift matches words)."""
    if not lead:
        return 1.0
    names = path_words(path)
    said = lead[:MIN_PREFIX] in name_heads(names) and matches_any(lead, names)
    return 1.0 + LEAD_LIFT if said else 1.0
