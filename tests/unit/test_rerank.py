"""Ranking rules on top of the fusion: the lead-blended query vector and the subjects of
named test files."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from test_retrieve import make_folder

from codeask.config import build_settings
from codeask.core.embedding.blend import blend_lead
from codeask.core.embedding.embed import CachedEmbedder, EmbeddingCache
from codeask.core.search.rerank import subjects_of_test
from codeask.core.search.retrieve import _minilm_query, is_test_path, path_keys, rank_files, search


class Paths:
    """`paths_named` over a list of paths, keyed like the index's symbol table."""

    def __init__(self, paths: list[str]) -> None:
        self.by_key: dict[str, list[str]] = defaultdict(list)
        for path in paths:
            for key in path_keys(path):
                self.by_key[key].append(path)

    def paths_named(self, key: str) -> list[str]:
        return self.by_key.get(key, [])


def unit(values: list[float]) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_blend_leans_toward_the_lead_and_stays_a_unit_vector() -> None:
    text, lead = unit([1.0, 0.0, 0.0]), unit([0.0, 1.0, 0.0])
    half = blend_lead(text, lead, 0.5)
    full = blend_lead(text, lead, 1.0)
    assert abs(float(np.linalg.norm(half)) - 1.0) < 1e-6
    assert half.dtype == text.dtype
    assert float(half @ lead) < float(full @ lead) < 1.0
    assert float(half @ text) > float(half @ lead) > 0.0
    np.testing.assert_allclose(full, unit([1.0, 1.0, 0.0]), atol=1e-6)


def test_blend_weight_zero_or_opposite_vectors_keep_the_text_vector() -> None:
    text = unit([0.6, 0.8])
    assert blend_lead(text, unit([1.0, 0.0]), 0.0) is text
    assert blend_lead(text, -text, 1.0) is text  # they cancel: no direction left to blend


def test_a_test_file_points_at_the_module_it_is_named_after() -> None:
    index = Paths(
        [
            "sphinx/pycode/ast.py",
            "sphinx/pycode/parser.py",
            "sphinx/util/inspect.py",
            "tests/test_pycode_ast.py",
            "tests/test_util_inspect.py",
            "pkg/server.go",
            "pkg/server_test.go",
            "src/helpers.py",
            "tests/helpers.py",
            "tests/test_helpers.py",
        ]
    )
    assert subjects_of_test(index, "tests/test_pycode_ast.py", is_test_path) == [
        "sphinx/pycode/ast.py"
    ]
    assert subjects_of_test(index, "tests/test_util_inspect.py", is_test_path) == [
        "sphinx/util/inspect.py"
    ]
    assert subjects_of_test(index, "pkg/server_test.go", is_test_path) == ["pkg/server.go"]
    # the subject is never itself a test file: tests/helpers.py is a test helper
    assert subjects_of_test(index, "tests/test_helpers.py", is_test_path) == ["src/helpers.py"]


def test_no_subject_without_a_convention_or_a_file() -> None:
    index = Paths(["sphinx/pycode/ast.py", "tests/conftest.py", "tests/test_build_html.py"])
    assert subjects_of_test(index, "tests/conftest.py", is_test_path) == []
    assert subjects_of_test(index, "tests/test_build_html.py", is_test_path) == []
    assert subjects_of_test(index, "sphinx/pycode/ast.py", is_test_path) == []


def test_a_report_naming_a_test_file_finds_the_tested_module(tmp_path: Path) -> None:
    """The report points at the test to extend; the fix is in the module it tests, which
    shares no word with the report."""
    files = {
        "pkg/pycode/ast.py": "def unparse(node):\n    return ', '.join(map(str, node.elts))\n",
        "pkg/writers/html.py": "def visit_tuple_rendered(node):\n"
        "    '''A tuple is rendered incorrectly without its trailing comma.'''\n",
        "tests/test_pycode_ast.py": "def test_unparse():\n    assert True\n",
    }
    folder = make_folder(tmp_path, files)
    report = (
        "1-element tuple rendered incorrectly\n"
        "The trailing comma is lost.\n"
        "Add a testcase at https://github.com/x/y/blob/abc/tests/test_pycode_ast.py#L57\n"
    )
    hits = search([folder], report, mode="lexical", k=10).hits
    ranked = [path for path, _ in rank_files(hits)]
    assert "pkg/pycode/ast.py" in ranked[:2]
    assert "path" in next(h for h in hits if h.path == "pkg/pycode/ast.py").retrievers
    assert ranked.index("pkg/pycode/ast.py") < ranked.index("tests/test_pycode_ast.py")
    # without the link the module shares no word with the report and is not found at all
    unlinked = report.replace("tests/test_pycode_ast.py", "")
    hits = search([folder], unlinked, mode="lexical", k=10).hits
    assert "pkg/pycode/ast.py" not in {h.path for h in hits}
    folder.close()


class FixedEmbedder:
    """One fixed vector per text, so the blend can be checked exactly (a model without a query
    path of its own: the lead is embedded beside the text and blended in)."""

    name, dim = "fixed", 2

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str], lanes: int = 1) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.vectors[t] for t in texts])


def test_the_minilm_query_blends_a_reports_lead_by_its_setting(tmp_path: Path) -> None:
    settings, _ = build_settings({})
    text, lead = unit([1.0, 0.0]), unit([0.0, 1.0])
    embedder = FixedEmbedder({"whole report": text, "the title": lead})
    cached = CachedEmbedder(embedder, EmbeddingCache(tmp_path / "cache.sqlite", 2))
    folder = SimpleNamespace(settings=settings, embedder=cached)
    blended = _minilm_query(folder, "whole report", "the title")  # type: ignore[arg-type]
    weight = settings.retrieve.lead_dense_weight
    assert weight > 0
    np.testing.assert_allclose(blended, blend_lead(text, lead, weight), atol=1e-6)
    assert embedder.calls == [["whole report", "the title"]]
    # a typed search has no lead; weight 0 turns the blend off: one model call, the text's vector
    calls = len(embedder.calls)
    np.testing.assert_array_equal(_minilm_query(folder, "whole report", ""), text)  # type: ignore[arg-type]
    assert embedder.calls[calls:] == [["whole report"]]
    settings.retrieve.lead_dense_weight = 0.0
    calls = len(embedder.calls)
    np.testing.assert_array_equal(
        _minilm_query(folder, "whole report", "the title"),  # type: ignore[arg-type]
        text,
    )
    assert embedder.calls[calls:] == [["whole report"]]


def test_example_folders_are_illustrations_in_every_spelling() -> None:
    """`examples/`, `docs/`, `demo/` and Go's `_examples/` (a folder the go tool skips) hold code
    that shows the project rather than implements it; a name that merely starts alike does not."""
    from codeask.core.search.steps.demote import DEMOTION, path_demotion

    for path in ("_examples/router-walk/main.go", "examples/app.py", "docs/conf.py", "demo/x.rs"):
        assert path_demotion(path, "", 1.0, True) == DEMOTION, path
    for path in ("middleware/route_headers.go", "src/example_utils.py", "lib/_docs_helper.rb"):
        assert path_demotion(path, "", 1.0, True) == 1.0, path
