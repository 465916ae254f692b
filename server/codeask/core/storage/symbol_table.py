"""Exact-name lookups over one index's chunks: symbol name → chunk ids, path suffix → files.

A helper for storage implementations that keep their chunks in memory (`LocalStorage`): the
table is rebuilt when the chunk set changes, and lives on the storage instance that owns it.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Iterable
from pathlib import PurePosixPath

from codeask.core.records import HISTORY_KINDS, Chunk

#: Hand-overs are logged here (the daemon's log shows them: `codeask.cli.daemon`).
hand_over_log = logging.getLogger("codeask.core.storage.hand_over")


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
        self.by_tail: dict[str, str | list[str]] = {}
        """tail -> its one file, or its files in the order given."""

    def built_for(self, key: object) -> bool:
        """Whether the last build was of the chunk set `key` identifies."""
        return key == self._key

    def rebuild(self, key: object, chunks: Iterable[Chunk], paths: Iterable[str]) -> None:
        """Build from `chunks` and `paths`, the chunk set `key` identifies."""
        by_name: dict[str, list[int]] = defaultdict(list)
        by_tail: dict[str, str | list[str]] = {}
        for chunk in chunks:
            if chunk.symbol and chunk.kind not in HISTORY_KINDS:
                by_name[chunk.symbol].append(chunk.id)
        for path in paths:
            for tail in path_tails(path):
                held = by_tail.get(tail)
                if held is None:
                    by_tail[tail] = path  # most tails name one file: no list (~8 of 20 MB)
                elif isinstance(held, str):
                    by_tail[tail] = [held, path]
                else:
                    held.append(path)
        self.by_name, self.by_tail, self._key = dict(by_name), by_tail, key

    def copy(self) -> SymbolTable:
        """A table of its own over the same maps: a build replaces the maps, never changes
        them, so the copy's next rebuild leaves this one's readers as they were."""
        other = SymbolTable()
        other.by_name, other.by_tail, other._key = self.by_name, self.by_tail, self._key
        return other

    def paths_named(self, key: str) -> list[str]:
        """Files whose `path_keys` hold `key`, in the order they were given."""
        named = self.by_tail.get(key.rpartition("/")[2], [])
        if isinstance(named, str):
            named = [named]
        return [path for path in named if key in path_keys(path)]


class HandOver:
    """One built table passed from an index closed to the next one built over the same paths.

    The daemon lets its searches' read copy go before `codeask index` opens the writer on the
    same snapshot (issue 42); the writer's first search then built the path table again (~0.2
    CPU-s and a heap's worth of short-lived strings on the kernel's 78k files). At most one
    table waits here, and the next search in the process takes it or lets it go.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: SymbolTable | None = None
        self.taken = 0
        """How many builds a hand-over spared (tests tell a hand-over from a rebuild)."""

    def give(self, table: SymbolTable, key: tuple[str, int]) -> None:
        """Offer `table` of a closing index to the next build over the same paths, when it
        was built for the paths of a snapshot as loaded (`FileTable.paths_key`: a digest)."""
        if key[0] and table.built_for(key):
            with self._lock:
                self._waiting = table

    def take(self, key: object) -> SymbolTable | None:
        """A copy of the waiting table when it was built for `key`; the slot empties either
        way (nothing is kept for long)."""
        with self._lock:
            waiting, self._waiting = self._waiting, None
        if waiting is None or not waiting.built_for(key):
            return None
        self.taken += 1
        hand_over_log.info("path table of %s taken over from a closed copy", key)
        return waiting.copy()

    def kept_or_built(
        self, table: SymbolTable, key: tuple[str, int], paths: Iterable[str]
    ) -> SymbolTable:
        """`table` when built for `key`, else a closed copy's table of the same paths, else
        `table` rebuilt over `paths`. Any search takes or drops the waiting table: it is kept
        no longer than until the next one."""
        if table.built_for(key):
            if self._waiting is not None:
                with self._lock:
                    self._waiting = None
            return table
        given = self.take(key)
        if given is not None:
            return given
        table.rebuild(key, (), list(paths))
        return table


#: The process's one slot (`LocalStorage`: a closed index gives, a build takes).
HAND_OVER = HandOver()
