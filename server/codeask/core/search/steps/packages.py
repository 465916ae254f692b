"""Adjust step `lift_named_package`: a package the report names by a rare word leads.

A report about one subsystem often names it by its package's name ("the output of pyreverse"),
a word few of the project's files use, while the ranking follows the report's common words
(type hints, classes, defaults) into the big modules every report touches. For each folder of
the candidate files (not tests, not vendored) whose name, at least MIN_NAME letters, the report
uses at least NAMED_TIMES times as a word, when none of the folder's files is among the
LEAD_FILES best and the word is rare in the project (at most RARE_SHARE of the indexed files
hold it, counted by the lexical index), each of the folder's candidate files has its best
candidate lifted by `retrieve.package_weight` × the best score (at 1.0 the package leads, its
files in their own order). Reports only: a typed question's file words are `lift_file_prior`'s.

Measured (benchmarks/README.md, Round 21): Python reports dev (74), first pass, R@5 .899 → .905,
MRR .735 → .739, R@10 .912 → .926: one question moves (pylint-4551 "output of pyreverse": its
four answer files 23/24/36/39 → 3/4/6/7); weight 0.25 / 0.5 move them less (R@5 .899); a word
held by at most 2 % or 5 % of the files: the same; 10 %: sphinx R@5 .889 → .870 ("html",
"extensions"); 1 %: nothing fires. Named once instead of twice: the same. The multi-language
set (159) scores identically per question, eval-search's run file is byte-identical. The
evidence is one question of one project: a guard (rare word, folder not found) more than a gain.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from codeask.core.search.steps.siblings import folder_files, named_words
from codeask.core.search.steps.state import Ranking, leading

#: A folder with a file among these best files is already found.
LEAD_FILES = 5
#: Folder names this short ("api", "lib") are words in every report.
MIN_NAME = 4
#: The share of the indexed files that may hold the word for it to count as rare.
RARE_SHARE = 0.02
#: How often the report must use the folder's name as a word.
NAMED_TIMES = 2


def lift_named_package(ranking: Ranking) -> None:
    """See the module's docstring."""
    found, fused = ranking.found, ranking.found.fused
    weight = ranking.folder.settings.retrieve.package_weight
    if not ranking.lexical or not ranking.signals.report or weight <= 0 or not fused:
        return
    best = {p: b for p, b in found.file_scores().items() if b > 0}
    words = named_words(ranking.signals.text, NAMED_TIMES)
    lead = {PurePosixPath(p).parent for p in leading(best, LEAD_FILES)}
    storage, top = ranking.folder.storage, max(fused.values())
    most = max(1, int(RARE_SHARE * storage.counts().files))
    for folder, files in folder_files(best).items():
        name = folder.name.lower()
        if len(name) < MIN_NAME or name not in words or folder in lead:
            continue
        if len(storage.lexical_files(name, most + 1)) > most:
            continue
        for path in files:
            live = [c for c in found.by_path[path] if c.id in fused]
            target = max(live, key=lambda c: fused[c.id])
            fused[target.id] += weight * top
            found.found_by[target.id].append("package")
