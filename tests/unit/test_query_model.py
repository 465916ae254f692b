"""The one way a folder's MiniLM query path loads in the background (core/operations/query_model):
one load per folder at a time, done once, a failure logged and tried again by the next start."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, cast

from test_indexer import make_tree

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.operations import query_model


def test_a_real_folder_loads_its_query_path_once(tmp_path: Path) -> None:
    settings, warnings = build_settings({"history": {"enabled": False}})
    assert warnings == []
    folder = FolderIndex(make_tree(tmp_path), settings)
    assert not query_model.built(folder) and not folder.embedder_loaded
    thread = query_model.start(folder)
    assert thread is not None
    assert query_model.start(folder) is None  # running, or already done: never a second load
    thread.join()
    assert query_model.built(folder) and folder.embedder_loaded
    assert not query_model.loading(folder)
    assert query_model.start(folder) is None
    folder.close()


class Embedder:
    """Stands in for the model: `prepare_queries` waits for `go`, and fails `failures` times."""

    def __init__(self, failures: int = 0) -> None:
        self.go = threading.Event()
        self.calls = 0
        self.failures = failures

    def prepare_queries(self) -> None:
        self.calls += 1
        self.go.wait()
        if self.calls <= self.failures:
            raise RuntimeError("model file damaged")


class Folder:
    def __init__(self, root: Path, embedder: Embedder) -> None:
        self.root = root
        self.embedder = embedder


def test_mock_embedder_one_load_at_a_time(tmp_path: Path) -> None:
    embedder = Embedder()
    folder = cast(Any, Folder(tmp_path, embedder))
    thread = query_model.start(folder)
    assert thread is not None and query_model.loading(folder)
    assert query_model.start(folder) is None  # the load runs: it is not started twice
    embedder.go.set()
    thread.join()
    assert query_model.built(folder) and embedder.calls == 1
    assert query_model.start(folder) is None


def test_mock_embedder_failure_is_logged_and_tried_again(tmp_path: Path, caplog: Any) -> None:
    embedder = Embedder(failures=1)
    embedder.go.set()
    folder = cast(Any, Folder(tmp_path, embedder))
    first = query_model.start(folder)
    assert first is not None
    first.join()
    assert not query_model.built(folder)
    assert "loading the query model" in caplog.text and "model file damaged" in caplog.text
    again = query_model.start(folder)
    assert again is not None
    again.join()
    assert query_model.built(folder) and embedder.calls == 2
