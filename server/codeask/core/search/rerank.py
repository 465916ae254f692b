"""Ranking rules layered on the fusion in `retrieve`: each a small, separately tested function.

- `subjects_of_test`: a test file a question names (`tests/test_pycode_ast.py`: "add a test case
  here") points at the module it tests (`sphinx/pycode/ast.py`), by the naming conventions
  `test_<module>.py`, `test_<package>_<module>.py` and `<module>_test.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Protocol

#: A test file's stem without its `test_` prefix or `_test` / `_tests` suffix.
TEST_STEM = re.compile(r"^test_(?P<a>.+)$|^(?P<b>.+?)_tests?$")


class PathIndex(Protocol):
    """What `subjects_of_test` needs of an index (IndexReader provides it)."""

    def paths_named(self, key: str) -> list[str]: ...


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
