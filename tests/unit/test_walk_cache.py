"""The walk cache (issue 42): a pass after a one-file edit lists and matches only the folders
that changed, and finds exactly what a walk without the cache finds: edits in unchanged folders,
new ignore rules (in place, above, in the settings), new and removed entries."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from codeask.config import IndexSettings
from codeask.core.source import walk_cache
from codeask.core.source.discover import Discovery, discover
from support.cli import codeask
from support.env import in_process_env
from support.gitrepo import write_tree

TREE = {
    "top.c": "int top(void) { return 0; }\n",
    "a/one.c": "int one(void) { return 1; }\n",
    "a/deep/two.c": "int two(void) { return 2; }\n",
    "b/three.c": "int three(void) { return 3; }\n",
    "b/.gitignore": "*.tmp\n",
    "b/keep.tmp": "scratch\n",
    "c/id_rsa": "secret\n",
    "c/four.py": "four = 4\n",
}


@pytest.fixture
def trusted_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders made by the test are seconds old: trust their stat at once (the racy window
    has its own test)."""
    monkeypatch.setattr(walk_cache, "RACY_NS", 0)


def walk(root: Path, cache: Path, settings: IndexSettings | None = None) -> Discovery:
    """A cached walk, checked against a walk without the cache (same files, same skips)."""
    settings = settings or IndexSettings()
    found = discover(root, settings, cache=cache)
    plain = discover(root, settings)
    assert found == plain
    return found


def rels(found: Discovery) -> list[str]:
    return [f.rel for f in found.files]


