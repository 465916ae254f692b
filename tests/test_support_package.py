"""tests/support is the one place the tests share code from (issue 43): one way to run codeask,
no test editing sys.path to reach another folder's helpers, no test importing the benchmarks
for shared logic, and benchmarks that take what they share with the tests from tests/support."""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import PYTHON_M, codeask, in_process_env

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
CORPORA = (TESTS / "data",)  # frozen copies of other code: data, not our tests

#: Tests of a benchmark itself may import it (each names the module it tests).
BENCHMARK_TESTS = {
    "test_debian_history.py",
    "test_search_compare.py",
    "test_scale_bench.py",
    "test_scale_reports.py",
    "test_search_eval_smoke.py",
    "test_side_by_side.py",
}
#: The one runner, and the tests that must spell the command out: the control case of
#: test_workspace_shadowing runs a bare `python -m codeask` to show the workspace shadows it;
#: test_daemon_operations runs both entry points (`-m codeask`, `-m codeask.cli`) side by side.
SPELLED_OUT = {
    TESTS / "support" / "cli.py",
    TESTS / "hostile" / "test_workspace_shadowing.py",
    TESTS / "daemon" / "test_daemon_operations.py",
    Path(__file__).resolve(),  # the pattern it looks for
}


def python_files(*roots: Path) -> Iterator[Path]:
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if not any(path.is_relative_to(data) for data in CORPORA):
                yield path


def calls_sys_path(tree: ast.AST) -> list[int]:
    """Lines that call `sys.path.<anything>(...)` (insert, append, extend)."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Attribute)
        and node.func.value.attr == "path"
        and isinstance(node.func.value.value, ast.Name)
        and node.func.value.value.id == "sys"
    ]


def imported_modules(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_no_test_or_benchmark_edits_sys_path() -> None:
    found = {
        str(path.relative_to(REPO)): lines
        for path in python_files(TESTS, REPO / "benchmarks")
        if (lines := calls_sys_path(ast.parse(path.read_text(), str(path))))
    }
    assert found == {}, "import from tests/support (or tests.support) instead"


def test_tests_do_not_import_the_benchmarks() -> None:
    found = {
        str(path.relative_to(REPO)): sorted(bench)
        for path in python_files(TESTS)
        if path.name not in BENCHMARK_TESTS
        and (
            bench := {
                name
                for name in imported_modules(ast.parse(path.read_text(), str(path)))
                if name == "benchmarks" or name.startswith("benchmarks.")
            }
        )
    }
    assert found == {}, "move what the tests share into tests/support or codeask"


def test_one_way_to_run_codeask() -> None:
    """No test spells out its own `python -m codeask` command line: support.codeask runs it, and
    support.PYTHON_M names it for the long-running servers a harness starts."""
    spelled = {
        str(path.relative_to(REPO))
        for path in python_files(TESTS)
        if path not in SPELLED_OUT and '"-m", "codeask"' in path.read_text()
    }
    assert spelled == set()


def test_the_benchmarks_load_their_shared_code_from_tests_support() -> None:
    """What the benchmarks share with the tests (the child environment, the LSP harness, the
    llama.cpp launcher) imports from the repository root with no path set up."""
    modules = ("benchmarks.lsp_bench", "benchmarks.ask_bench", "benchmarks.scale")
    script = "import sys\n" + "".join(f"import {m}\n" for m in modules)
    script += "print(sorted(m for m in sys.modules if m.startswith('tests.')))"
    done = codeask(
        "-c", script, cwd=REPO, env=in_process_env(PYTHONPATH=""), launcher=(sys.executable,)
    )
    assert done.returncode == 0, done.stderr
    assert "'tests.support.env'" in done.stdout and "'tests.llama_server'" in done.stdout


def test_the_runner_runs_codeask_in_process_with_this_tests_cache(
    isolated_cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A setting in the caller's environment does not reach the child; the daemon is off;
    the child's XDG cache is this test's private one."""
    monkeypatch.setenv("CODEASK_DAEMON__ENABLED", "true")
    monkeypatch.setenv("CODEASK_LLM__MODEL", "from-the-outer-shell")
    script = "import json, os; print(json.dumps(dict(os.environ)))"
    seen = json.loads(codeask("-c", script, launcher=(sys.executable,), check=True).stdout)
    assert seen["CODEASK_DAEMON__ENABLED"] == "false"
    assert "CODEASK_LLM__MODEL" not in seen
    assert seen["XDG_CACHE_HOME"] == str(isolated_cache)
    (tmp_path / "a.py").write_text("def greet():\n    return 'hello'\n")
    indexed = codeask("index", "--lexical-only", "--json", str(tmp_path), cwd=tmp_path)
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)[0]["files_indexed"] == 1
    assert PYTHON_M[1:] == ("-m", "codeask")


def test_check_fails_the_test_with_what_codeask_said(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="invalid choice: 'frobnicate'"):
        codeask("frobnicate", cwd=tmp_path, check=True)
