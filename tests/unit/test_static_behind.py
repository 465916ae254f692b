"""Static vectors computed in a thread behind a pass (indexer/vectors.py StaticBehind): every
chunk gets its vector, an embedding error reaches the pass, and no thread outlives it."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from codeask.config import build_settings
from codeask.core.embedding.base import EmbedError
from codeask.core.indexer import FolderIndex, vectors


def make_tree(root: Path, count: int) -> Path:
    for n in range(count):
        path = root / f"pkg/mod_{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "".join(f"def step_{n}_{j}(value):\n    return value * {j}\n\n" for j in range(9))
        )
    return root


def open_index(root: Path, tiers: list[str]) -> FolderIndex:
    settings, warnings = build_settings(
        {"history": {"enabled": False}, "embed": {"tiers": tiers}}, {}
    )
    assert warnings == []
    return FolderIndex(root, settings)


def behind_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "codeask-static-behind"]


def test_every_chunk_gets_its_vector_in_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "BEHIND_STEP", 50)  # several batches from 40 files
    index = open_index(make_tree(tmp_path, 40), ["static"])
    try:
        report = index.refresh(embed=False)
        assert report.chunks_added == 360
        assert report.static_computed == 360
        assert index.local.pending_ids("static") == []
        assert index.local.vector_count("static") == 360
    finally:
        index.close()
    assert behind_threads() == []


def test_an_embedding_error_reaches_the_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "BEHIND_STEP", 50)
    calls = []

    def broken(self: vectors.VectorTiers, chunks: list[object], report: object) -> None:
        calls.append(len(chunks))
        raise EmbedError("the static model file is damaged")

    monkeypatch.setattr(vectors.VectorTiers, "embed_static_chunks", broken)
    index = open_index(make_tree(tmp_path, 40), ["static"])
    try:
        with pytest.raises(EmbedError, match="damaged"):
            index.refresh(embed=False)
        assert calls  # the thread ran and failed; its error was raised in the pass
    finally:
        index.close()
    assert behind_threads() == []


def test_no_static_tier_starts_no_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    monkeypatch.setattr(vectors.StaticBehind, "_send", lambda self, batch: started.append("x"))
    index = open_index(make_tree(tmp_path, 10), ["minilm"])
    try:
        report = index.refresh(embed=False)
        assert report.chunks_added == 90 and report.static_computed == 0
    finally:
        index.close()
    assert started == []


def test_a_pass_shares_one_widened_matrix_and_drops_it() -> None:
    from codeask.core.embedding.static import StaticEmbedder

    model = StaticEmbedder()
    texts = [f"def handler_{n}(request):\n    return route(request, {n})\n" for n in range(100)]
    alone = model.embed(texts)
    with model.widened():
        assert model._wide is None  # made at the first bulk call, not before
        shared = model.embed(texts)
        held = model._wide
        assert held is not None and held.dtype == np.float32
        with model.widened():  # a second holder (another folder's pass) shares it
            assert np.array_equal(model.embed(texts), shared)
            assert model._wide is held
        assert model._wide is held
    assert model._wide is None  # a server at rest does not keep the copy
    assert np.array_equal(alone, shared)  # bit for bit
