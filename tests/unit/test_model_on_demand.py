"""The model tier of a folder past `embed.model_full_pass_chunks` is filled on demand
(core/embedding/on_demand.py, core/search/model_on_demand.py): no backlog pass embeds every
chunk, a pasted report's first-pass candidates are embedded when it is asked and kept by
content hash in the index folder, and `codeask status` says what the tier covers.

The real CLI as processes (`codeask index --full`, `codeask search --json`, `codeask status
--json`) on a git repository the test makes; the threshold is set to 0 (always on demand) so a
tiny folder stands for the kernel.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codeask.config import build_settings
from codeask.core.embedding.on_demand import ON_DEMAND_FILE, OnDemandCache, full_pass
from codeask.core.search.model_gate import model_helps
from support import codeask as run_codeask
from support import in_process_env
from support.gitrepo import ALICE, EPOCH, commit, make_repo

REPORT = (
    "Shipping cost is charged twice for split orders\n"
    "When an order is split into two parcels, the customer pays the delivery fee for each "
    "parcel although the shop promises one fee per order.\n"
    "Expected: one shipping charge for the whole order, whatever the number of parcels.\n"
    "Seen at checkout since the warehouse started splitting large orders.\n"
)
PYTHON = {
    "shop/shipping.py": "def shipping_fee(order):\n"
    '    """The delivery fee of an order: one per parcel today."""\n'
    "    return sum(5.0 for parcel in order.parcels)\n",
    "shop/cart.py": 'def add_item(cart, item):\n    """Put an item in the cart."""\n'
    "    cart.items.append(item)\n",
    "shop/users.py": 'def display_name(user):\n    """A user\'s name as shown."""\n'
    "    return user.first + ' ' + user.last\n",
}


ON_DEMAND = {"CODEASK_EMBED__MODEL_FULL_PASS_CHUNKS": "0"}


class Folder:
    """A repository of PYTHON and the environment of a user whose folders are all on demand."""

    def __init__(self, tmp_path: Path, **settings: str) -> None:
        self.root = tmp_path / "repo"
        commit(make_repo(self.root), PYTHON, "code", ALICE, EPOCH)
        homes = {f"XDG_{name.upper()}_HOME": str(tmp_path / name) for name in ("config", "cache")}
        self.env = in_process_env(CODEASK_HISTORY__ENABLED="false", **homes, **settings)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_codeask(*args, cwd=self.root, env=self.env, timeout=600, check=True)

    def status(self) -> dict[str, Any]:
        rows: list[dict[str, Any]] = json.loads(self.run("status", "--json").stdout)
        return rows[0]

    def search(self) -> list[dict[str, Any]]:
        found = json.loads(self.run("search", REPORT, "--json", "--root", str(self.root)).stdout)
        hits: list[dict[str, Any]] = found["results"]
        assert hits, found
        return [{k: h[k] for k in ("relative_path", "start_line", "retrievers")} for h in hits]


@pytest.mark.slow
def test_a_folder_past_the_full_pass_size_gets_no_model_pass_and_says_so(tmp_path: Path) -> None:
    folder = Folder(tmp_path, **ON_DEMAND)
    indexed = folder.run("index", "--full", str(folder.root))
    assert "the model tier is filled on demand" in indexed.stderr
    status = folder.status()
    assert status["chunks"] > 0
    assert status["embedded"] == 0  # `--full` embedded no chunk with the model
    assert status["model_tier"] == "on demand: 0 chunks cached, 0 of opened or changed files"
    # the static tier covers the whole folder: complete, not "embedded 0.0%"
    assert status["static_embedded"] == status["chunks"] and status["embedded_percent"] == 100.0
    shown = folder.run("status").stdout
    assert "minilm on demand: 0 chunks cached" in shown and "embedded 100.0%" in shown


@pytest.mark.slow
def test_a_report_is_ranked_by_the_model_on_demand_and_its_vectors_are_kept(
    tmp_path: Path,
) -> None:
    folder = Folder(tmp_path, **ON_DEMAND, CODEASK_RETRIEVE__MODEL_TIER_FOR="reports")
    folder.run("index", "--full", str(folder.root))
    cold = folder.search()
    assert any("dense" in hit["retrievers"] for hit in cold)  # the model tier ranked
    cached = folder.status()["model_tier"]
    assert cached.startswith("on demand: ") and not cached.startswith("on demand: 0 ")
    assert (folder.root / ".codeask" / ON_DEMAND_FILE).is_file()
    # another process, the cache warm: the same answer, nothing new to keep
    assert folder.search() == cold
    assert folder.status()["model_tier"] == cached
    assert folder.status()["embedded"] == 0  # the index itself is not written by a search


@pytest.mark.slow
def test_on_demand_a_python_report_is_ranked_by_the_first_pass(tmp_path: Path) -> None:
    """The packaged model on demand ranks reports only where that was measured to help
    (`model_gate.ON_DEMAND_LANGUAGES`: C++; on Python reports it lowered R@5)."""
    folder = Folder(tmp_path, **ON_DEMAND)
    folder.run("index", "--full", str(folder.root))
    assert not any("dense" in hit["retrievers"] for hit in folder.search())
    assert folder.status()["model_tier"].startswith("on demand: 0 chunks cached")


@pytest.mark.slow
def test_a_folder_under_the_size_keeps_its_full_pass(tmp_path: Path) -> None:
    folder = Folder(tmp_path)
    folder.run("index", "--full", str(folder.root))
    status = folder.status()
    assert status["model_tier"] == "full"
    assert status["embedded"] == status["chunks"]
    assert not (folder.root / ".codeask" / ON_DEMAND_FILE).exists()


def test_the_on_demand_cache_keeps_the_newest_rows_up_to_its_bound(tmp_path: Path) -> None:
    cache = OnDemandCache(tmp_path / ON_DEMAND_FILE, dim=4, max_rows=3)
    rows = np.eye(4, dtype=np.float32)
    for n in range(5):
        cache.put_many([(f"h{n}", rows[n % 4])])
        cache.trim()
    assert cache.count() == 3
    assert sorted(cache.get_many([f"h{n}" for n in range(5)])) == ["h2", "h3", "h4"]
    cache.close()


def test_the_policy_is_the_chunk_count_against_the_setting() -> None:
    default, _ = build_settings({})
    assert full_pass(90_000, default) and not full_pass(90_001, default)
    never, _ = build_settings({"embed": {"model_full_pass_chunks": 0}})
    assert not full_pass(1, never)
    assert model_helps("cpp", on_demand=True) and model_helps("python")
    assert not model_helps("python", on_demand=True)
    refused, warnings = build_settings({"embed": {"model_candidates": 0}})
    assert refused.embed.model_candidates == 25  # the section's defaults, and a warning naming it
    assert any("embed.model_candidates" in warning for warning in warnings)
