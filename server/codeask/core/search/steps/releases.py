"""Adjust step `demote_released_copies`: a released library copied inside the project ranks lower.

A project that ships a copy of another library (requests' `requests/packages/urllib3` and
`chardet`, pip's `_vendor/*`) holds that library's modules under a folder whose name says
nothing (`packages/`), so `demote_paths`' folder names miss it; the copy's own words then
win over the project's (a report quoting urllib3's exception outranks requests' adapter that
wraps it). What marks a copy in any Python project is that it was released on its own: a package
nested in another package whose `__init__.py` assigns `__version__`. Its candidates are
demoted as vendored code is (`demote.DEMOTION`), for every question, and a traceback's frame in
it is not the project's deepest (`frames.deepest_frame`). The project's own top package
(`requests/__init__.py`, also versioned) is not nested, so it is never demoted. Other
languages' copies (a nested `package.json`, `go.mod`) are not read: in a monorepo every
package has one.

Measured (benchmarks/README.md, Round 20 "pasted reports"): Python reports dev (74), first
pass, MRR .714 → .722 (requests-1724 4 → 3, 2674 5 → 2, 3362 3 → 2; no question lower).
The multi-language report set (no Python) and eval-search (none of its 41 repositories holds
such a package) rank exactly as before; query p50 5.5 ms before and after.
"""

from __future__ import annotations

import re

from codeask.core.records import HISTORY_KINDS
from codeask.core.search.steps.demote import DEMOTION
from codeask.core.search.steps.state import Ranking
from codeask.core.storage.protocol import IndexReader

#: A module-level `__version__ = ...`: the package was released on its own.
VERSION = re.compile(r"^__version__\s*=", re.M)
INIT = "__init__.py"


class ReleasedCopies:
    """Which folders are nested released packages, each folder's answer read once per
    question (its `__init__.py`'s chunks). Paths are cut as strings: it runs for every
    question, and pathlib cost ~1.7 ms of a 5 ms typed question (eval-search, round 20)."""

    def __init__(self, storage: IndexReader) -> None:
        self.storage = storage
        self.known: dict[str, bool] = {}

    def released(self, folder: str) -> bool:
        """`folder` and its parent are packages, and `folder/__init__.py` sets `__version__`."""
        known = self.known.get(folder)
        if known is None:
            init, parent = f"{folder}/{INIT}", f"{folder.rsplit('/', 1)[0]}/{INIT}"
            nested = self.storage.file(init) and self.storage.file(parent)
            known = self.known[folder] = bool(nested) and any(
                VERSION.search(chunk.text) for chunk in self.storage.chunks_of(init)
            )
        return known

    def holds(self, path: str) -> bool:
        """`path` lies in a nested released package (at any depth below it)."""
        cut = path.rfind("/")
        while cut > 0:
            folder = path[:cut]
            if "/" in folder and self.released(folder):  # nested: two parts or more
                return True
            cut = path.rfind("/", 0, cut)
        return False


def demote_released_copies(ranking: Ranking) -> None:
    """See the module's docstring."""
    found, fused = ranking.found, ranking.found.fused
    copies = ReleasedCopies(ranking.folder.storage)
    for path, chunks in found.by_path.items():
        if copies.holds(path):
            for chunk in chunks:
                if chunk.kind not in HISTORY_KINDS and chunk.id in fused:
                    fused[chunk.id] *= DEMOTION
