"""Adjust step `lift_deepest_frame`: a pasted traceback's deepest frame in the project.

A Python traceback lists its calls outermost first, and the fault is usually where the
project's own code last ran: the frame just above the library or the user's code that raised
(`_pytest/_io/saferepr.py` under twenty frames of `main.py` and `runner.py`). Every frame's
file is already lifted as a mention (`lift_mentioned_paths`), so the outer files, named as
often and as big, tie with it or win; this step lifts the deepest one further: the chunk of its
function (else its best candidate) gains `retrieve.frame_weight` × the best score. A frame
counts when its path resolves to exactly one workspace file that is neither a test nor
vendored. Reports only; three frame shapes: CPython's `File "p", line N, in f`, IPython's
`File p:N, in C.f(...)` and pytest's `p.py:N: in f`. Other languages' traces (Java's, Go's,
JavaScript's, innermost first) are not read.

Measured (benchmarks/README.md, Round 20 "pasted reports"): Python reports
dev (74), first pass, R@5 .858 → .872, MRR .652 → .670 (pytest-7168 7 → 1, seaborn-3010 2 → 1;
no question lower); the multi-language report set and eval-search unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from codeask.core.search.steps.demote import VENDORED, is_test_path
from codeask.core.search.steps.mentions import longest_known_suffix
from codeask.core.search.steps.releases import ReleasedCopies
from codeask.core.search.steps.state import Ranking
from codeask.core.storage.protocol import IndexReader

#: One traceback frame, in each of the three shapes the module's docstring names.
FRAME = re.compile(
    r'File "(?P<cpython>[^"\n]+)", line \d+, in (?P<cpython_func>[A-Za-z_]\w*)'
    r"|File (?P<ipython>[^\s,]+\.py):\d+, in (?:\w+\.)*(?P<ipython_func>[A-Za-z_]\w*)"
    r"|^(?P<pytest>[^\s:]+\.py):\d+: in (?P<pytest_func>[A-Za-z_]\w*)",
    re.M,
)


def frames(text: str) -> Iterator[tuple[str, str]]:
    """(path, function) of each frame in `text`, outermost first; paths with `/` separators and
    no leading `/` or `~/` (as a mention is matched)."""
    for match in FRAME.finditer(text):
        path = match["cpython"] or match["ipython"] or match["pytest"]
        func = match["cpython_func"] or match["ipython_func"] or match["pytest_func"]
        yield path.replace("\\", "/").lstrip("~/"), func


def deepest_frame(storage: IndexReader, text: str) -> tuple[str, str] | None:
    """The last frame whose path is one workspace file, not a test and not vendored (nor in a
    released copy, steps/releases.py): (that file, the frame's function); None when no frame is."""
    deepest = None
    copies = ReleasedCopies(storage)
    resolved: dict[str, list[str]] = {}  # a long log repeats its frames' paths
    for path, func in frames(text):
        if path not in resolved:
            resolved[path] = [
                name
                for name in longest_known_suffix(storage, path)
                if not is_test_path(name) and not VENDORED.search(name) and not copies.holds(name)
            ]
        if len(resolved[path]) == 1:
            deepest = (resolved[path][0], func)
    return deepest


def lift_deepest_frame(ranking: Ranking) -> None:
    """See the module's docstring."""
    found, signals = ranking.found, ranking.signals
    weight = ranking.folder.settings.retrieve.frame_weight
    if not ranking.lexical or not signals.report or weight <= 0 or not found.fused:
        return
    deepest = deepest_frame(ranking.folder.storage, signals.text)
    if deepest is None:
        return
    path, func = deepest
    live = [c for c in found.by_path.get(path, ()) if c.id in found.fused]
    if not live:
        return
    named = [c for c in live if c.symbol == func]
    target = max(named or live, key=lambda c: found.fused[c.id])
    found.fused[target.id] += weight * max(found.fused.values())
    found.found_by[target.id].append("frame")
