"""The file watch of a folder a long-lived writer holds (issue 42): after a walk that began
once its watches were set, a pass re-checks only the paths the kernel's events name (an edit,
a rename, a delete, a folder removed): no walk, one stat per changed file, and the same index
a walk gives. Whatever the events cannot vouch for makes the next pass walk: a new folder, an
ignore file's change, a rebuild, an overflow of the kernel's queue, a symlinked folder. Real
inotify, real files; the overflow alone is injected (it cannot be caused without root)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeask.core.indexer import FolderIndex, files
from codeask.core.source import tree_watch
from codeask.core.source.tree_watch import TreeWatch
from support.gitrepo import write_tree

pytestmark = pytest.mark.skipif(
    TreeWatch.start(Path(__file__).parent) is None, reason="no inotify on this filesystem"
)

TREE = {f"a/f{i}.py": f"def f{i}():\n    return {i}\n" for i in range(30)} | {
    "a/b/g.py": "def g():\n    return 'g'\n",
    "c/h.py": "def h():\n    return 'h'\n",
}


class Walks:
    """Counts the walks of the folder (calls of discover by the pass)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = files.discover

        def counted(*args: object, **kwargs: object) -> object:
            self.count += 1
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(files, "discover", counted)


@pytest.fixture
def watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FolderIndex]:
    """A writer's index of a 32-file tree, its watch set and a first pass walked."""
    monkeypatch.setenv("CODEASK_INDEX__LOCATION", str(tmp_path / "index"))
    root = tmp_path / "work"
    write_tree(root, TREE)
    folder = FolderIndex.open(root, mode="write")
    folder.watch = TreeWatch.start(root, folder.folder)
    assert folder.watch is not None
    first = folder.refresh(embed=False)
    assert first.files_checked == len(TREE) and first.files_indexed == len(TREE)
    yield folder
    folder.close()


def search(folder: FolderIndex, word: str) -> list[str]:
    return [folder.storage.chunk(i).path for i, _ in folder.storage.lexical_top_k(word, 5)]  # type: ignore[union-attr]


