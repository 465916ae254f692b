"""The indexing orchestrator on real files: incremental runs, bad input, crashes, cancellation."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from codeask.config import build_settings
from codeask.core.indexer import CancelToken, FolderIndex, Progress, Workspace
from codeask.core.search.retrieve import Filters, search
from codeask.core.storage.local import LocalStorage
from support import PYTHON_M
from support.gitrepo import write_tree

FILES = {
    "src/shop/cart.py": '''"""Shopping cart."""


class Cart:
    """Items a customer intends to buy."""

    def __init__(self):
        self.items = []

    def add_item(self, sku, quantity=1):
        """Put a product in the cart."""
        self.items.append((sku, quantity))

    def total_price(self, prices):
        """Sum of price times quantity over all items."""
        return sum(prices[sku] * qty for sku, qty in self.items)
''',
    "src/shop/tax.py": '''def vat_for_country(country_code):
    """Value added tax rate of a country, as a fraction."""
    rates = {"DE": 0.19, "FR": 0.20}
    return rates.get(country_code, 0.0)
''',
    "src/net/retry.go": """package net

// RetryWithBackoff calls fn until it succeeds, doubling the delay each time.
func RetryWithBackoff(fn func() error, attempts int) error {
	var err error
	for i := 0; i < attempts; i++ {
		if err = fn(); err == nil {
			return nil
		}
	}
	return err
}
""",
    "docs/guide.md": (
        "# Guide\n\n## Installing\n\nRun pip install shop.\n\n## Taxes\n\nVAT is per country.\n"
    ),
    "tests/test_cart.py": (
        "from shop.cart import Cart\n\n\ndef test_add():\n    Cart().add_item('x')\n"
    ),
}


def make_tree(root: Path, files: dict[str, str | bytes] = FILES) -> Path:
    write_tree(root, files)
    return root


def open_index(root: Path, **layer: object) -> FolderIndex:
    settings, warnings = build_settings({"history": {"enabled": False}}, dict(layer))
    assert warnings == []
    return FolderIndex(root, settings)


def assert_consistent(folder: FolderIndex) -> None:
    """Every searchable chunk names its file and lines right."""
    for chunk in folder.storage.all_chunks():
        lines = (folder.root / chunk.path).read_text(encoding="utf-8").splitlines()
        assert "\n".join(lines[chunk.start_line - 1 : chunk.end_line]) == chunk.text, chunk.path
    assert isinstance(folder.local, LocalStorage)
    assert folder.local.lexical_rows() == folder.storage.chunk_count()


def test_index_then_search_lexical(tmp_path: Path) -> None:
    folder = open_index(make_tree(tmp_path))
    report = folder.refresh(embed=False)
    assert report.files_indexed == len(FILES)
    hits = search([folder], "vat_for_country", mode="lexical").hits
    assert hits[0].chunk.symbol == "vat_for_country"
    assert hits[0].chunk.start_line == 1
    assert "symbol" in hits[0].retrievers
    assert_consistent(folder)
    assert (tmp_path / ".codeask" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_no_change_refresh_reads_nothing(tmp_path: Path) -> None:
    folder = open_index(make_tree(tmp_path))
    folder.refresh(embed=False)
    again = folder.refresh(embed=False)
    assert again.files_indexed == 0
    assert again.files_unchanged == len(FILES)
    assert again.chunks_added == again.chunks_removed == 0


def test_edit_delete_and_touch(tmp_path: Path) -> None:
    folder = open_index(make_tree(tmp_path))
    folder.refresh(embed=False)
    tax = tmp_path / "src/shop/tax.py"
    tax.write_text(tax.read_text() + "\n\ndef sales_tax_for_state(state):\n    return 0.07\n")
    report = folder.refresh(embed=False)
    assert report.files_indexed == 1
    assert search([folder], "sales_tax_for_state", mode="lexical").hits[0].path == "src/shop/tax.py"
    (tmp_path / "src/net/retry.go").unlink()
    report = folder.refresh(embed=False)
    assert report.files_removed == 1
    assert not any(c.path == "src/net/retry.go" for c in folder.storage.all_chunks())
    gone = search([folder], "RetryWithBackoff", mode="lexical").hits
    assert all(h.path != "src/net/retry.go" for h in gone)
    before = {c.id: c for c in folder.storage.all_chunks()}
    os.utime(tax, ns=(time.time_ns(), time.time_ns() + 10**9))
    report = folder.refresh(embed=False)
    assert report.files_indexed == 0
    assert {c.id for c in folder.storage.all_chunks()} == before.keys(), (
        "same content must keep its chunks"
    )
    assert_consistent(folder)


def test_update_paths_reindexes_one_file(tmp_path: Path) -> None:
    folder = open_index(make_tree(tmp_path))
    folder.refresh(embed=False)
    cart = tmp_path / "src/shop/cart.py"
    cart.write_text(cart.read_text() + "\n\ndef apply_coupon(code):\n    return code\n")
    report = folder.update_paths(["src/shop/cart.py"], embed=False)
    assert report.files_indexed == 1
    assert search([folder], "apply_coupon", mode="lexical").hits[0].chunk.symbol == "apply_coupon"
    cart.unlink()
    folder.update_paths(["src/shop/cart.py"], embed=False)
    assert folder.storage.file("src/shop/cart.py") is None


@pytest.mark.slow
def test_dense_search_and_embedding_cache(tmp_path: Path) -> None:
    first = open_index(make_tree(tmp_path / "a"))
    report = first.refresh()
    assert report.vectors_computed > 0
    assert first.status().embedded == first.status().chunks
    hits = search([first], "how much does everything in the basket cost", mode="dense").hits
    assert hits[0].chunk.symbol == "total_price"
    assert hits[0].retrievers == ["dense"], "a dense-mode search asks the model tier"
    first.settings.retrieve.model_tier_for = "all"  # typed hybrid questions ask it too
    hybrid = search([first], "exponential backoff when a call fails", k=3).hits
    assert hybrid[0].chunk.symbol == "RetryWithBackoff"
    assert "dense" in hybrid[0].retrievers
    second = open_index(make_tree(tmp_path / "b"))
    again = second.refresh()
    assert again.vectors_computed == 0, "identical chunks must come from the content-hash cache"
    assert second.status().embedded == second.status().chunks


def test_filters_and_per_file_cap(tmp_path: Path) -> None:
    folder = open_index(make_tree(tmp_path), retrieve={"per_file_cap": 1})
    folder.refresh(embed=False)
    hits = search([folder], "cart item price", mode="lexical").hits
    assert len({h.path for h in hits}) == len(hits)
    go = search([folder], "retry", mode="lexical", filters=Filters(language="go")).hits
    assert go and all(h.chunk.language == "go" for h in go)
    only_docs = search(
        [folder], "VAT country", mode="lexical", filters=Filters(path_glob="docs/**")
    ).hits
    assert only_docs and all(h.path.startswith("docs/") for h in only_docs)
    methods = search([folder], "cart", mode="lexical", filters=Filters(kind="method")).hits
    assert methods and all(h.chunk.kind == "method" for h in methods)


def test_tests_and_docs_rank_below_code_unless_asked(tmp_path: Path) -> None:
    folder = open_index(make_tree(tmp_path))
    folder.refresh(embed=False)
    code_first = search([folder], "add_item cart", mode="lexical").hits
    assert code_first[0].path == "src/shop/cart.py"
    tests_first = search([folder], "test for add_item in the cart tests", mode="lexical").hits
    assert any(h.path == "tests/test_cart.py" for h in tests_first[:2])


def test_bad_input_is_skipped_with_reasons_and_loses_nothing(tmp_path: Path) -> None:
    bad: dict[str, str | bytes] = {
        "blob.dat": b"\x00\x01\x02binary",
        "latin1.py": "caf\xe9 = 1\n".encode("latin-1"),
        "broken.py": "def ok():\n    return 1\n\ndef broken(:\n    pass\n",
        ".env": "SECRET=1\n",
    }
    root = make_tree(make_tree(tmp_path), bad)
    with (root / "huge.py").open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    (root / "loop").symlink_to(root, target_is_directory=True)
    folder = open_index(root)
    report = folder.refresh(embed=False)
    reasons = {s.rel: s.reason for s in report.skipped}
    assert "binary" in reasons["blob.dat"]
    assert "UTF-8" in reasons["latin1.py"]
    assert "too large" in reasons["huge.py"]
    assert ".env" in reasons
    assert folder.storage.file("broken.py") is not None, "a syntax error must not lose the file"
    assert any(c.symbol == "ok" for c in folder.storage.all_chunks())
    for rel in FILES:
        assert folder.storage.file(rel) is not None
    assert_consistent(folder)


def test_empty_workspace(tmp_path: Path) -> None:
    folder = open_index(tmp_path)
    report = folder.refresh(embed=False)
    assert report.files_seen == 0
    assert search([folder], "anything").hits == []
    assert folder.status().state == "ready"


def test_corrupted_metadata_rebuilds_with_a_clear_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = make_tree(tmp_path / "ws")
    folder = open_index(root)
    folder.refresh(embed=False)
    folder.close()
    live = root / ".codeask" / (root / ".codeask" / "CURRENT").read_text()
    chunks = live / "chunks.rec"
    data = chunks.read_bytes()
    chunks.unlink()
    chunks.write_bytes(data[: len(data) // 3])
    with caplog.at_level(logging.WARNING):
        reopened = open_index(root)
    assert any("truncated" in r.getMessage() for r in caplog.records)
    assert reopened.storage.all_chunks() == []
    reopened.refresh(embed=False)
    assert search([reopened], "vat_for_country", mode="lexical").hits
    assert_consistent(reopened)


def test_damaged_lexical_files_are_rebuilt(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "ws")
    folder = open_index(root)
    folder.refresh(embed=False)
    folder.close()
    for segment in (root / ".codeask" / "lexical").glob("seg-*"):
        segment.write_bytes(b"not a segment at all" * 100)
    reopened = open_index(root)
    assert search([reopened], "vat_for_country", mode="lexical").hits
    assert_consistent(reopened)


def test_cancel_keeps_a_consistent_index(tmp_path: Path) -> None:
    files = {f"pkg/mod{i}.py": f"def function_{i}(x):\n    return x + {i}\n" for i in range(200)}
    root = make_tree(tmp_path, files)
    folder = open_index(root)
    token = CancelToken()

    def cancel_midway(event: Progress) -> None:
        if event.phase == "chunk" and event.files_done >= 50:
            token.cancel()

    report = folder.refresh(progress=cancel_midway, cancel=token, embed=False)
    assert report.cancelled
    assert 0 < len(folder.storage.paths()) < 200
    assert_consistent(folder)
    folder.close()
    resumed = open_index(root)
    assert_consistent(resumed)
    resumed.refresh(embed=False)
    assert len(resumed.storage.paths()) == 200


@pytest.mark.slow
def test_kill_9_during_indexing_then_restart(tmp_path: Path) -> None:
    """A real `codeask index` process is SIGKILLed mid-run; the index must load consistent."""
    files = {
        f"pkg/sub{i % 10}/mod{i}.py": "\n".join(
            f"def f_{i}_{j}(value):\n    '''Step {j} of module {i}.'''\n    return value * {j}\n"
            for j in range(12)
        )
        for i in range(400)
    }
    root = make_tree(tmp_path / "ws", files)
    env = {**os.environ, "CODEASK_INDEX__CHECKPOINT_SECONDS": "0.2"}
    proc = subprocess.Popen(
        [*PYTHON_M, "index", "--full", str(root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pointer = root / ".codeask" / "CURRENT"
    deadline = time.monotonic() + 120
    while not pointer.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(1.0)  # into the embedding phase, between checkpoints
    proc.send_signal(signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL, "the run must still have been going when killed"
    folder = open_index(root)
    assert_consistent(folder)
    chunks = folder.storage.all_chunks()  # every vector belongs to a chunk
    assert folder.storage.vector_count("minilm") == sum(
        folder.storage.has_vector("minilm", c.id) for c in chunks
    )
    folder.refresh(embed=False)
    assert len(folder.storage.paths()) == 400
    assert_consistent(folder)


def test_multi_root_workspace_searches_every_folder(tmp_path: Path) -> None:
    one = make_tree(tmp_path / "one", {"a.py": "def alpha_handler():\n    pass\n"})
    two = make_tree(tmp_path / "two", {"b.py": "def beta_handler():\n    pass\n"})
    workspace = Workspace()
    for root in (one, two):
        workspace.add(root).refresh(embed=False, history=False)
    hits = search(workspace.all(), "alpha_handler beta_handler", mode="lexical").hits
    assert {h.root for h in hits} == {one.resolve(), two.resolve()}
    workspace.close()
