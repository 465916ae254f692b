"""Ranking rules layered on the fusion in `retrieve`: each a small, separately tested function.

- `blend_lead`: a pasted report's query vector leans toward its lead line (the issue's title).
  The whole report is a poor dense query: MiniLM reads its first 256 word pieces, mostly the
  reproducer and the log, and the summary that says what is wrong is a small part of them.
  The lexical side already searches the lead on its own (`retrieve.lead_weight`); this is the
  same idea for the dense side, as one blended vector rather than a second dense list (a
  second list lifted recall but cost R@1 and MRR on the dev set, benchmarks/README.md).
- `subjects_of_test`: a test file a question names (`tests/test_pycode_ast.py`: "add a test case
  here") points at the module it tests (`sphinx/pycode/ast.py`), by the naming conventions
  `test_<module>.py`, `test_<package>_<module>.py` and `<module>_test.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Protocol

import numpy as np

#: A test file's stem without its `test_` prefix or `_test` / `_tests` suffix.
TEST_STEM = re.compile(r"^test_(?P<a>.+)$|^(?P<b>.+?)_tests?$")


class PathIndex(Protocol):
    """What `subjects_of_test` needs of an index (IndexReader provides it)."""

    def paths_named(self, key: str) -> list[str]: ...


def blend_lead(text_vector: np.ndarray, lead_vector: np.ndarray, weight: float) -> np.ndarray:
    """The unit vector of `text_vector + weight × lead_vector` (both unit vectors): the
    report's meaning with its summary counted again; weight 0 returns `text_vector`."""
    if weight <= 0:
        return text_vector
    blended = text_vector.astype(np.float32) + np.float32(weight) * lead_vector.astype(np.float32)
    norm = float(np.linalg.norm(blended))
    if norm == 0.0:
        return text_vector
    return (blended / norm).astype(text_vector.dtype)


def subjects_of_test(index: PathIndex, test_path: str, is_test: Callable[[str], bool]) -> list[str]:
    """The non-test files that the test file `test_path` is named after, most specific
    reading first: `tests/test_pycode_ast.py` → `pycode/ast.py` if such a file exists, else
    `pycode_ast.py`. `is_test(path)` tells test files apart (they are never a subject).
    [] when the name follows no test convention or names no workspace file."""
    pure = PurePosixPath(test_path)
    match = TEST_STEM.match(pure.stem)
    if match is None:
        return []
    stem = match.group("a") or match.group("b")
    parts = stem.split("_")
    # `a_b_c` may be the module a/b/c, a/b_c or a_b_c: the deepest reading that names a file
    # wins. The last word alone is not tried: `test_ext_autodoc_configs` is not about any
    # `configs.py`.
    readings = ["/".join([*parts[:i], "_".join(parts[i:])]) for i in range(len(parts) - 1, -1, -1)]
    for reading in readings:
        found = [p for p in index.paths_named(reading + pure.suffix) if not is_test(p)]
        if found:
            return found
    return []
