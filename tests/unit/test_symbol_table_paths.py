"""Files named in a question (`paths_named`): the same answers as a table of every path suffix,
from a table of two tails per file that a one-file edit does not rebuild (issue 42: the suffix
table took ~2 s and ~150 MB at each of a daemon's reloads on 78k files)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from codeask.config import build_settings
from codeask.core.operations.index import FolderIndex
from codeask.core.records import FileRecord
from codeask.core.runtime import resident
from codeask.core.storage.file_table import FileTable
from codeask.core.storage.local import LocalStorage
from codeask.core.storage.path_scan import SCANS_PER_BUILD, PathScan
from codeask.core.storage.symbol_table import HandOver, SymbolTable, path_keys
from support.gitrepo import write_tree

PATHS = [
    "README",
    "setup.py",
    "pkg/__init__.py",
    "pkg/sub/__init__.py",
    "pkg/sub/mod.py",
    "other/sub/mod.py",
    "other/sub/mod.pyi",
    "lib/.bashrc",
    "lib/archive.tar.gz",
    "lib/trailing.",
    "lib/__init__",
    "__init__.py",
    "a/b/c",
    "x/c/d.c",
    "docs/c.md",
]
#: Keys whose last part is a folder's name too, is in a path twice, or is part of another name.
SCANNED = [*PATHS, "mod/mod/mod.py", "modmod/mod_mod.py", "c/c.c"]


def every_suffix(paths: list[str]) -> dict[str, list[str]]:
    """The table as it was built before: every key of every path."""
    table: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        for key in path_keys(path):
            table[key].append(path)
    return table


def test_paths_named_answers_as_a_table_of_every_suffix() -> None:
    table = SymbolTable()
    table.rebuild("k", (), PATHS)
    reference = every_suffix(PATHS)
    asked = {*reference, "", "/", "mod", "sub/", "b/c/", "nowhere.py", "c", "tar", "archive.tar"}
    for key in sorted(asked):
        assert table.paths_named(key) == reference.get(key, []), key
    held = [[v] if isinstance(v, str) else v for v in table.by_tail.values()]
    assert sum(map(len, held)) <= 2 * len(PATHS)


def test_a_scan_of_the_paths_answers_as_the_table() -> None:
    """A one-shot process's scan (path_scan.py): the same files in the same order, for keys
    whose last part is in a folder's name, twice in one path, or part of another name."""
    table, scan = SymbolTable(), PathScan("k", SCANNED)
    table.rebuild("k", (), SCANNED)
    asked = {*every_suffix(SCANNED), "", "/", "mod", "sub/", "b/c/", "nowhere.py", "tar", "od"}
    for key in sorted(asked):
        assert scan.paths_named(key) == table.paths_named(key), key
    assert scan.built_for("k") and not scan.built_for("other")


def test_scans_stop_once_they_cost_a_build() -> None:
    """An ask costs a 32nd of a build, and each line it finds one path's share: once the scans
    have cost a build, the storage builds its table (the next test)."""
    asks = PathScan("k", [f"d{n}/c.c" for n in range(64)])  # an ask: 2
    for _ in range(SCANS_PER_BUILD - 1):
        assert asks.paths_named("nowhere.h") == []
    assert not asks.spent()
    asks.paths_named("nowhere.h")
    assert asks.spent()
    lines = PathScan("k", [f"d{n}/c.c" for n in range(64)])
    assert lines.paths_named("d7/c.c") == ["d7/c.c"] and lines.spent()  # 64 lines judged


