"""Adjust step `lift_quoted_phrases`: a report's words found verbatim in a leading file.

A report quotes the project: the error message or warning it printed, pasted in a fenced
block or a `>` quote ("Using pytest.skip outside of a test is not allowed"). Such a run of
words stands in the source once, where the message is raised, while BM25 scores its words one
by one, as common as they are. Among the PHRASE_AMONG best candidate files, each chunk that
holds runs of PHRASE_WORDS of the quoted words in the same order gains `retrieve.phrase_weight`
× the best score × (shared runs / FULL_RUNS, at most 1) × its file's demotion (tests, prose).
Only the leaders are re-ordered: over every candidate, a pasted linter log (pylint-7080: the
checkers that print its messages) pulled files from far down past the answer. Only quoted
text: the whole text also matched the compiler diagnostics commit messages quote unfenced
(`30 | FMT_FUNC void assert_fail(...)`: the multi-language set's Rust MRR .845 → .812, C++
.686 → .669). Reports only.

Measured (benchmarks/README.md, Round 20 "pasted reports"): Python reports dev (74), first
pass, MRR .679 → .714, R@1 .527 → .588, R@5 .872 = (flask-5063, pytest-8906, sphinx-9711,
xarray-4966 and sphinx-8551 to rank 1; requests-1724 3 → 4).
"""

from __future__ import annotations

import re

from codeask.core.records import HISTORY_KINDS
from codeask.core.search.steps.demote import demoted
from codeask.core.search.steps.state import Ranking, leading

#: Words per run (measured over every candidate, before the leaders rule: 5 words MRR .706, 6
#: words .712).
PHRASE_WORDS = 6
#: Shared runs for the whole lift (a message of ten words shares five runs).
FULL_RUNS = 4
#: The best candidate files re-ordered (5: MRR .707; every candidate: R@5 .872 → .858).
PHRASE_AMONG = 10
#: A word of a phrase: digits, punctuation and case are what a formatted message changes.
WORD = re.compile(r"[a-z][a-z0-9_]*")
#: A fence that opens or closes a pasted block, and a quoted line.
FENCE = re.compile(r"^\s*(```|~~~)")
QUOTE = re.compile(r"^\s*>")


def quoted(text: str) -> str:
    """The lines of `text` inside fenced blocks and `>` quotes: what a report pasted."""
    kept, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif fenced or QUOTE.match(line):
            kept.append(line)
    return "\n".join(kept)


def phrases(text: str) -> set[int]:
    """The text's runs of PHRASE_WORDS words, hashed (set members compared, never stored)."""
    words = WORD.findall(text.lower())
    return {hash(tuple(words[i : i + PHRASE_WORDS])) for i in range(len(words) - PHRASE_WORDS + 1)}


def shared_runs(text: str, vocabulary: set[str], pasted: set[int]) -> int:
    """How many of `pasted`'s runs `text` holds (`len(pasted & phrases(text))`): only the runs
    whose words are all in `vocabulary` are hashed: a chunk's other runs cannot match (92 → 48
    µs per chunk on sphinx's, the word split itself 32)."""
    words = WORD.findall(text.lower())
    found: set[int] = set()
    run = 0
    for end, word in enumerate(words, 1):
        run = run + 1 if word in vocabulary else 0
        if run >= PHRASE_WORDS:
            key = hash(tuple(words[end - PHRASE_WORDS : end]))
            if key in pasted:
                found.add(key)
    return len(found)


def lift_quoted_phrases(ranking: Ranking) -> None:
    """See the module's docstring."""
    found, signals = ranking.found, ranking.signals
    weight = ranking.folder.settings.retrieve.phrase_weight
    if not ranking.lexical or not signals.report or weight <= 0 or not found.fused:
        return
    text = quoted(signals.text)
    pasted, vocabulary = phrases(text), set(WORD.findall(text.lower()))
    if not pasted:
        return
    fused = found.fused
    best = found.file_scores()
    leaders = leading(best, PHRASE_AMONG)
    unit = weight * max(fused.values())
    seen: set[int] = set()
    for path in leaders:
        factor = demoted(ranking.folder, found, path, signals)
        for chunk in found.by_path[path]:
            if chunk.id not in fused or chunk.kind in HISTORY_KINDS or chunk.id in seen:
                continue
            seen.add(chunk.id)
            shared = shared_runs(chunk.text, vocabulary, pasted)
            if shared:
                fused[chunk.id] += unit * min(1.0, shared / FULL_RUNS) * factor
                found.found_by[chunk.id].append("phrase")
