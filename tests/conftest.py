"""Shared fixtures: every test gets its own user cache folder."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The packaged model never needs the network; make any accidental hub call fail fast.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def int8_query_model(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The int8 query model and the chunk model's copy, each with its sidecar (and the copy's
    data file), derived once per run (~4 s and ~2 s) instead of once per test (each language
    server would derive its own). Their derivations and everything that can go wrong with them
    are tested on their own in test_query_encoder.py and test_chunk_model.py."""
    from codeask.core.embedding.chunk_fold import data_name
    from codeask.core.embedding.chunk_model import CHUNK_FILE, derive_chunk_model
    from codeask.core.embedding.embed import PACKAGED_ONNX_SHA256, packaged_model_dir
    from codeask.core.embedding.query_encoder import INT8_FILE, derive_int8

    folder = packaged_model_dir(tmp_path_factory.mktemp("int8-once") / "models")
    model = derive_int8(folder / "model.onnx", PACKAGED_ONNX_SHA256, folder / INT8_FILE)
    chunk = derive_chunk_model(folder / "model.onnx", PACKAGED_ONNX_SHA256, folder / CHUNK_FILE)
    return [
        model,
        model.with_suffix(".json"),
        chunk,
        chunk.with_name(data_name(chunk)),
        chunk.with_suffix(".json"),
    ]


def _seed(cache: Path, made: list[Path]) -> None:
    """Put the run's derived models into the XDG cache `cache` (hard links, else copies)."""
    models = cache / "codeask" / "models" / "all-minilm-l6-v2-int8"
    models.mkdir(parents=True, exist_ok=True)
    for path in made:
        if (models / path.name).exists():
            continue
        try:
            os.link(path, models / path.name)
        except OSError:
            shutil.copyfile(path, models / path.name)


@pytest.fixture(scope="session")
def seed_models(int8_query_model: list[Path]) -> Callable[[Path], None]:
    """Seed another XDG cache (a language server's) with the run's derived models."""
    return lambda cache: _seed(cache, int8_query_model)


@pytest.fixture(autouse=True)
def isolated_cache(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    int8_query_model: list[Path],
) -> Iterator[Path]:
    """A private XDG cache per test: the embedding cache of one test never answers for another.
    It starts with the int8 query model in place (hard links; a copy that does not verify is
    remade by renaming a new file over it, never written in place)."""
    cache = tmp_path_factory.mktemp("xdg-cache")
    _seed(cache, int8_query_model)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    # The per-user daemon is on by default; a test drives one process unless it turns the
    # daemon on itself, in a private runtime directory (tests/daemon, tests/support/env.py).
    monkeypatch.setenv("CODEASK_DAEMON__ENABLED", "false")
    yield cache
