"""One open index per folder and effective settings for every session of one process.

In the per-user daemon, each editor's language-server session and the agents' folder drivers
would otherwise each open their own `FolderIndex` of the same folder: the first the writer, the
others followers with their own copy of every snapshot (vectors, chunks, the BM25 copy, the
symbol table: ~130 MB on sphinx per copy). Sessions that would open the same thing share one
instead, counted by users: the last to leave saves and closes it.

"The same thing" is decided as `FolderIndex.open` decides what to load: the folder, the
settings merged from its project file, the session's editor settings, the user config and the
environment, with the warnings that merge produced, and the mode (sessions never pass the
broad-root opt-in: their roots are checked before they open). Trust
is part of that merge (a protected setting is applied only in a trusted workspace), so a
trusted and an untrusted session never share an index, and one session's settings never
change another's: a session whose settings change takes its own (`retune`).

Every sharer drives the index as a server of its own would (full passes, single-file updates,
the embedding backlog): `FolderIndex` orders them with its run and backlog locks, and a pass
after another one finds nothing to do.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Unpack

import msgspec

from codeask.config import Settings, load_settings
from codeask.core.indexer.folder import FolderIndex
from codeask.core.indexer.location import Mode, OpenOptions, resolved_root

log = logging.getLogger("codeask.core.indexer")


@dataclass
class _Held:
    """A shared index (None while the first user opens it) and how many users hold it."""

    key: tuple[Path, bytes]
    mode: Mode
    opening: threading.Lock = field(default_factory=threading.Lock)
    folder: FolderIndex | None = None
    users: int = 0


class SharedIndexes:
    """The open indexes of one process, shared by every session whose open would load the same."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[Path, bytes], _Held] = {}
        self._by_folder: dict[int, _Held] = {}
        self.opened = 0
        """How many indexes were loaded (tests tell sharing from a second copy by it)."""

    def open(
        self, root: Path, editor: dict[str, object] | None = None, **options: Unpack[OpenOptions]
    ) -> FolderIndex:
        """`FolderIndex.open`, or the index another session opened with the same outcome."""
        mode = options.get("mode", "write")
        key, settings, warnings = _outcome(root, editor, mode)
        root = key[0]
        for warning in warnings:  # every session logs its own, as a process of its own would
            log.warning("%s", warning)
        with self._lock:
            held = self._held.setdefault(key, _Held(key, mode))
            held.users += 1
        try:
            with held.opening:
                if held.folder is None:
                    held.folder = FolderIndex(root, settings, warnings=warnings, **options)
                    self.opened += 1
                    with self._lock:
                        self._by_folder[id(held.folder)] = held
                return held.folder
        except BaseException:
            self._drop(held)
            raise

    @staticmethod
    def key_of(
        root: Path, editor: dict[str, object] | None, mode: Mode = "auto"
    ) -> tuple[Path, bytes]:
        """What an open of `root` under `editor` would load, as a key: opens with equal keys
        share one index (the folder drivers are shared by the same rule)."""
        return _outcome(root, editor, mode)[0]

    def held_writer(self, root: Path) -> FolderIndex | None:
        """The index this process writes for `root` under no editor's settings (the daemon's
        driver held after `codeask index`: core/driver/hold.py), with one more user; None when
        there is none. Its memory is what it last saved, and current: a search reads it instead
        of loading the snapshot it just wrote a second time."""
        key = _outcome(root, {}, "auto")[0]
        with self._lock:
            held = self._held.get(key)
            folder = held.folder if held is not None else None
            if held is None or folder is None or folder.read_only or folder.damage:
                return None
            held.users += 1
            return folder

    def hold(self, folder: FolderIndex) -> None:
        """One more user of an index this process holds (a cache keeping it open)."""
        with self._lock:
            held = self._by_folder.get(id(folder))
            if held is None:
                raise ValueError("not an index these sessions hold")
            held.users += 1

    def retire(self, folder: FolderIndex) -> None:
        """The next open loads afresh (this one went stale); its users keep it until they
        leave, and the last one closes it."""
        with self._lock:
            held = self._by_folder.get(id(folder))
            if held is not None and self._held.get(held.key) is held:
                del self._held[held.key]

    def close(self, folder: FolderIndex) -> None:
        """A user leaves: the last one saves and closes the index."""
        if self._leave(folder):
            folder.close()

    def abandon(self, folder: FolderIndex) -> None:
        """A user leaves a folder that vanished: the last one releases without saving."""
        if self._leave(folder):
            folder.abandon()

    def retune(self, folder: FolderIndex, settings: Settings) -> bool:
        """New settings for one user's index, applied in place only when nobody else holds it
        (they opened it under the old ones); False: the caller reopens it under the new ones."""
        with self._lock:
            held = self._by_folder.get(id(folder))
            if held is None or held.users > 1:
                return False
            identity = _identity(settings, folder.warnings, held.mode)
            key = (held.key[0], identity)
            if key in self._held:
                return False  # another session has that one open: reopening shares it
            del self._held[held.key]
            held.key = key
            self._held[key] = held
        folder.settings = settings
        return True

    def users(self, folder: FolderIndex) -> int:
        """How many sessions hold this index (0: not one of ours)."""
        with self._lock:
            held = self._by_folder.get(id(folder))
            return held.users if held is not None else 0

    def describe(self) -> list[dict[str, Any]]:
        """What `codeask daemon --status` shows: each open index, its users and role."""
        with self._lock:
            helds = [h for h in self._held.values() if h.folder is not None]
        return [
            {
                "root": str(h.key[0]),
                "index": str(h.folder.folder),
                "users": h.users,
                "writer": not h.folder.read_only,
            }
            for h in helds
            if h.folder is not None
        ]

    def _leave(self, folder: FolderIndex) -> bool:
        with self._lock:
            held = self._by_folder.get(id(folder))
            if held is None:
                return True  # never shared (opened before sharing or elsewhere): close it
            held.users -= 1
            if held.users > 0:
                return False
            self._forget(held)
            return True

    def _drop(self, held: _Held) -> None:
        """A failed open: the user it counted never got the index."""
        with self._lock:
            held.users -= 1
            if held.users <= 0 and held.folder is None:
                self._forget(held)

    def _forget(self, held: _Held) -> None:
        if self._held.get(held.key) is held:
            del self._held[held.key]
        if held.folder is not None:
            self._by_folder.pop(id(held.folder), None)


def _outcome(
    root: Path, editor: dict[str, object] | None, mode: Mode
) -> tuple[tuple[Path, bytes], Settings, list[str]]:
    """The key of an open (resolved root, identity), the settings and their warnings."""
    root = resolved_root(root)
    settings, warnings = load_settings(root, editor)
    return (root, _identity(settings, warnings, mode)), settings, warnings


def _identity(settings: Settings, warnings: list[str], mode: Mode) -> bytes:
    """What decides what an open loads and tells its user, as bytes to compare."""
    return msgspec.json.encode([settings, warnings, mode])
