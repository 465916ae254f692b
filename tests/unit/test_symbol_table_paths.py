"""Files named in a question (`paths_named`): the same answers as a table of every path suffix,
from a table of two tails per file that a one-file edit does not rebuild (issue 42: the suffix
table took ~2 s and ~150 MB at each of a daemon's reloads on 78k files)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from codeask.config import build_settings
from codeask.core.operations.index import FolderIndex
from codeask.core.storage.local import LocalStorage
from codeask.core.storage.symbol_table import SymbolTable, path_keys
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
    assert sum(map(len, table.by_tail.values())) <= 2 * len(PATHS)


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
