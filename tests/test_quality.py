"""ruff (lint + format) and mypy run as tests, so the one test command also gates code quality."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    found = BIN / name
    if found.exists():
        return str(found)
    located = shutil.which(name)
    if located is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]'")
    return located


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_lint() -> None:
    result = _run(_tool("ruff"), "check", "server", "tests", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run(_tool("ruff"), "format", "--check", "server", "tests", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy() -> None:
    result = _run(_tool("mypy"))
    assert result.returncode == 0, result.stdout + result.stderr
