"""The static vector tier in the index: filled in the first pass, cached, incremental, and a
damaged or outdated static component costs only that tier."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_indexer import FILES, make_tree
from test_store import window_chunks

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.records import FileRecord
from codeask.core.search.retrieve import search
from codeask.core.storage.local import LocalStorage
from codeask.core.storage.store import IndexStore


def open_index(root: Path, tiers: list[str] | None = None) -> FolderIndex:
    layer: dict[str, object] = {"history": {"enabled": False}}
    if tiers is not None:
        layer["embed"] = {"tiers": tiers}
    settings, warnings = build_settings(layer)
    assert warnings == []
    return FolderIndex(root, settings)


def static_matches_chunks(folder: FolderIndex) -> bool:
    storage, chunks = folder.storage, folder.storage.all_chunks()
    every = all(storage.has_vector("static", c.id) for c in chunks)
    return every and storage.vector_count("static") == len(chunks)


def recovered(folder: FolderIndex) -> list[str]:
    """What loading the local snapshot dropped (`LocalStorage.recovered`)."""
    assert isinstance(folder.local, LocalStorage)
    return folder.local.recovered


def test_the_lexical_pass_gives_every_chunk_a_static_vector(tmp_path: Path) -> None:
    folder = open_index(make_tree(tmp_path / "a"))
    report = folder.refresh(embed=False)
    status = folder.status()
    assert status.chunks > 0 and status.static_embedded == status.chunks
    assert status.embedded == 0 and not folder.embedder_loaded  # MiniLM untouched
    assert static_matches_chunks(folder)
    assert "static" in status.tier_summary() and "complete" in status.tier_summary()
    distinct = {c.content_hash() for c in folder.storage.all_chunks()}
    assert report.static_computed == len(distinct)  # each distinct text once (fresh cache)
    twin = open_index(make_tree(tmp_path / "b"))
    again = twin.refresh(embed=False)
    assert again.static_computed == 0, "identical chunks come from the static tier's cache"
    assert twin.status().static_embedded == twin.status().chunks


def test_edits_deletes_and_single_file_updates_keep_the_tier_exact(tmp_path: Path) -> None:
    folder = open_index(make_tree(tmp_path))
    folder.refresh(embed=False)
    tax = tmp_path / "src/shop/tax.py"
    tax.write_text(tax.read_text() + "\n\ndef sales_tax_for_state(state):\n    return 0.07\n")
    folder.refresh(embed=False)
    assert static_matches_chunks(folder)
    (tmp_path / "src/net/retry.go").unlink()
    folder.refresh(embed=False)
    assert static_matches_chunks(folder)
    cart = tmp_path / "src/shop/cart.py"
    cart.write_text(cart.read_text() + "\n\ndef apply_coupon(code):\n    return code\n")
    folder.update_paths(["src/shop/cart.py"], embed=False)
    assert static_matches_chunks(folder)
    folder.close()
    reopened = open_index(tmp_path)
    assert recovered(reopened) == []
    assert static_matches_chunks(reopened)


def test_a_damaged_static_component_rebuilds_only_that_tier(tmp_path: Path) -> None:
    folder = open_index(make_tree(tmp_path))
    folder.refresh(embed=False)
    chunks_before = {c.id for c in folder.storage.all_chunks()}
    folder.close()
    live = tmp_path / ".codeask" / (tmp_path / ".codeask" / "CURRENT").read_text()
    damaged = live / "static.npz"
    blob = bytearray(damaged.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    damaged.unlink()
    damaged.write_bytes(bytes(blob))
    reopened = open_index(tmp_path)
    assert len(recovered(reopened)) == 1
    assert recovered(reopened)[0].startswith("static:")
    assert {c.id for c in reopened.storage.all_chunks()} == chunks_before
    assert reopened.storage.vector_count("static") == 0
    report = reopened.refresh(embed=False)
    assert report.files_indexed == 0 and report.files_unchanged == len(FILES)
    assert static_matches_chunks(reopened)


def test_static_only_never_loads_minilm(tmp_path: Path) -> None:
    folder = open_index(make_tree(tmp_path), tiers=["static"])
    report = folder.refresh()
    assert report.vectors_computed == 0 and folder.status().embedded == 0
    assert not folder.embedder_loaded
    assert folder.status().static_embedded == folder.status().chunks
    assert folder.status().tier_summary().startswith("static ")
    assert "minilm" not in folder.status().tier_summary()
    result = search([folder], "exponential backoff when a call fails", k=3)
    assert result.hits[0].chunk.symbol == "RetryWithBackoff"
    assert not result.warming, "static only: nothing is left to fill in"
    assert result.embedded == result.chunks


def test_minilm_only_builds_no_static_vectors_and_turning_static_on_fills_it(
    tmp_path: Path,
) -> None:
    folder = open_index(make_tree(tmp_path), tiers=["minilm"])
    folder.refresh(embed=False)
    assert folder.status().static_embedded == 0 and folder.storage.tier_model("static")[0] == ""
    folder.close()
    both = open_index(tmp_path)  # an index from before the tier existed looks like this
    assert [note.split(":")[0] for note in recovered(both)] == ["static"]
    report = both.refresh(embed=False)
    assert report.files_indexed == 0
    assert static_matches_chunks(both)


def test_an_empty_tier_list_is_refused_with_the_defaults_kept() -> None:
    settings, warnings = build_settings({"embed": {"tiers": []}})
    assert settings.embed.tiers == ["static", "minilm"]
    assert "embed.tiers must name at least one" in warnings[0]
    settings, warnings = build_settings({"embed": {"tiers": ["static", "bert"]}})
    assert settings.embed.tiers == ["static", "minilm"] and "tiers" in warnings[0]


def test_a_static_model_change_costs_only_the_static_tier(tmp_path: Path) -> None:
    folder = tmp_path / "idx"
    store = IndexStore(folder, tmp_path, "model-a", 4, ("static-a", 4))
    ids = store.new_ids(2)
    chunks = window_chunks(ids)
    store.replace_file(FileRecord(path="a.py", size=1, mtime_ns=1, sha256="x"), chunks)
    rows = np.eye(4, dtype=np.float32)[:2]
    store.add_vectors(ids, rows)
    store.add_static_vectors(ids, rows)
    store.save()
    same, reason = IndexStore.open(folder, tmp_path, "model-a", 4, ("static-a", 4))
    assert reason == "" and same.static_vectors.live == set(ids)
    other, reason = IndexStore.open(folder, tmp_path, "model-a", 4, ("static-b", 4))
    assert reason.startswith("static: static tier was built with 'static-a'")
    assert set(other.chunks) == set(ids) and other.vectors.live == set(ids)
    assert other.static_vectors.live == set()


# ---- retrieval: the static tier answers dense queries before (and beside) MiniLM --------------
def test_dense_search_works_from_the_first_pass_with_the_static_tier(tmp_path: Path) -> None:
    folder = open_index(make_tree(tmp_path))
    folder.refresh(embed=False)  # lexical + static only: no MiniLM vector exists
    result = search([folder], "how much does everything in the basket cost", mode="dense")
    assert result.hits[0].chunk.symbol == "total_price"
    assert result.hits[0].retrievers == ["static"]
    assert result.warming  # MiniLM is still to come
    assert not folder.embedder_loaded, "a static-only query must not load MiniLM"
    hybrid = search([folder], "exponential backoff when a call fails", k=3).hits
    assert hybrid[0].chunk.symbol == "RetryWithBackoff"
    assert "static" in hybrid[0].retrievers


def test_a_zero_static_weight_leaves_the_tier_out(tmp_path: Path) -> None:
    layer = {"history": {"enabled": False}, "retrieve": {"static_weight": 0}}
    settings, _ = build_settings(layer)
    folder = FolderIndex(make_tree(tmp_path), settings)
    folder.refresh(embed=False)
    hits = search([folder], "exponential backoff when a call fails", k=3).hits
    assert hits and all("static" not in hit.retrievers for hit in hits)


@pytest.mark.slow
def test_the_static_tier_steps_aside_once_minilm_is_complete_where_minilm_answers(
    tmp_path: Path,
) -> None:
    """With `retrieve.model_tier_for = all` (typed questions too); by default a typed question
    is the static tier's over every chunk, and a pasted report is MiniLM's."""
    folder = open_index(make_tree(tmp_path))
    folder.refresh()  # both tiers complete
    assert folder.status().embedded == folder.status().chunks
    typed = search([folder], "exponential backoff when a call fails", k=3).hits
    assert typed[0].chunk.symbol == "RetryWithBackoff"
    assert "static" in typed[0].retrievers
    assert all("dense" not in hit.retrievers for hit in typed)
    report = "exponential backoff when a call fails\n" + "the retry loop gives up at once\n" * 20
    pasted = search([folder], report, k=3).hits
    assert "dense" in pasted[0].retrievers
    assert all("static" not in hit.retrievers for hit in pasted)
    folder.settings.retrieve.model_tier_for = "all"
    hits = search([folder], "exponential backoff when a call fails", k=3).hits
    assert hits[0].chunk.symbol == "RetryWithBackoff"
    assert all("static" not in hit.retrievers for hit in hits)
    assert "dense" in hits[0].retrievers


def test_model_tier_for_auto_means_reports_for_the_packaged_model_only() -> None:
    """`auto`: the packaged MiniLM answers pasted reports only, where it was measured to help
    (it added ~nothing to typed questions, benchmarks/README.md Round 9; tests/unit/
    test_model_gate.py); a model the user chose answers every question."""
    from codeask.core.search.retrieve import model_tier_for

    packaged, _ = build_settings({})
    assert model_tier_for(packaged) == "measured"
    chosen, _ = build_settings({"embed": {"model": "BAAI/bge-small-en-v1.5"}})
    assert model_tier_for(chosen) == "all"
    served, _ = build_settings(
        {"embed": {"provider": "openai", "endpoint": "http://127.0.0.1:1", "model": "m"}}
    )
    assert model_tier_for(served) == "all"
    pinned, _ = build_settings({"retrieve": {"model_tier_for": "all"}})
    assert model_tier_for(pinned) == "all"


def test_minilm_answers_typed_questions_when_no_static_tier_can(tmp_path: Path) -> None:
    """`embed.tiers = ["minilm"]` (or a team revision holding MiniLM only): with no static tier,
    the model tier answers typed questions too, or they would have no dense list at all."""
    layer = {"history": {"enabled": False}, "embed": {"tiers": ["minilm"]}}
    settings, _ = build_settings(layer)
    folder = FolderIndex(make_tree(tmp_path), settings)
    folder.refresh()
    hits = search([folder], "exponential backoff when a call fails", k=3).hits
    assert hits[0].chunk.symbol == "RetryWithBackoff"
    assert "dense" in hits[0].retrievers
    folder.close()
