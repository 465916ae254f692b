"""Fixtures of the language-server tests (helpers live in tests/support/lsp_harness.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from support.lsp_harness import build_project


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The fixture repository, fresh for each test."""
    return build_project(tmp_path / "demo")


@pytest.fixture(scope="session")
def shared_cache(
    tmp_path_factory: pytest.TempPathFactory, seed_models: Callable[[Path], None]
) -> Path:
    """One XDG cache for tests that want warm embeddings (same fixture texts). It starts with
    the run's derived query and chunk models, as every test's own cache does: a server deriving
    them runs the quantizer at background priority, which a loaded machine starved for over
    90 s (the servers' wait_ready timed out; round 3 item 15)."""
    path = tmp_path_factory.mktemp("shared-xdg")
    seed_models(path)
    return path


@pytest.fixture
def private_cache(tmp_path: Path, seed_models: Callable[[Path], None]) -> Path:
    """A cache of this test only: every chunk is embedded for real (the models derived once
    per run are in place, as in shared_cache)."""
    path = tmp_path / "xdg"
    path.mkdir()
    seed_models(path)
    return path