def tree(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "work"
    write_tree(root, TREE)
    return root, tmp_path / "walk.msgpack"


@pytest.mark.usefixtures("trusted_now")
def test_an_unchanged_tree_lists_no_folder_and_an_edit_in_place_is_seen(tmp_path: Path) -> None:
    root, cache = tree(tmp_path)
    first = walk(root, cache)
    assert first.listed == 5  # the root, a, a/deep, b, c
    assert rels(first) == [
        "a/deep/two.c",
        "a/one.c",
        "b/.gitignore",
        "b/three.c",
        "c/four.py",
        "top.c",
    ]
    assert {s.rel for s in first.skipped} == {"c/id_rsa"}
    (root / "a/deep/two.c").write_text("int two(void) { return 22; }\n")  # no folder moves
    again = walk(root, cache)
    assert again.listed == 0
    edited = next(f for f in again.files if f.rel == "a/deep/two.c")
    assert edited.size == len("int two(void) { return 22; }\n")


@pytest.mark.usefixtures("trusted_now")
def test_only_the_folder_that_changed_is_listed_again(tmp_path: Path) -> None:
    root, cache = tree(tmp_path)
    walk(root, cache)
    (root / "a/deep/new.c").write_text("int fresh(void) { return 5; }\n")
    (root / "b/three.c").unlink()
    found = walk(root, cache)
    assert found.listed == 2  # a/deep and b
    assert "a/deep/new.c" in rels(found) and "b/three.c" not in rels(found)
    assert walk(root, cache).listed == 0


@pytest.mark.usefixtures("trusted_now")
def test_a_rule_written_in_place_is_honoured_below_it(tmp_path: Path) -> None:
    """Rewriting `.gitignore` in place moves no folder's stat: its content is the key."""
    root, cache = tree(tmp_path)
    walk(root, cache)
    with open(root / "b/.gitignore", "w") as handle:  # in place: the folder's stat unchanged
        handle.write("*.tmp\nthree.c\n")
    found = walk(root, cache)
    assert "b/three.c" not in rels(found)
    with open(root / ".gitignore", "a") as handle:  # a rule above: every folder below it
        handle.write("deep/\n")
    found = walk(root, cache)
    assert "a/deep/two.c" not in rels(found) and "a/one.c" in rels(found)
    (root / "b/.gitignore").unlink()
    assert "b/keep.tmp" in rels(walk(root, cache))


@pytest.mark.usefixtures("trusted_now")
def test_other_settings_do_not_use_the_cache(tmp_path: Path) -> None:
    root, cache = tree(tmp_path)
    walk(root, cache)
    found = walk(root, cache, IndexSettings(exclude=["*.py"]))
    assert found.listed == 5 and "c/four.py" not in rels(found)
    found = walk(root, cache, IndexSettings(exclude=["*.py"], skip_secrets=False))
    assert found.listed == 5 and "c/id_rsa" in rels(found)


@pytest.mark.usefixtures("trusted_now")
def test_a_damaged_cache_costs_a_full_listing_not_a_wrong_answer(tmp_path: Path) -> None:
    root, cache = tree(tmp_path)
    walk(root, cache)
    cache.write_bytes(cache.read_bytes()[:40])  # torn by a crash
    assert walk(root, cache).listed == 5
    cache.write_bytes(b"\x93\x01\xc4\x00\x80")  # decodes, but not this root's
    assert walk(root, cache).listed == 5
    assert walk(root, cache).listed == 0


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
@pytest.mark.usefixtures("trusted_now")
def test_a_folder_with_a_symlink_is_kept_and_its_link_judged_again(tmp_path: Path) -> None:
    """A folder holding links is not listed again (the kernel's arch/arm/boot/dts, 2.5k
    entries, was listed by every walk), but each link is judged again, rules included: its
    target can change kind, leave the tree or vanish while the folder does not move."""
    root, cache = tree(tmp_path)
    (root / "a/link.c").symlink_to(root / "top.c")
    (root / "a/gone.c").symlink_to(root / "b/three.c")
    (root / "t").mkdir()
    (root / "a/twin.c").symlink_to(root / "t")
    (root / "a/.gitignore").write_text("link.c/\ntwin.c/\n")  # links ignored while folders
    assert "a/twin.c" not in rels(walk(root, cache))
    (root / "top.c").unlink()
    (root / "top.c").mkdir()  # the link's target changed kind; folder `a` did not move
    (root / "top.c/inner.c").write_text("int inner(void) { return 5; }\n")
    (root / "b/three.c").unlink()
    (root / "t").rmdir()
    (root / "t").write_text("int t(void) { return 6; }\n")  # twin.c: a file now, not ignored
    found = walk(root, cache)  # the same as a walk without the cache (walk() checks it)
    assert found.listed == 3  # the root (top.c and t replaced), top.c, b (three.c gone)
    assert "a/link.c" not in rels(found) and "a/link.c/inner.c" not in rels(found)
    assert "a/twin.c" in rels(found)
    assert ("a/gone.c", "broken symlink") in {(s.rel, s.reason) for s in found.skipped}
    (root / "a/.gitignore").write_text("\n")  # in place: `a` does not move, its key does
    found = walk(root, cache)
    assert found.listed == 2  # `a` and `a/deep` (their rules' key changed)
    assert any(s.rel == "a/link.c" for s in found.skipped), "a link to a folder walked already"


@pytest.mark.usefixtures("trusted_now")
def test_an_unchanged_folder_without_ignore_files_opens_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its key needs no file read (two failed opens a folder: ~0.05 s of a kernel walk); a new
    ignore file moves the folder, so its rules are read again."""
    root, cache = tree(tmp_path)
    walk(root, cache)
    opened: list[str] = []

    def counted(path: str, *args: Any, **kwargs: Any) -> Any:
        opened.append(os.path.relpath(path, root))
        return open(path, *args, **kwargs)

    monkeypatch.setattr(walk_cache, "open", counted, raising=False)
    assert discover(root, IndexSettings(), cache=cache).listed == 0
    assert sorted(opened) == ["b/.codeaskignore", "b/.gitignore"], "b alone has one"
    (root / "a/.codeaskignore").write_text("one.c\n")
    found = walk(root, cache)
    assert found.listed == 2 and "a/one.c" not in rels(found)  # `a` and `a/deep`


def test_a_folder_changed_just_before_the_walk_is_listed_again(tmp_path: Path) -> None:
    """A change in the same clock tick as the stat would go unseen: such a folder is not kept."""
    root, cache = tree(tmp_path)
    walk(root, cache)
    assert walk(root, cache).listed == 5


def test_codeask_index_after_an_edit_and_a_new_rule(tmp_path: Path) -> None:
    """The real command, twice on the same tree: the second pass uses the first's listings
    (folders older than the racy window), finds an in-place edit and obeys a rule rewritten in
    place, and a torn cache file only costs a full listing."""
    root, _ = tree(tmp_path)
    env = in_process_env(
        XDG_CACHE_HOME=str(tmp_path / "cache"), CODEASK_INDEX__LOCATION=str(tmp_path / "index")
    )
    codeask("index", "--lexical-only", str(root), env=env, check=True)
    time.sleep(walk_cache.RACY_NS / 1e9 + 0.5)  # the folders are now trusted by their stat
    codeask("index", "--lexical-only", str(root), env=env, check=True)
    (saved,) = (tmp_path / "index").rglob("walk.msgpack")
    assert saved.stat().st_mode & 0o077 == 0
    (root / "a/one.c").write_text("int renamed_probe(void) { return 1; }\n")
    with open(root / "b/.gitignore", "w") as handle:
        handle.write("*.tmp\nthree.c\n")
    codeask("index", "--lexical-only", str(root), env=env, check=True)
    assert _hits(root, env, "renamed_probe") == ["a/one.c"]
    assert "b/three.c" not in _hits(root, env, "three")
    saved.write_bytes(saved.read_bytes()[:25])
    (root / "b/.gitignore").write_text("*.tmp\n")
    codeask("index", "--lexical-only", str(root), env=env, check=True)
    assert "b/three.c" in _hits(root, env, "three")
    time.sleep(walk_cache.RACY_NS / 1e9 + 0.5)
    codeask("index", "--lexical-only", str(root), env=env, check=True)
    kept = saved.stat().st_mtime_ns  # seconds apart from any later write (an inode is reused)
    codeask("index", "--lexical-only", str(root), env=env, check=True)
    assert saved.stat().st_mtime_ns == kept  # nothing moved: the listings are not written again
    codeask("index", "--rebuild", "--lexical-only", str(root), env=env, check=True)
    assert saved.stat().st_mtime_ns != kept  # a rebuild lists every folder again


def _hits(root: Path, env: dict[str, str], query: str) -> list[str]:
    done = codeask(
        "search", "--json", "--mode", "lexical", "--root", str(root), query, env=env, check=True
    )
    return sorted({hit["relative_path"] for hit in json.loads(done.stdout)["results"]})


def _listed_now(
    cache: walk_cache.WalkCache, folder: Path, raw: list[os.DirEntry[str]] | None = None
) -> tuple[int, int, int]:
    """`folder` stored in `cache` as a walk would list it in the clock tick of its change: racy
    by construction, however slow the machine (a listing time taken now may be past the
    window under load)."""
    stat = walk_cache.folder_stat(str(folder))
    assert stat is not None
    with os.scandir(folder) as listing:
        entries = list(listing)
    names = [(e.name, walk_cache.FILE) for e in sorted(entries, key=lambda e: e.name)]
    cache.store(
        "a",
        stat,
        b"key",
        names,
        listed_ns=max(stat[1], stat[2]),
        path=str(folder),
        raw=entries if raw is None else raw,
    )
    return stat


def test_a_recent_folder_is_kept_when_its_change_is_old_by_the_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree unpacked just before its first pass: a folder listed within the racy window is
    kept if, by the save, the window has passed and the folder lists the same entries."""
    monkeypatch.setattr(walk_cache, "RACY_NS", 300_000_000)
    folder = tmp_path / "a"
    write_tree(folder, {"one.c": "int one;\n", "two.c": "int two;\n"})
    path = tmp_path / "walk.msgpack"
    cache = walk_cache.WalkCache(path, b"root")
    stat = _listed_now(cache, folder)
    time.sleep(0.4)
    cache.save()
    kept = walk_cache.WalkCache(path, b"root").kept("a", stat)
    assert kept is not None and kept.names == ["one.c", "two.c"]


def test_a_recent_folder_is_dropped_while_racy_or_when_it_lists_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saved within the window, or listing entries its walk did not see (a change in the same
    clock tick leaves the stat as it was), the folder is listed again by the next walk."""
    monkeypatch.setattr(walk_cache, "RACY_NS", 600_000_000_000)  # ten minutes
    folder = tmp_path / "a"
    write_tree(folder, {"one.c": "int one;\n"})
    path = tmp_path / "walk.msgpack"
    cache = walk_cache.WalkCache(path, b"root")
    stat = _listed_now(cache, folder)
    cache.save()  # at once: still within the window
    assert walk_cache.WalkCache(path, b"root").kept("a", stat) is None
    monkeypatch.setattr(walk_cache, "RACY_NS", 300_000_000)
    cache = walk_cache.WalkCache(path, b"root")
    stat = _listed_now(cache, folder, raw=[])  # as if its listing had missed one.c
    time.sleep(0.4)
    cache.save()
    assert walk_cache.WalkCache(path, b"root").kept("a", stat) is None
