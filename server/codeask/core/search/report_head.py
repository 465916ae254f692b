"""A pasted report's head: the part of its text the lexical retrievers match.

A report states its problem first; what follows a few paragraphs in is mostly reproducer
output, logs and long tracebacks whose hundreds of incidental terms outvote the statement in
BM25 (the "long reports diluting BM25" class). The chunk BM25 list and the whole-file prior
therefore match only the report's first REPORT_HEAD_CHARS characters; the paths and
identifiers read from the whole report (tracebacks' frames, dotted names) and the query
vectors are unchanged, and a typed question is never cut.

Measured (benchmarks/README.md, Round 18 "pasted reports: the head"): Python reports dev (74),
first pass, R@1 .459 → .486, R@5 .858 → .858, R@10 .872 → .899, MRR .633 → .652 (8 questions
up, 2 down); the multi-language report set and eval-search rank exactly as before (their
questions are all within the head: commit messages are cleaned to 2,000 characters at most,
typed questions are not reports).
"""

from __future__ import annotations

from codeask.core.search.query import QuerySignals

#: Python reports first pass R@5 / MRR by head length in characters: 1,200 .818 / .649, 1,500
#: .858 / .670, 1,750 .845 / .658, 2,000 .858 / .652, 2,500 .858 / .639, 3,000 .858 / .637,
#: whole text .858 / .633. 1,500 is this set's best, but it moves one Go commit message of the
#: multi-language set under the model tier (go default MRR .910 → .892, below its first pass
#: .901); 2,000 moves no question there.
REPORT_HEAD_CHARS = 2000


def lexical_text(signals: QuerySignals) -> str:
    """The text the lexical retrievers match: a report's head (cut at a space, so no word is
    halved), a typed question whole."""
    text = signals.text
    if not signals.report or len(text) <= REPORT_HEAD_CHARS:
        return text
    head = text[:REPORT_HEAD_CHARS]
    cut = max(head.rfind(" "), head.rfind("\n"))
    return head[:cut] if cut > 0 else head
