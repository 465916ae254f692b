"""Which read-mode indexes the daemon keeps open between the CLI's searches, in the one cache
of open indexes it shares with its sessions (`SharedIndexes`).

A search through the daemon must answer what `codeask search` would answer in a process of
its own, which opens the folder's index (mode "read") afresh. So an open index is reused only
while that would load the same thing: the same settings (project file, user config and
environment read again per request: `SharedIndexes` keys its indexes by them), the same
published snapshot (CURRENT unmoved), a local backend (the team's published revision can move
under it) and no damage seen. Otherwise the next request loads it again, as the CLI would,
while requests still reading the old one finish with it (the last one closes it).

Requests run concurrently: each holds the index it searches (`open` ... `release`).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from pathlib import Path

from codeask.core.indexer import FolderIndex, SharedIndexes

#: Folders kept open at most (least recently searched closed first).
LIMIT = 16


def _current(folder: FolderIndex) -> bool:
    return (
        not folder.damage
        and folder.settings.index.backend == "local"
        and not folder.newer_on_disk()
    )


class FolderCache:
    """Root → its kept read-mode index; `open` is the daemon's `FolderIndex.open`."""

    def __init__(self, indexes: SharedIndexes, limit: int = LIMIT) -> None:
        self.indexes = indexes
        self.limit = limit
        self._kept: OrderedDict[Path, FolderIndex] = OrderedDict()
        self._lock = threading.Lock()
        self.opened = 0
        """How many times an index was (re)loaded for the CLI: tests tell reuse from reload."""

    def open(self, root: Path) -> FolderIndex:
        """The folder's current read-mode index, held for this request until `release`; the
        index the daemon writes for it when it holds one (the same snapshot, already loaded)."""
        writer = self.indexes.held_writer(root)
        if writer is not None:
            self.forget(root)  # its read copy is the same snapshot, loaded twice
            return writer
        before = self.indexes.opened
        folder = self.indexes.open(root, mode="read")
        if not _current(folder):
            self.indexes.retire(folder)
            self.release(folder)
            folder = self.indexes.open(root, mode="read")
        self._keep(root, folder, loaded=self.indexes.opened != before)
        return folder

    def release(self, folder: FolderIndex) -> None:
        """A request is done with `folder` (the last user of a retired one closes it)."""
        try:
            self.indexes.close(folder)
        except Exception:  # a folder deleted under us: nothing to keep
            logging.getLogger("codeask.daemon").warning(
                "closing %s failed", folder.root, exc_info=True
            )

    def _keep(self, root: Path, folder: FolderIndex, *, loaded: bool) -> None:
        """Keep `folder` open for the next request on `root` (dropping what it replaces)."""
        dropped: list[FolderIndex] = []
        with self._lock:
            self.opened += loaded
            old = self._kept.pop(root, None)
            if old is not folder:
                self.indexes.hold(folder)
                if old is not None:
                    dropped.append(old)
            self._kept[root] = folder
            while len(self._kept) > self.limit:
                dropped.append(self._kept.popitem(last=False)[1])
        for stale in dropped:
            self.release(stale)

    def forget(self, root: Path) -> None:
        """Stop keeping `root`'s read-mode index (a request still reading it finishes). Also
        before this process opens the folder's writer for `codeask index` (issue 42): the
        writer loads the same snapshot, and the kernel's read copy (~280 MB with its mapped
        pages) beside the writer's open and pass made a one-file edit +216 MB above rest;
        searches meanwhile read the writer once it is open (`open`), or load a copy again."""
        with self._lock:
            kept = self._kept.pop(root, None)
        if kept is not None:
            self.release(kept)

    def close(self) -> None:
        with self._lock:
            kept = list(self._kept.values())
            self._kept.clear()
        for folder in kept:
            self.release(folder)

    def roots(self) -> list[str]:
        with self._lock:
            return [str(root) for root in self._kept]
