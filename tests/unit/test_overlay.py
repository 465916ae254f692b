"""OverlayReader over two real local indexes: a base indexed from commit A, an overlay indexed
from only the files of the working tree that differ from A; and overlay_paths on real repos.

The reference is a third index of the whole working tree: what a local-backend editor sees.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pygit2
import pytest
from test_indexer import FILES

from codeask.config import Settings, build_settings
from codeask.core.embedding.embed import CachedEmbedder
from codeask.core.indexer import FolderIndex
from codeask.core.search.retrieve import search
from codeask.core.storage.overlay import OverlayReader, overlay_paths, split_id
from codeask.core.storage.protocol import IndexReader
from support.gitrepo import commit, make_repo, stage, write_files

CART = "src/shop/cart.py"
RETRY = "src/net/retry.go"
TAX = "src/shop/tax.py"
NEW = "src/shop/discount.py"
#: Cart after the edit: `total_price` is gone (stale if it ever appears), `loyalty_points` new.
CART_EDITED = '''"""Shopping cart."""


class Cart:
    """Items a customer intends to buy."""

    def __init__(self):
        self.items = []

    def add_item(self, sku, quantity=1):
        """Put a product in the cart."""
        self.items.append((sku, quantity))

    def loyalty_points(self, spent):
        """Reward points a customer earns for the money spent."""
        return int(spent // 10)
'''
DISCOUNT = '''def seasonal_discount(month):
    """Percentage off during the winter sale."""
    return 30 if month in (1, 2) else 0
'''


def settings() -> Settings:
    layer = {"history": {"enabled": False}, "embed": {"tiers": ["static"]}}
    found, warnings = build_settings(layer)
    assert warnings == []
    return found


def indexed(root: Path) -> FolderIndex:
    folder = FolderIndex(root, settings())
    folder.refresh(embed=False)
    return folder


def export_tree(repo: pygit2.Repository, sha: str, dest: Path) -> Path:
    """The files of commit `sha` in a plain folder (what CI indexes and publishes)."""
    tree = repo.revparse_single(sha).peel(pygit2.Commit).tree

    def walk(node: pygit2.Tree, prefix: str) -> None:
        for entry in node:
            rel = f"{prefix}{entry.name}"
            if isinstance(entry, pygit2.Tree):
                walk(entry, rel + "/")
            else:
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(entry.data)

    walk(tree, "")
    return dest


def copy_changed(work: Path, changed: set[str], dest: Path) -> Path:
    """The overlay's folder: only the changed files that still exist."""
    dest.mkdir(parents=True, exist_ok=True)
    for rel in changed:
        source = work / rel
        if source.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest / rel)
    return dest


@dataclass
class Folder:
    """A `retrieve.Searchable` whose storage is the overlay reader."""

    root: Path
    settings: Settings
    storage: IndexReader
    embedder: CachedEmbedder


@dataclass
class World:
    work: Path
    base_sha: str
    base: FolderIndex
    overlay: FolderIndex
    reference: FolderIndex
    changed: set[str]
    reader: OverlayReader

    def folder(self) -> Folder:
        return Folder(self.work, self.base.settings, self.reader, self.overlay.embedder)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    work = tmp_path / "work"
    repo = make_repo(work)
    write_files(repo, {".gitignore": ".codeask/\n"})
    base_sha = commit(repo, {**FILES, ".gitignore": ".codeask/\n"}, "A")
    base = indexed(export_tree(repo, base_sha, tmp_path / "base"))
    commit(repo, {CART: CART_EDITED}, "unpushed: loyalty points")  # committed after A
    write_files(repo, {RETRY: None, NEW: DISCOUNT})  # deleted, untracked
    changed = overlay_paths(work, base_sha)
    overlay = indexed(copy_changed(work, changed, tmp_path / "overlay"))
    reference = indexed(work)
    reader = OverlayReader(base.storage, overlay.storage, lambda: changed)
    yield World(work, base_sha, base, overlay, reference, changed, reader)
    for folder in (base, overlay, reference):
        folder.close()


def current_text(world: World, path: str) -> str:
    return (world.work / path).read_text(encoding="utf-8")


def assert_fresh(world: World, chunk_path: str, text: str) -> None:
    """A chunk shown must be the working tree's content: never a stale base version."""
    assert (world.work / chunk_path).is_file(), f"deleted {chunk_path} appeared"
    assert text in current_text(world, chunk_path), f"stale chunk of {chunk_path}"


def test_the_overlay_matches_the_changes(world: World) -> None:
    assert world.changed == {CART, RETRY, NEW}
    assert sorted(world.overlay.storage.paths()) == [CART, NEW]


def test_the_merged_index_is_the_working_tree(world: World) -> None:
    reader, reference = world.reader, world.reference.storage
    assert sorted(reader.paths()) == sorted(reference.paths())

    def key(c: object) -> tuple[str, int, str]:
        return (c.path, c.start_line, c.text)  # type: ignore[attr-defined]

    assert sorted(map(key, reader.all_chunks())) == sorted(map(key, reference.all_chunks()))
    assert reader.counts() == reference.counts()
    assert reader.chunk_count() == reference.chunk_count()
    assert reader.vector_count("static") == reference.vector_count("static")
    assert reader.vector_count("minilm") == 0


