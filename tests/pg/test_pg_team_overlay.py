"""`index.backend = "postgres"` on a developer's machine: the team's published revision plus a
local overlay of what differs (real git repositories, the real model, the embedded PostgreSQL).

CI indexes and publishes commit A. A second machine (a fresh clone, fresh caches) then embeds
nothing and indexes nothing locally, yet searches densely at once; its edits, deletions and new
files live in the local overlay, which wins: a stale published chunk never shows. An unreachable
database means a full local index, as with the local backend.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pygit2
import pytest
from pgserver import free_port

from codeask.config import Settings, build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.search.retrieve import search
from codeask.core.storage.postgres.publish import publish_folder

DSN_ENV = "CODEASK_TEST_OVERLAY_DSN"
FILES = {
    "shop/cart.py": "class Cart:\n    def total_price(self, items):\n"
    '        """Sum the line prices of the cart."""\n        return sum(i.price for i in items)\n',
    "shop/coupon.py": "def apply_coupon_discount(total, coupon):\n"
    '    """Take the coupon\'s percentage off the total."""\n'
    "    return total * (1 - coupon.percent / 100)\n",
    "shop/shipping.py": "def shipping_fee(weight_kg):\n"
    '    """Flat fee plus a rate per kilogram."""\n    return 4.9 + 1.2 * weight_kg\n',
}


def settings_for(work: Path, cache: Path) -> Settings:
    settings, _ = build_settings(
        {
            "index": {"location": str(work), "backend": "postgres", "dsn_env": DSN_ENV},
            "embed": {"cache_dir": str(cache)},
            "history": {"enabled": False},
        }
    )
    return settings


def committed(root: Path) -> str:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    repo = pygit2.init_repository(str(root))
    repo.remotes.create("origin", "git@github.com:Acme/Shop.git")  # the team's identity of it
    repo.index.add_all()
    repo.index.write()
    who = pygit2.Signature("CI", "ci@example.com")
    return str(repo.create_commit("HEAD", who, who, "A", repo.index.write_tree(), []))


def symbols(folder: FolderIndex, query: str, mode: str = "hybrid") -> list[str]:
    hits = search([folder], query, k=10, mode=mode).hits  # type: ignore[arg-type]
    return [f"{h.chunk.path}:{h.chunk.symbol}" for h in hits]


