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


class SymbolTable:
    """symbol name → chunk ids and path suffix → files of one chunk set."""

    def __init__(self) -> None:
        self._key: object = None
        self.by_name: dict[str, list[int]] = {}
        self.by_path_key: dict[str, list[str]] = {}

    def built_for(self, key: object) -> bool:
        """Whether the last build was of the chunk set `key` identifies."""
        return key == self._key

    def rebuild(self, key: object, chunks: Iterable[Chunk], paths: Iterable[str]) -> None:
        """Build from `chunks` and `paths`, the chunk set `key` identifies."""
        by_name: dict[str, list[int]] = defaultdict(list)
        by_path_key: dict[str, list[str]] = defaultdict(list)
        for chunk in chunks:
            if chunk.symbol and chunk.kind not in HISTORY_KINDS:
                by_name[chunk.symbol].append(chunk.id)
        for path in paths:
            for path_key in path_keys(path):
                by_path_key[path_key].append(path)
        self.by_name, self.by_path_key, self._key = dict(by_name), dict(by_path_key), key
