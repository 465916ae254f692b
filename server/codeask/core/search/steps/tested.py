"""Adjust step `lift_tested_subjects`: a report's best-matching test files point at their modules.

A report describes behaviour in the words the project's tests use for it (`test_cli.py`'s
"routes" and "subdomain", `test_unittest.py`'s "tearDown" and "skip"), so a test file often
matches a report better than the module it tests, and is then demoted as a test. Each test
file named `test_<module>` among the TESTED_AMONG best candidate files gives the module it is
named after (`rerank.subjects_of_test`) `retrieve.tested_weight` × the test file's best score,
on that module's best candidate. Reports only: a typed search names what it wants.

Measured (benchmarks/README.md, Round 20 "pasted reports"): Python reports dev (74), first
pass, MRR .670 → .679 (flask-5063 3 → 2, pytest-7236 2 → 1, no question lower; weight 2.0:
.684 with pytest-8906 2 → 3; the 20 best files: .661). Go's `x_test.go` read too lowered the
multi-language set's Go first pass MRR .901 → .858 (three cobra commits down, one chi up: a Go
test file sits beside its package's every file), so only the `test_` prefix is read; the
other languages of that set rank as before.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from codeask.core.search.rerank import subjects_of_test
from codeask.core.search.steps.demote import is_test_path
from codeask.core.search.steps.state import Ranking, leading

#: The best candidate files whose test files are read: further down, a test file matches
#: the report's incidental words.
TESTED_AMONG = 10
#: The test files read: `test_cli.py` (see the module's docstring for Go's `x_test.go`).
TEST_PREFIX = "test_"


def lift_tested_subjects(ranking: Ranking) -> None:
    """See the module's docstring."""
    found = ranking.found
    weight = ranking.folder.settings.retrieve.tested_weight
    if not ranking.lexical or not ranking.signals.report or weight <= 0 or not found.fused:
        return
    fused, storage = found.fused, ranking.folder.storage
    best = found.file_scores()
    leaders = leading(best, TESTED_AMONG)
    lift: dict[str, float] = {}
    for path in leaders:
        if is_test_path(path) and PurePosixPath(path).name.startswith(TEST_PREFIX):
            for subject in subjects_of_test(storage, path, is_test_path):
                lift[subject] = max(lift.get(subject, 0.0), weight * best[path])
    for subject, bonus in lift.items():
        live = [c for c in found.by_path.get(subject, ()) if c.id in fused]
        if live:
            target = max(live, key=lambda c: fused[c.id])
            fused[target.id] += bonus
            found.found_by[target.id].append("tested")
