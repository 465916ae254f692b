"""Adjust step `demote_paths`: tests, prose, illustrations and vendored code rank lower.

Tests and prose rank lower for code questions, never when the question asks for them, and
only slightly when its test words name code ("how does the test client handle cookies" means
the client, which its tests mention far more often than it does). Vendored copies and minified
bundles always rank lower: the project's own code is what a question is about.

Measured (benchmarks/README.md): prose, files without a grammar and vendored copies demoted
(the first table's "kept" rows), code under docs/examples demoted (Round 3: pasted reports R@5
.686, MRR .488), Go's `_examples/` +.008 (Round 10).
"""

from __future__ import annotations

import functools
import re

from codeask.core.records import HISTORY_KINDS
from codeask.core.search.query import QuerySignals
from codeask.core.search.steps.state import Candidates, Ranking, Searchable
from codeask.core.source.languages import has_grammar, language_for_path

#: Test code in the languages codeask reads: test folders (`tests/`, `__tests__/`, `spec/`),
#: `test_x.py`, `x_test.go`, `x_spec.rb`, `x.test.ts`, `x.spec.js`, `FooTest.java`,
#: `FooTests.cs`, `FooSpec.scala`, `FooSuite.scala`, `conftest.py`.
TEST_PATH = re.compile(
    r"(^|/)(tests?|testing|__tests__|specs?)(/|$)"
    r"|(^|/)test_[^/]*$"
    r"|_(tests?|spec)\.[a-z]+$"
    r"|\.(test|spec)\.[a-z]+$"
    r"|[a-z0-9](Tests?|Spec|Suite)\.[a-z]+$"
    r"|(^|/)conftest\.py$"
)
PROSE_LANGUAGES = frozenset({"markdown", "rst", "text"})
VENDORED = re.compile(
    r"(^|/)(vendor|vendored|third_party|thirdparty|bower_components)/"
    r"|[-.]v?\d+\.\d+(\.\d+)?(\.min)?\.(js|css)$"
)
#: Code under these folders illustrates the project rather than implementing it (`_examples/`:
#: Go's convention for a folder the go tool skips).
EXAMPLES = re.compile(r"(^|/)_?(docs?|examples?|samples?|demos?)/")
DEMOTION = 0.5
#: Test files when a question's test words name code ("the test client"): code wins a tie.
TEST_MODIFIER_DEMOTION = 0.8


def is_test_path(path: str) -> bool:
    """tests/, test_x.py, x_test.go, conftest.py ..."""
    return bool(TEST_PATH.search(path))


def demote_paths(ranking: Ranking) -> None:
    """Every candidate's score × its file's demotion (1.0 for most files: nothing to do)."""
    found, fused = ranking.found, ranking.found.fused
    for path, chunks in found.by_path.items():
        factor = demoted(ranking.folder, found, path, ranking.signals)
        if factor != 1.0:  # most candidates' files are not demoted: nothing to multiply
            for chunk in chunks:
                if chunk.kind not in HISTORY_KINDS:
                    fused[chunk.id] *= factor


@functools.lru_cache(maxsize=65536)
def _has_grammar(path: str) -> bool:
    """Code (a tree-sitter language) rather than prose or data; cached: it runs per candidate."""
    return language_for_path(path) is not None


def demoted(folder: Searchable, found: Candidates, path: str, signals: QuerySignals) -> float:
    """`demotion`, remembered for the rest of this question."""
    factor = found.demotions.get(path)
    if factor is None:
        factor = found.demotions[path] = demotion(folder, path, signals)
    return factor


def demotion(folder: Searchable, path: str, signals: QuerySignals) -> float:
    """The factor of `path`'s candidates for this question (`retrieve.demote_tests`,
    `retrieve.demote_prose`)."""
    settings = folder.settings.retrieve
    record = folder.storage.file(path)
    if not settings.demote_tests:
        tests = 1.0
    elif not signals.about_tests:
        tests = DEMOTION
    else:
        tests = TEST_MODIFIER_DEMOTION if signals.tests_as_modifier else 1.0
    prose = settings.demote_prose and not signals.about_docs
    return path_demotion(path, record.language if record else "", tests, prose)


@functools.lru_cache(maxsize=65536)
def path_demotion(path: str, language: str, tests: float, prose: bool) -> float:
    """The path's demotion (cached: it runs for every candidate chunk of every query)."""
    factor = tests if is_test_path(path) else 1.0
    if prose:
        code = _has_grammar(path) or has_grammar(language)  # `bin/tool`: its `#!` line's
        if language in PROSE_LANGUAGES:
            factor *= DEMOTION
        if not code:
            factor *= DEMOTION
        if EXAMPLES.search(path) and code:
            factor *= DEMOTION  # doc/conf.py, examples/demo.py: illustrations, not the code
    if VENDORED.search(path):
        factor *= DEMOTION
    return factor