def test_an_edit_is_found_from_the_events_without_a_walk(
    watched: FolderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks = Walks(monkeypatch)
    root = watched.root
    (root / "a/f3.py").write_text("def f3():\n    return 'zebrafish_probe'\n")
    report = watched.refresh(embed=False)
    assert walks.count == 0, "no walk"
    assert report.files_checked == 1 and report.files_indexed == 1
    assert report.files_seen == len(TREE) and report.files_unchanged == len(TREE) - 1
    assert search(watched, "zebrafish_probe") == ["a/f3.py"]
    assert watched.embedding.without_vector(["a/f3.py"], "static") == [], "its static vectors"
    quiet = watched.refresh(embed=False)
    assert walks.count == 0 and quiet.files_checked == 0 and quiet.files_indexed == 0


def test_a_rename_a_delete_and_a_removed_folder_without_a_walk(
    watched: FolderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks = Walks(monkeypatch)
    root = watched.root
    os.rename(root / "a/f5.py", root / "a/renamed.py")
    (root / "a/f6.py").unlink()
    shutil.rmtree(root / "a/b")
    report = watched.refresh(embed=False)
    assert walks.count == 0
    assert report.files_indexed == 1 and report.files_removed == 3
    paths = set(watched.storage.paths())
    assert "a/renamed.py" in paths
    assert not paths & {"a/f5.py", "a/f6.py", "a/b/g.py"}
    assert len(paths) == len(TREE) - 2


def test_what_the_events_cannot_vouch_for_makes_the_next_pass_walk(
    watched: FolderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new folder (its files may predate its watch), an ignore file's change, a rebuild:
    each next pass walks, and the one after trusts the events again."""
    walks = Walks(monkeypatch)
    root = watched.root
    (root / "d").mkdir()
    (root / "d/new.py").write_text("def new():\n    return 1\n")
    assert watched.refresh(embed=False).files_indexed == 1
    assert walks.count == 1, "a new folder: walked"
    (root / "a/.gitignore").write_text("f1*.py\n")
    report = watched.refresh(embed=False)
    assert walks.count == 2 and report.files_removed == 11, "the rules changed: walked"
    assert watched.refresh(embed=False).files_checked == 0 and walks.count == 2
    (root / "c/h.py").write_text("def h():\n    return 'changed'\n")  # the new folder's watch
    (root / "d/new.py").write_text("def new():\n    return 2\n")
    assert watched.refresh(embed=False).files_checked == 2 and walks.count == 2
    watched.rebuild(embed=False)
    assert walks.count == 3, "a rebuild clears the index: walked"


def test_an_overflow_mock_makes_the_next_pass_walk(
    watched: FolderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's queue overflowed (injected: the event it sends): events were lost."""
    from inotify_simple import flags

    walks = Walks(monkeypatch)
    assert watched.watch is not None
    (watched.root / "a/f7.py").write_text("def f7():\n    return 'seven'\n")
    watched.watch._event(-1, flags.Q_OVERFLOW, "")
    report = watched.refresh(embed=False)
    assert walks.count == 1 and report.files_checked == len(TREE) and report.files_indexed == 1
    assert watched.refresh(embed=False).files_checked == 0 and walks.count == 1


def test_symlinked_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A link to a watched folder (the kernel's scripts/dtc/include-prefixes/*) or out of the
    tree is fine: the walk never indexes through it. A link into a folder not watched (.git)
    could carry files no event names: no watch, passes walk."""
    monkeypatch.setenv("CODEASK_INDEX__LOCATION", str(tmp_path / "index"))
    root = tmp_path / "work"
    write_tree(root, TREE | {".git/info/exclude": "\n"})
    os.symlink(root / "a", root / "c/linked")
    os.symlink(tmp_path, root / "c/outside")
    folder = FolderIndex.open(root, mode="write")
    folder.watch = TreeWatch.start(root, folder.folder)
    assert folder.watch is not None
    folder.refresh(embed=False)
    (root / "a/f2.py").write_text("def f2():\n    return 'linked_probe'\n")
    report = folder.refresh(embed=False)
    assert report.files_checked == 1 and search(folder, "linked_probe") == ["a/f2.py"]
    walks = Walks(monkeypatch)
    os.symlink(root / ".git/info", root / "c/git")  # a new link to a folder: the walk judges it
    report = folder.refresh(embed=False)
    assert walks.count == 1 and not [p for p in folder.storage.paths() if p.startswith("c/git")]
    (root / "a/f4.py").write_text("def f4():\n    return 'after_link'\n")
    assert folder.refresh(embed=False).files_checked == 1 and walks.count == 1
    folder.close()


def test_many_changed_paths_make_the_pass_walk(
    watched: FolderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More changed paths than MAX_PATHS (a build, a checkout): one walk judges them faster."""
    monkeypatch.setattr(tree_watch, "MAX_PATHS", 2)
    walks = Walks(monkeypatch)
    for i in (10, 11, 12):
        (watched.root / f"a/f{i}.py").write_text(f"def f{i}():\n    return 'new'\n")
    report = watched.refresh(embed=False)
    assert walks.count == 1 and report.files_indexed == 3
    (watched.root / "a/f13.py").write_text("def f13():\n    return 'new'\n")
    assert watched.refresh(embed=False).files_checked == 1 and walks.count == 1


def test_no_watch_past_a_share_of_the_users_watches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's inotify watches are shared with other tools: a tree needing more than its
    share is walked (here a share of 2 folders for a tree of 4), its watches given back."""
    monkeypatch.setattr(tree_watch, "_watch_budget", lambda: 2)
    monkeypatch.setenv("CODEASK_INDEX__LOCATION", str(tmp_path / "index"))
    root = tmp_path / "work"
    write_tree(root, TREE)
    folder = FolderIndex.open(root, mode="write")
    folder.watch = TreeWatch.start(root, folder.folder)
    assert folder.watch is not None
    folder.refresh(embed=False)
    assert folder.watch.broken.startswith("more than 2 folders")
    walks = Walks(monkeypatch)
    (root / "a/f1.py").write_text("def f1():\n    return 'walked'\n")
    assert folder.refresh(embed=False).files_indexed == 1 and walks.count == 1
    folder.close()


def inotify_watches(watch: TreeWatch) -> int:
    """How many watches the kernel holds for the watch's descriptor (its fdinfo lines)."""
    fd = watch._notify.fileno()
    lines = Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines()
    return sum(line.startswith("inotify wd:") for line in lines)


def test_the_watches_are_set_by_the_walk_on_the_folders_it_enters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No walk of its own at open (~0.2 s on the kernel): the pass's walk sets a watch on each
    folder it enters, so a folder the rules leave out (a build output) is not watched and its
    churn wakes no pass; an ignore file's change lets the next walk in, and watch it."""
    monkeypatch.setenv("CODEASK_INDEX__LOCATION", str(tmp_path / "index"))
    root = tmp_path / "work"
    write_tree(root, TREE | {".gitignore": "build/\n", "build/out/x.py": "x = 1\n"})
    folder = FolderIndex.open(root, mode="write")
    watch = folder.watch = TreeWatch.start(root, folder.folder)
    assert watch is not None and inotify_watches(watch) == 0, "nothing watched before the walk"
    folder.refresh(embed=False)
    assert inotify_watches(watch) == 4, "the root, a, a/b and c: what the walk entered"
    (root / "build/out/x.py").write_text("x = 2\n")
    assert not watch.pending(), "an ignored folder's change wakes no pass"
    walks = Walks(monkeypatch)
    (root / ".gitignore").write_text("# nothing ignored\n")
    report = folder.refresh(embed=False)
    assert walks.count == 1, "the rules changed: walked"
    assert report.files_indexed == 2, "the ignore file itself and build/out/x.py"
    assert inotify_watches(watch) == 6, "build and build/out entered, so watched"
    (root / "build/out/x.py").write_text("x = 'build_probe'\n")
    assert watch.pending()
    report = folder.refresh(embed=False)
    assert walks.count == 1 and report.files_checked == 1 and report.files_indexed == 1
    assert search(folder, "build_probe") == ["build/out/x.py"]
    folder.close()
