"""Shared fixtures: every test gets its own user cache folder (with the derived int8 query
model linked in, as on a machine that has run codeask before)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# The packaged model never needs the network; make any accidental hub call fail fast.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def derived_query_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The int8 query model and its sidecar, derived once per test session (~2 s): deriving it in
    every test's fresh cache would cost minutes. Its derivation is tested in
    tests/unit/test_query_encoder.py against caches of its own."""
    from codeask.core.embed import PACKAGED_ONNX_SHA256, packaged_model_dir
    from codeask.core.query_encoder import INT8_FILE, derive_int8

    folder = packaged_model_dir(tmp_path_factory.mktemp("query-model"))
    model = derive_int8(folder / "model.onnx", PACKAGED_ONNX_SHA256, folder / INT8_FILE)
    return model, model.with_suffix(".json")


@pytest.fixture(autouse=True)
def isolated_cache(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    derived_query_model: tuple[Path, Path],
) -> Iterator[Path]:
    """A private XDG cache per test: the embedding cache of one test never answers for another."""
    cache = tmp_path_factory.mktemp("xdg-cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    models = cache / "codeask" / "models" / "all-minilm-l6-v2-int8"
    models.mkdir(parents=True)
    for derived in derived_query_model:
        (models / derived.name).symlink_to(derived)
    yield cache
