"""Fixtures of the language-server tests (helpers live in lsp_harness.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_harness import build_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The fixture repository, fresh for each test."""
    return build_project(tmp_path / "demo")


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One XDG cache for tests that want warm embeddings (same fixture texts)."""
    return tmp_path_factory.mktemp("shared-xdg")


@pytest.fixture
def private_cache(tmp_path: Path) -> Path:
    """A cache of this test only: everything is embedded for real."""
    path = tmp_path / "xdg"
    path.mkdir()
    return path