@pytest.fixture
def published(pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """CI: commit A indexed in full and published; the repository (to clone) is returned."""
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    repo = tmp_path / "ci"
    committed(repo)
    ci = FolderIndex(
        repo, settings_for(tmp_path / "ci-index", tmp_path / "ci-cache"), read_team=False
    )
    ci.refresh()
    assert publish_folder(
        ci.root, ci.storage, DSN_ENV
    ).created  # named by origin: github.com/acme/shop
    ci.close()
    return repo


def second_machine(repo: Path, tmp_path: Path) -> tuple[Path, FolderIndex]:
    clone = tmp_path / "laptop"
    shutil.copytree(repo, clone, ignore=shutil.ignore_patterns(".codeask"))
    settings = settings_for(tmp_path / "laptop-index", tmp_path / "laptop-cache")
    return clone, FolderIndex(clone, settings)


def test_a_fresh_clone_embeds_nothing_and_searches_densely_at_once(
    published: Path, tmp_path: Path
) -> None:
    started = time.monotonic()
    _clone, folder = second_machine(published, tmp_path)
    report = folder.refresh()
    ready = time.monotonic() - started
    assert folder.team.reader is not None and folder.team.shadowed == set()
    assert (report.files_indexed, report.vectors_computed, report.static_computed) == (0, 0, 0)
    counts = folder.storage.counts()
    assert counts.files == 3 and counts.embedded == counts.chunks > 0  # dense-capable
    assert symbols(folder, "take the coupon percentage off", "dense")[0] == (
        "shop/coupon.py:apply_coupon_discount"
    )
    assert symbols(folder, "shipping fee per kilogram")[0] == "shop/shipping.py:shipping_fee"
    assert ready < 10, f"{ready:.1f} s to a dense-capable index"
    folder.close()


@pytest.mark.parametrize("warm", [False, True], ids=["base-ts_rank-first", "base-bm25"])
def test_the_overlay_wins_and_deleted_files_never_appear(
    published: Path, tmp_path: Path, warm: bool
) -> None:
    """Warm: the base's BM25 is built before the edits (as a server does after opening), so
    lexical lists merge by raw score; else the first queries merge ts_rank by rank."""
    clone, folder = second_machine(published, tmp_path)
    folder.refresh()
    if warm:
        folder.storage.warm_up()
        assert folder.storage.merge_mode() == "score"  # type: ignore[attr-defined]
    else:
        assert folder.storage.merge_mode() == "rank"  # type: ignore[attr-defined]
    (clone / "shop/coupon.py").write_text(
        "def apply_voucher_reduction(total, voucher):\n"
        '    """Take the voucher\'s amount off the total."""\n    return total - voucher.amount\n'
    )
    (clone / "shop/shipping.py").unlink()
    (clone / "shop/tax.py").write_text("def sales_tax(total):\n    return total * 0.2\n")
    report = folder.update_paths(["shop/coupon.py", "shop/shipping.py", "shop/tax.py"])
    assert report.files_indexed == 2
    for mode in ("lexical", "dense", "hybrid"):
        found = symbols(folder, "coupon voucher discount reduction shipping fee sales tax", mode)
        assert "shop/coupon.py:apply_coupon_discount" not in found, (mode, found)
        assert not any(s.startswith("shop/shipping.py") for s in found), (mode, found)
    assert symbols(folder, "apply_voucher_reduction", "lexical")[0] == (
        "shop/coupon.py:apply_voucher_reduction"
    )
    assert symbols(folder, "sales_tax", "lexical")[0] == "shop/tax.py:sales_tax"
    assert sorted(folder.storage.paths()) == ["shop/cart.py", "shop/coupon.py", "shop/tax.py"]
    # a new session on the same clone: the overlay comes from git, the edits are still there
    folder.close()
    again = FolderIndex(clone, settings_for(tmp_path / "laptop-index", tmp_path / "laptop-cache"))
    again.refresh()
    assert again.team.shadowed == {"shop/coupon.py", "shop/shipping.py", "shop/tax.py"}
    assert sorted(again.storage.paths()) == ["shop/cart.py", "shop/coupon.py", "shop/tax.py"]
    again.close()


def test_an_unreachable_database_means_a_full_local_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DSN_ENV, f"postgresql://dev:pw-x1@127.0.0.1:{free_port()}/team")
    repo = tmp_path / "repo"
    committed(repo)
    folder = FolderIndex(repo, settings_for(tmp_path / "index", tmp_path / "cache"))
    assert folder.team.reader is None and "unusable" in folder.team.reason
    assert "pw-x1" not in folder.team.reason
    report = folder.refresh(embed=False)
    assert report.files_indexed == 3
    assert symbols(folder, "shipping_fee", "lexical")[0] == "shop/shipping.py:shipping_fee"
    folder.close()


def test_a_full_pass_re_asks_git_which_files_differ(published: Path, tmp_path: Path) -> None:
    """Files changed outside the editor (a checkout, a script) are found by the next full pass;
    a file edited back to the published content is served from the published revision again."""
    clone, folder = second_machine(published, tmp_path)
    folder.refresh()
    original = (clone / "shop/cart.py").read_text()
    (clone / "shop/cart.py").write_text(original.replace("total_price", "grand_total"))
    (clone / "shop/refund.py").write_text("def issue_refund(order):\n    return order.paid\n")
    report = folder.refresh()  # no update_paths: nobody told the index about these
    assert report.files_indexed == 2
    assert folder.team.shadowed == {"shop/cart.py", "shop/refund.py"}
    assert symbols(folder, "issue_refund", "lexical")[0] == "shop/refund.py:issue_refund"
    found = symbols(folder, "total_price grand_total", "lexical")
    assert found[0] == "shop/cart.py:grand_total" and "shop/cart.py:total_price" not in found
    (clone / "shop/cart.py").write_text(original)
    folder.refresh()
    assert folder.team.shadowed == {"shop/refund.py"}
    assert sorted(folder.local.paths()) == ["shop/refund.py"]
    assert symbols(folder, "total_price grand_total", "lexical")[0] == "shop/cart.py:total_price"
    folder.close()
