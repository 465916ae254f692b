"""The folder indexes the daemon keeps open between searches.

A search through the daemon must answer what `codeask search` would answer in a process of
its own, which opens the folder's index (mode "read") afresh. So an open index is reused only
while that would load the same thing: the same settings (project file, user config and
environment read again per request), the same published snapshot (CURRENT unmoved), a local
backend (the team's published revision can move under it) and no damage seen. Otherwise it is
closed and opened again, as the CLI would.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import msgspec

from codeask.config import load_settings
from codeask.core.indexer import FolderIndex

#: FolderIndex.open's logger: settings warnings read the same as in-process.
log = logging.getLogger("codeask.core.indexer")
#: Folders kept open at most (least recently searched closed first).
LIMIT = 16


@dataclass
class _Open:
    folder: FolderIndex
    settings: bytes

    def current(self, settings: bytes) -> bool:
        folder = self.folder
        return (
            settings == self.settings
            and not folder.damage
            and folder.settings.index.backend == "local"
            and not folder.newer_on_disk()
        )


class FolderCache:
    """Root → its open (read-mode) index; `open` is the daemon's `FolderIndex.open`."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._open: OrderedDict[Path, _Open] = OrderedDict()
        self.opened = 0
        """How many times an index was (re)loaded: tests tell reuse from reload by it."""

    def open(self, root: Path) -> FolderIndex:
        settings, warnings = load_settings(root)
        for warning in warnings:
            log.warning("%s", warning)
        encoded = msgspec.json.encode(settings)
        entry = self._open.get(root)
        if entry is not None and entry.current(encoded):
            self._open.move_to_end(root)
            return entry.folder
        if entry is not None:
            self._close(root)
        folder = FolderIndex(root, settings, warnings=warnings, mode="read")
        self.opened += 1
        self._open[root] = _Open(folder, encoded)
        while len(self._open) > self.limit:
            self._close(next(iter(self._open)))
        return folder

    def _close(self, root: Path) -> None:
        entry = self._open.pop(root)
        try:
            entry.folder.close()
        except Exception:  # a folder deleted under us: nothing to keep
            logging.getLogger("codeask.daemon").warning("closing %s failed", root, exc_info=True)

    def close(self) -> None:
        for root in list(self._open):
            self._close(root)

    def roots(self) -> list[str]:
        return [str(root) for root in self._open]
