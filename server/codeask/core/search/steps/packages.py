"""Adjust step `lift_prose_named_package`: a package the report's sentences name leads.

A report about one subsystem often names it by its package's name in its own sentences ("It
seems that pyreverse does not read type hints", "Output of pyreverse"), a word few of the
project's files use, while the ranking follows the report's common words (type hints, classes,
defaults) into the big modules every report touches. Round 21's `lift_named_package` counted
the name anywhere in the report and so read a log's boilerplate as intent ("BUG: KASAN:" →
mm/kasan, "Modules linked in: i915" → the i915 driver, "Hardware name: Google ..." → a docs
folder). This step counts only the report's prose: lines outside code fences, not indented
(traces, logs and quoted code are), of at least PROSE_WORDS words of which at least PROSE_SHARE
are plain English words (`query.prose_share`), and the name only as such a word (letters, a
capital at most first: not `KASAN`, `i915`, `foo_bar`). A folder (not tests, not vendored)
holding candidate files, whose name of at least MIN_NAME letters appears in at least
NAMED_LINES distinct prose lines, none of whose files is among the LEAD_FILES best, and whose
name is rare in the project (at most RARE_SHARE of the indexed files hold it, counted by the
lexical index) has each of its candidate files' best candidate lifted by
`retrieve.package_weight` × the best score. Reports only.

Measured (benchmarks/README.md, Round 22): Python reports dev (74), first pass, R@5 .899 → .905,
MRR .735 → .739, R@10 .912 → .926: one question moves (pylint-4551 "Output of pyreverse": its
four answer files 23/24/36/39 → 3/4/6/7), none lower. The kernel's 8 pasted reports rank as
before (R@5 1.00, MRR .82: their prose names no rare folder twice; the words that fired round
21's rule are an acronym, a name with digits and a header line). The multi-language set (159)
scores identically per question; eval-search's run file is byte-identical (no typed question
is a report). The gain is one question of one project: a guard more than a proof.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePosixPath

from codeask.core.search.query import PROSE_WORD, prose_share
from codeask.core.search.steps.siblings import folder_files
from codeask.core.search.steps.state import Ranking, leading

#: A folder with a file among these best files is already found.
LEAD_FILES = 5
#: Folder names this short ("api", "lib") are words in every report.
MIN_NAME = 4
#: The share of the indexed files that may hold the word for it to count as rare.
RARE_SHARE = 0.02
#: In how many distinct prose lines the report must use the folder's name.
NAMED_LINES = 2
#: A prose line: this many words at least, this share of them plain English words.
PROSE_WORDS = 3
PROSE_SHARE = 0.6
FENCE = re.compile(r"^\s*(```|~~~)")
TRIM = re.compile(r"^[(\"']+|[.,;:!?)\"']+$")


def prose_lines(text: str) -> list[str]:
    """The lines of `text` that read as the reporter's own sentences: outside fences, not
    indented, PROSE_WORDS words or more, PROSE_SHARE of them plain words."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced or not line.strip() or line[0].isspace():
            continue
        if len(line.split()) >= PROSE_WORDS and prose_share(line) >= PROSE_SHARE:
            lines.append(line)
    return lines


def prose_named(text: str) -> set[str]:
    """The plain words (lowercased) of `text`'s prose lines found in NAMED_LINES of them."""
    counts: Counter[str] = Counter()
    for line in prose_lines(text):
        words = {TRIM.sub("", w).lower() for w in line.split() if PROSE_WORD.match(w)}
        counts.update(words)
    return {word for word, n in counts.items() if n >= NAMED_LINES}


def lift_prose_named_package(ranking: Ranking) -> None:
    """See the module's docstring."""
    found, fused = ranking.found, ranking.found.fused
    weight = ranking.folder.settings.retrieve.package_weight
    if not ranking.lexical or not ranking.signals.report or weight <= 0 or not fused:
        return
    best = {p: b for p, b in found.file_scores().items() if b > 0}
    words = prose_named(ranking.signals.text)
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