def test_ids_never_collide_and_round_trip(world: World) -> None:
    chunks = world.reader.all_chunks()
    ids = [c.id for c in chunks]
    assert len(set(ids)) == len(ids)
    raw_base = {c.id for c in world.base.storage.all_chunks()}
    raw_overlay = {c.id for c in world.overlay.storage.all_chunks()}
    assert raw_base & raw_overlay, "the two sides do reuse ids: the mapping is what separates them"
    for chunk in chunks:
        again = world.reader.chunk(chunk.id)
        assert again == chunk
        side, own = split_id(chunk.id)
        source = world.overlay.storage if side else world.base.storage
        assert source.chunk(own) is not None and source.chunk(own).text == chunk.text  # type: ignore[union-attr]
        assert world.reader.vector("static", chunk.id) is not None
    for path in world.reader.paths():
        record = world.reader.file(path)
        assert record is not None
        assert [c.id for c in world.reader.chunks_of(path)] == record.chunk_ids
        assert all(world.reader.chunk(i).path == path for i in record.chunk_ids)  # type: ignore[union-attr]


def test_edited_file_shows_only_the_overlay_version(world: World) -> None:
    reader = world.reader
    assert not reader.symbol_ids("total_price"), "the stale definition is hidden"
    points = reader.symbol_ids("loyalty_points")
    assert len(points) == 1 and split_id(points[0])[0] == 1
    stale = [c.id for c in world.base.storage.chunks_of(CART)]
    for raw in stale:
        assert reader.chunk(raw << 1) is None and reader.vector("static", raw << 1) is None
    for chunk_id, _ in reader.lexical_top_k("total price sum quantity items", 50):
        chunk = reader.chunk(chunk_id)
        assert chunk is not None
        assert_fresh(world, chunk.path, chunk.text)
    files = dict(reader.lexical_files("cart items price", 20))
    assert CART in files
    assert reader.file(CART).sha256 == world.reference.storage.file(CART).sha256  # type: ignore[union-attr]


def test_deleted_file_never_appears(world: World) -> None:
    reader = world.reader
    assert reader.file(RETRY) is None and reader.chunks_of(RETRY) == []
    assert RETRY not in reader.paths() and not reader.symbol_ids("RetryWithBackoff")
    assert reader.paths_named("retry.go") == []
    assert all(path != RETRY for path, _ in reader.lexical_files("retry backoff attempts", 20))
    for mode in ("lexical", "dense", "hybrid"):
        hits = search([world.folder()], "RetryWithBackoff doubling delay attempts", mode=mode).hits
        assert all(hit.path != RETRY for hit in hits), mode


def test_new_and_unchanged_files(world: World) -> None:
    reader = world.reader
    hits = search([world.folder()], "seasonal_discount winter sale", mode="lexical").hits
    assert hits[0].path == NEW and split_id(hits[0].chunk.id)[0] == 1
    tax = search([world.folder()], "vat_for_country", mode="lexical").hits
    assert tax[0].path == TAX and split_id(tax[0].chunk.id)[0] == 0, "unchanged: from the base"
    assert reader.paths_named("discount.py") == [NEW]


@pytest.mark.parametrize("mode", ["lexical", "dense", "hybrid"])
def test_search_over_the_overlay_in_every_mode(world: World, mode: str) -> None:
    folder = world.folder()
    queries = {
        "loyalty reward points for money spent": CART,
        "winter sale percentage off": NEW,
        "value added tax rate of a country": TAX,
    }
    for query, path in queries.items():
        result = search([folder], query, mode=mode, k=5)  # type: ignore[arg-type]
        assert result.hits, (mode, query)
        assert result.hits[0].path == path, (mode, query, [h.path for h in result.hits])
        for hit in result.hits:
            assert_fresh(world, hit.path, hit.chunk.text)
        assert result.chunks == world.reference.storage.chunk_count()


def test_dense_never_returns_a_stale_chunk(world: World) -> None:
    reader = world.reader
    for stale in world.base.storage.chunks_of(CART) + world.base.storage.chunks_of(RETRY):
        vector = world.base.storage.vector("static", stale.id)
        assert vector is not None
        hits = reader.dense_top_k("static", vector, 5)
        assert len(hits) == 5
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        for chunk_id, _ in hits:
            chunk = reader.chunk(chunk_id)
            assert chunk is not None
            assert_fresh(world, chunk.path, chunk.text)


def test_top_k_fills_k_although_the_base_best_are_shadowed(world: World) -> None:
    """The base's best hits for the old cart are all shadowed: over-fetching still gives k."""
    base_hits = world.base.storage.lexical_top_k("cart items sku quantity total price", 3)
    assert all(world.base.storage.chunk(i).path == CART for i, _ in base_hits)  # type: ignore[union-attr]
    merged = world.reader.lexical_top_k("cart items sku quantity total price", 6)
    assert len(merged) == 6
    for chunk_id, _ in merged:
        chunk = world.reader.chunk(chunk_id)
        assert chunk is not None
        assert_fresh(world, chunk.path, chunk.text)


