"""Exact-name lookups over one index's chunks: symbol name → chunk ids, path suffix → files.

A helper for storage implementations that keep their chunks in memory (`LocalStorage`): the
table is rebuilt when the chunk set changes, and lives on the storage instance that owns it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import PurePosixPath

from codeask.core.records import HISTORY_KINDS, Chunk


def path_keys(path: str) -> list[str]:
    """Every way a question may name a file: `a/b/c.py`, `b/c.py`, `c.py`, `a/b/c`, `b/c`, `c`."""
    pure = PurePosixPath(path)
    parts = list(pure.parts)
    stem_parts = [*parts[:-1], pure.stem] if pure.suffix else parts
    if stem_parts and stem_parts[-1] == "__init__":
        stem_parts = stem_parts[:-1]
    keys = ["/".join(parts[i:]) for i in range(len(parts))]
    keys += ["/".join(stem_parts[i:]) for i in range(len(stem_parts))]
    return list(dict.fromkeys(k for k in keys if k))


def path_tails(path: str) -> list[str]:
    """The last part of each of `path_keys(path)`: the file's name, its stem (pathlib's rule)
    and, for a package's `__init__`, its folder's name. String operations only: the table is
    built over every file (78k on the kernel) at a reader's first named question."""
    folder, _, name = path.rpartition("/")
    dot = name.rfind(".")
    stem = name[:dot] if 0 < dot < len(name) - 1 else name
    if stem == "__init__":
        stem = folder.rpartition("/")[2]
    return list(dict.fromkeys(t for t in (name, stem) if t))


class SymbolTable:
    """symbol name → chunk ids and path suffix → files of one chunk set.

    Paths are kept by their tails (`path_tails`: two per file) and a key's files are those of
    its last part whose `path_keys` hold it: every suffix of every path as its own key took
    ~2 s and ~150 MB at a daemon's reload after each edit on 78k files (issue 42).
    """

    def __init__(self) -> None:
        self._key: object = None
        self.by_name: dict[str, list[int]] = {}
        self.by_tail: dict[str, list[str]] = {}

    def built_for(self, key: object) -> bool:
        """Whether the last build was of the chunk set `key` identifies."""
        return key == self._key

    def rebuild(self, key: object, chunks: Iterable[Chunk], paths: Iterable[str]) -> None:
        """Build from `chunks` and `paths`, the chunk set `key` identifies."""
        by_name: dict[str, list[int]] = defaultdict(list)
        by_tail: dict[str, list[str]] = defaultdict(list)
        for chunk in chunks:
            if chunk.symbol and chunk.kind not in HISTORY_KINDS:
                by_name[chunk.symbol].append(chunk.id)
        for path in paths:
            for tail in path_tails(path):
                by_tail[tail].append(path)
        self.by_name, self.by_tail, self._key = dict(by_name), dict(by_tail), key

    def paths_named(self, key: str) -> list[str]:
        """Files whose `path_keys` hold `key`, in the order they were given."""
        named = self.by_tail.get(key.rpartition("/")[2], [])
        return [path for path in named if key in path_keys(path)]
