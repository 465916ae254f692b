"""The packaged model tier ranks a pasted report only on code in a language where it was
measured to help (core/search/model_gate.py; benchmarks/README.md, `benchmarks.reports_eval`:
it lowered JavaScript reports and lifted Python ones).

The real CLI as processes (`codeask index --full`, `codeask search --json`) on git repositories
the test makes: the same bug report pasted into a JavaScript folder is ranked by the first pass
alone (no hit found by the model tier), into a Python folder with the model tier, and into the
JavaScript folder again with `retrieve.model_tier_for = reports` (every report, as before) by
the model.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from codeask.config import build_settings
from codeask.core.search.model_gate import main_language
from codeask.core.search.retrieve import model_tier_for
from support import codeask as run_codeask
from support import in_process_env
from support.gitrepo import ALICE, EPOCH, commit, make_repo

REPORT = (
    "Retry gives up after the first failure\n"
    "When the remote call fails once, the retry loop returns the error at once instead of "
    "waiting and trying again with a longer delay each time.\n"
    "Expected: it keeps trying until the attempts run out, doubling the wait.\n"
    "Seen on every request to the billing service since the last upgrade.\n"
)

JAVASCRIPT = {
    "net/retry.js": "// Call fn until it succeeds, doubling the delay.\n"
    "export function retry(fn, attempts) {\n  for (let i = 0; i < attempts; i++) {\n"
    "    try {\n      return fn();\n    } catch (err) {\n      continue;\n    }\n  }\n}\n",
    "billing/invoice.js": "// Sum the invoice lines with tax.\n"
    "export function total(lines) {\n  return lines.reduce((a, b) => a + b, 0) * 1.2;\n}\n",
}
PYTHON = {
    "net/retry.py": "def retry(fn, attempts):\n"
    '    """Call fn until it succeeds, doubling the delay."""\n'
    "    for _ in range(attempts):\n        try:\n            return fn()\n"
    "        except OSError:\n            continue\n",
    "billing/invoice.py": 'def total(lines):\n    """Sum the invoice lines with tax."""\n'
    "    return sum(lines) * 1.2\n",
}


def codeask(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_codeask(*args, cwd=root, env=env, timeout=600, check=True)


def retrievers(tmp_path: Path, files: dict[str, str], **settings: str) -> set[str]:
    """Every retriever that found a hit for REPORT in a fresh repository of `files`."""
    root = tmp_path / "repo"
    commit(make_repo(root), files, "code", ALICE, EPOCH)
    homes = {f"XDG_{name.upper()}_HOME": str(tmp_path / name) for name in ("config", "cache")}
    env = in_process_env(CODEASK_HISTORY__ENABLED="false", **homes, **settings)
    codeask(root, env, "index", "--full", str(root))
    found = json.loads(codeask(root, env, "search", REPORT, "--json", "--root", str(root)).stdout)
    assert found["results"], found
    return {name for hit in found["results"] for name in hit["retrievers"]}


@pytest.mark.slow
def test_a_report_on_javascript_code_is_ranked_without_the_packaged_model(tmp_path: Path) -> None:
    found = retrievers(tmp_path, JAVASCRIPT)
    assert "dense" not in found
    assert "static" in found


@pytest.mark.slow
def test_a_report_on_python_code_is_ranked_with_the_packaged_model(tmp_path: Path) -> None:
    assert "dense" in retrievers(tmp_path, PYTHON)


@pytest.mark.slow
def test_model_tier_for_reports_ranks_every_report_with_the_model(tmp_path: Path) -> None:
    assert "dense" in retrievers(tmp_path, JAVASCRIPT, CODEASK_RETRIEVE__MODEL_TIER_FOR="reports")


def test_the_folder_language_is_the_one_most_code_files_are_in() -> None:
    assert main_language(["a.go", "b.go", "c.py", "README.md", "d.md", "e.md"]) == "go"
    assert main_language(["a.py", "b.go"]) == "go"  # a tie: the first name, whatever the order
    assert main_language(["b.go", "a.py"]) == "go"
    assert main_language(["README.md", "notes.txt"]) == ""
    # headers follow the sources: C++ where C++ sources outnumber C ones, C otherwise
    assert main_language(["a.h", "b.h", "c.h", "d.cpp", "e.cc", "f.c"]) == "cpp"
    assert main_language(["a.h", "b.h", "c.c", "d.c", "qt.cpp"]) == "c"
    assert main_language(["a.h", "b.h", "c.c", "d.py"]) == "c"


def test_auto_is_measured_for_the_packaged_model_and_all_for_a_chosen_one() -> None:
    packaged, _ = build_settings({})
    assert model_tier_for(packaged) == "measured"
    chosen, _ = build_settings({"embed": {"model": "BAAI/bge-small-en-v1.5"}})
    assert model_tier_for(chosen) == "all"