def test_reindex_on_save_goes_through_the_overlay(world: World, tmp_path: Path) -> None:
    """An edit of an unchanged file: shadow it, index it into the overlay; no rebuild."""
    before = world.reader.generation
    tax = world.work / TAX
    tax.write_text(tax.read_text() + "\n\ndef import_duty(goods):\n    return 0.05\n")
    world.changed |= overlay_paths(world.work, world.base_sha)
    assert TAX in world.changed
    copy_changed(world.work, {TAX}, world.overlay.root)
    world.overlay.update_paths([TAX], embed=False)
    world.overlay.checkpoint()
    assert world.reader.generation != before
    hits = search([world.folder()], "import_duty", mode="lexical").hits
    assert hits[0].chunk.symbol == "import_duty"
    for hit in search([world.folder()], "vat_for_country", mode="hybrid").hits:
        assert_fresh(world, hit.path, hit.chunk.text)
    assert all(split_id(i)[0] == 1 for i in world.reader.symbol_ids("vat_for_country"))
    world.reference.refresh(embed=False)
    assert world.reader.counts() == world.reference.storage.counts()


@pytest.mark.parametrize("how", ["score", "rank", "rescore"])
def test_every_lexical_merge_keeps_the_overlay_best_match_first(world: World, how: str) -> None:
    """Whatever the merge, a query that names the edited code finds it first, and no merge
    lets a shadowed base chunk through."""
    reader = OverlayReader(world.base.storage, world.overlay.storage, world.changed)
    reader.lexical_merge = how  # type: ignore[assignment]
    merged = reader.lexical_top_k("loyalty points spent customer", 3)
    assert split_id(merged[0][0])[0] == 1
    assert reader.chunk(merged[0][0]).symbol == "loyalty_points"  # type: ignore[union-attr]
    for chunk_id, _ in reader.lexical_top_k("cart items sku quantity total price", 8):
        chunk = reader.chunk(chunk_id)
        assert chunk is not None
        assert_fresh(world, chunk.path, chunk.text)


# ---- overlay_paths ---------------------------------------------------------------------------
def test_overlay_paths_on_a_real_repository(tmp_path: Path) -> None:
    work = tmp_path / "repo"
    repo = make_repo(work)
    files = {"a.py": "a = 1\n", "b.py": "b = 1\n", "c.py": "c = 1\n", ".gitignore": "*.log\n"}
    base = commit(repo, files, "A")
    assert overlay_paths(work, base) == set()
    write_files(repo, {"a.py": "a = 2\n"})  # unstaged edit
    write_files(repo, {"b.py": None})  # deleted
    write_files(repo, {"new.py": "n = 1\n", "debug.log": "ignored\n", "d/e.py": "e = 1\n"})
    assert overlay_paths(work, base) == {"a.py", "b.py", "new.py", "d/e.py"}
    write_files(repo, {"c.py": "c = 2\n"})
    stage(repo, ["c.py"])  # staged
    assert "c.py" in overlay_paths(work, base)
    commit(repo, {"f.py": "f = 1\n"}, "unpushed")  # stages f.py only
    assert {"a.py", "b.py", "c.py", "f.py", "new.py", "d/e.py"} == overlay_paths(work, base)
    write_files(repo, {"a.py": "a = 1\n"})  # edited back to the base's content
    assert "a.py" not in overlay_paths(work, base)


def test_overlay_paths_against_another_branch(tmp_path: Path) -> None:
    work = tmp_path / "repo"
    repo = make_repo(work)
    root = commit(repo, {"a.py": "a = 1\n", "b.py": "b = 1\n"}, "root")
    main_tip = commit(repo, {"a.py": "a = 2\n", "m.py": "m = 1\n"}, "on main")
    branch = repo.branches.local.create("feature", repo[pygit2.Oid(hex=root)])
    repo.checkout(branch, strategy=pygit2.enums.CheckoutStrategy.FORCE)
    commit(repo, {"b.py": "b = 2\n"}, "on feature")
    # The published base is main's tip, not an ancestor of HEAD: base tree vs working tree.
    assert overlay_paths(work, main_tip) == {"a.py", "m.py", "b.py"}
    assert overlay_paths(work, "main") == {"a.py", "m.py", "b.py"}


def test_overlay_paths_refuses_what_it_cannot_know(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(ValueError):
        overlay_paths(tmp_path / "plain", "0" * 40)
    work = tmp_path / "repo"
    repo = make_repo(work)
    commit(repo, {"a.py": "a = 1\n"}, "A")
    with pytest.raises(ValueError):
        overlay_paths(work, "f" * 40)


def test_overlay_paths_below_the_top_of_the_repository(tmp_path: Path) -> None:
    work = tmp_path / "repo"
    repo = make_repo(work)
    base = commit(repo, {"pkg/a.py": "a = 1\n", "other/b.py": "b = 1\n"}, "A")
    write_files(repo, {"pkg/a.py": "a = 2\n", "other/b.py": "b = 2\n"})
    assert overlay_paths(work / "pkg", base) == {"a.py"}
