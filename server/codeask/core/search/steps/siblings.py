"""Adjust step `lift_named_sibling`: the module a report keeps naming leads its folder.

Sibling modules of one package share their vocabulary (sphinx's `domains/cpp.py`, `c.py` and
`python.py` all parse signatures and make cross-references; pytest's `python.py` and
`pytester.py` both collect), so the one a report is about often ranks below a bigger sibling,
while the report says which it is by naming it: "Python" a dozen times in a report about
Python signatures. For each folder holding one of the SIBLINGS_AMONG best candidate files,
when exactly one of its candidate files (not a test, not vendored) has a stem of at least
MIN_STEM letters that the report uses at least NAMED_TIMES times as a word, and a sibling
ranks above it, that file's best candidate takes the folder's best score plus
`retrieve.sibling_weight` × the best score. Reports only: a typed search's words are few and
its file names are read by `lift_file_prior`.

Measured (benchmarks/README.md, Round 20 "pasted reports"): Python reports dev (74), first
pass, R@5 .872 → .885, MRR .722 → .732, R@1 .588 → .601 (pytest-6197 3 → 1, sphinx-7454 7 → 3,
8056 27 → 10; 9591 and 9602 3 → 4). A word named twice: R@5 .899 but MRR .720, and the
multi-language set's C++ and Rust MRR −.011/−.016; four or five times: R@5 .885, MRR .725.
Multi-language set (first pass in the harness): Rust MRR .845 → .837, the others unchanged;
eval-search unchanged (no typed question is a report).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePosixPath

from codeask.core.search.steps.demote import VENDORED, is_test_path
from codeask.core.search.steps.state import Ranking, leading

#: The best candidate files whose folders are read.
SIBLINGS_AMONG = 10
#: How often the report must use a file's stem as a word (once: "run", "html", "typing" in
#: passing; twice: see the module's docstring).
NAMED_TIMES = 3
#: Stems this short ("c", "io") are words in every report.
MIN_STEM = 3
WORD = re.compile(r"[a-z][a-z0-9_]+")


def named_words(text: str) -> set[str]:
    """The lowercase words `text` uses at least NAMED_TIMES times."""
    counts = Counter(WORD.findall(text.lower()))
    return {word for word, n in counts.items() if n >= NAMED_TIMES}


def folder_files(best: dict[str, float]) -> dict[PurePosixPath, list[str]]:
    """The candidate files (not tests, not vendored) by folder."""
    folders: dict[PurePosixPath, list[str]] = {}
    for path in best:
        if not is_test_path(path) and not VENDORED.search(path):
            folders.setdefault(PurePosixPath(path).parent, []).append(path)
    return folders


def lift_named_sibling(ranking: Ranking) -> None:
    """See the module's docstring."""
    found, fused = ranking.found, ranking.found.fused
    weight = ranking.folder.settings.retrieve.sibling_weight
    if not ranking.lexical or not ranking.signals.report or weight <= 0 or not fused:
        return
    best = found.file_scores()
    best = {p: b for p, b in best.items() if b > 0}
    leaders = leading(best, SIBLINGS_AMONG)
    words, folders, top = named_words(ranking.signals.text), folder_files(best), max(fused.values())
    for folder in {PurePosixPath(p).parent for p in leaders}:
        siblings = folders.get(folder, [])
        named = [
            p
            for p in siblings
            if len(stem := PurePosixPath(p).stem) >= MIN_STEM and stem.lower() in words
        ]
        if len(siblings) < 2 or len(named) != 1:
            continue
        lead = max(best[p] for p in siblings)
        if best[named[0]] < lead:
            target = max(
                (c for c in found.by_path[named[0]] if c.id in fused), key=lambda c: fused[c.id]
            )
            fused[target.id] = lead + weight * top
            found.found_by[target.id].append("sibling")