def test_a_one_shot_storage_scans_until_a_table_pays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "work"
    files = {f"d{n}/c{n}.c": f"int f_{n}(void) {{ return {n}; }}\n" for n in range(10)}
    files |= {f"e{n}/c.c": f"int g_{n}(void) {{ return {n}; }}\n" for n in range(40)}
    write_tree(root, files)
    folder = FolderIndex(root, build_settings({"history": {"enabled": False}}, {})[0])
    folder.refresh(embed=False)
    local = folder.local
    assert isinstance(local, LocalStorage)
    monkeypatch.setattr(resident, "_one_shot", True)
    assert local.paths_named("c7") == ["d7/c7.c"]
    assert local._scans.scan is not None and not local._symbols.by_tail  # scanned, nothing built
    assert local.paths_named("e3/c.c") == ["e3/c.c"]  # 40 lines judged
    assert local._scans.scan is not None
    assert local.paths_named("e5/c") == ["e5/c.c"]  # 40 more: the scans have cost a build
    assert local.paths_named("d3/c3.c") == ["d3/c3.c"]
    assert local._scans.scan is None and local._symbols.by_tail  # the table, from then on
    folder.close()


def test_a_one_file_edit_keeps_the_writers_path_table(tmp_path: Path) -> None:
    root = tmp_path / "work"
    write_tree(root, {f"pkg{n % 3}/mod_{n}.py": f"def f_{n}():\n    pass\n" for n in range(12)})
    folder = FolderIndex(root, build_settings({"history": {"enabled": False}}, {})[0])
    folder.refresh(embed=False)
    local = folder.local
    assert isinstance(local, LocalStorage)
    assert local.paths_named("mod_4.py") == ["pkg1/mod_4.py"]
    built = local._symbols.by_tail
    (root / "pkg1/mod_4.py").write_text("def edited():\n    return 4\n")
    folder.update_paths(["pkg1/mod_4.py"])
    assert local.paths_named("pkg1/mod_4") == ["pkg1/mod_4.py"]
    assert local._symbols.by_tail is built  # same paths: not rebuilt
    (root / "pkg2/new.py").write_text("def new():\n    return 0\n")
    folder.update_paths(["pkg2/new.py"])
    assert local.paths_named("new") == ["pkg2/new.py"]  # a new path: rebuilt
    folder.close()


def _record(path: str) -> FileRecord:
    return FileRecord(path=path, size=1, mtime_ns=1, sha256="h")


def test_tables_decoded_from_the_same_bytes_share_their_paths_key() -> None:
    data = FileTable({p: _record(p) for p in PATHS}).encode()
    one, two = FileTable.decode(data, "d1"), FileTable.decode(data, "d1")
    assert one.paths_key() == two.paths_key() == ("d1", 0)
    assert FileTable.decode(data).paths_key() != FileTable.decode(data).paths_key()
    one["pkg/sub/mod.py"] = _record("pkg/sub/mod.py")  # an edit of a known path: same paths
    assert one.paths_key() == ("d1", 0)
    one["new/a.py"], two["new/b.py"] = _record("new/a.py"), _record("new/b.py")
    assert one.paths_key() != two.paths_key() and ("d1", 0) not in (
        one.paths_key(),
        two.paths_key(),
    )
    del one["new/a.py"]  # the same paths again, but not known to be: a key of its own
    assert one.paths_key() != ("d1", 0)


def test_a_hand_over_serves_only_its_own_paths_and_once() -> None:
    table = SymbolTable()
    table.rebuild(("d1", 0), (), PATHS)
    slot = HandOver()
    slot.give(table, ("", 3))  # a process's own path set (edited): never offered
    slot.give(SymbolTable(), ("d1", 0))  # not built
    assert slot.take(("", 3)) is None and slot.take(("d1", 0)) is None
    slot.give(table, ("d1", 0))
    assert slot.take(("d2", 0)) is None and slot.take(("d1", 0)) is None  # emptied by the miss
    slot.give(table, ("d1", 0))
    taken = slot.take(("d1", 0))
    assert taken is not None and taken is not table and slot.taken == 1
    assert taken.paths_named("mod") == table.paths_named("mod")
    slot.give(table, ("d1", 0))
    assert slot.kept_or_built(taken, ("d1", 0), []) is taken and slot.take(("d1", 0)) is None
    taken.rebuild(("", 7), (), ["z/mod.py"])  # the writer's next build leaves the closed copy's
    assert table.paths_named("mod") == ["pkg/sub/mod.py", "other/sub/mod.py", "other/sub/mod.pyi"]
