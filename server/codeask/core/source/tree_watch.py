"""What changed under a folder since the last pass, from the kernel's file events (inotify),
so a pass after an edit in a folder a long-lived process holds re-checks the changed paths
instead of stat'ing every file (issue 42: 78k stats, ~0.7 CPU-s, on the kernel).

Only ever a shortcut: `changes()` answers None, and the pass walks as before, whenever the
events cannot vouch for the whole tree: no inotify (not Linux, the `inotify_simple` package
missing), a filesystem whose changes may come without events (network, FUSE: only local types
are trusted), a symlinked folder into one not watched (a link to a watched folder or out of
the tree is fine: the walk never indexes through it), too many folders for the watch limit,
the kernel's queue overflowed, a folder created or moved in (its files may predate its
watch), an ignore file changed (files may enter or leave the rules), or no full walk yet that
began after the watches were in place. Nothing runs in the background: events are read when
a pass or a poll asks (the kernel queues them; an overflow only costs a walk).

The watches are set by the pass's own walk (`watch_folder`, called by discover() before it
stats or lists a folder), not by a second walk of the tree at open: on the kernel the open's
walk of ~5k folders cost ~0.2 s of a fresh daemon's first edit (issue 42). So the folders
watched are those the walk enters; a folder it does not enter (ignored, `.git`, the index) is
never indexed, and a change of the rules that would let the walk in is an ignore file's event
(the next pass walks, and watches what it enters). A new symlink to a folder makes the next
pass walk too: the walk judges the link (it never indexes through a link to a folder it
walked, into an ignored one, or out of the tree; a folder it enters through a link is watched
under the link's path).
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeask.core.source.specialfs import mount_types
from codeask.core.source.walk_cache import IGNORE_FILES

log = logging.getLogger(__name__)

#: Filesystems whose every change raises an inotify event (local, single-kernel).
EVENT_FS_TYPES = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs", "f2fs", "ramfs", "bcachefs"}
)
#: Folders never watched: git's own (HEAD moves are polled), ours.
UNWATCHED = frozenset({".git"})
#: The user's inotify watches are shared with every tool (an editor's own watcher): a tree
#: needing more than this share of them is walked instead.
WATCH_SHARE = 4
#: More changed paths than this (a build, a checkout): the pass walks, it is cheaper than
#: judging each path on its own.
MAX_PATHS = 2000


def _watch_budget() -> int:
    """How many folders one tree may watch (a share of the user's limit)."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as handle:
            return int(handle.read()) // WATCH_SHARE
    except (OSError, ValueError):
        return 8192 // WATCH_SHARE


@dataclass(frozen=True)
class Taken:
    """The changed paths handed to one pass (`paths` None: that pass walks the tree); the pass
    gives it back to `TreeWatch.settle` once its result is saved."""

    paths: list[str] | None
    seq: int
    epoch: int


def _flags() -> Any:
    from inotify_simple import flags

    return flags


def _fs_trusted(real_root: str) -> str | None:
    """Why the folder's changes may come without events (None: every mount under it is a
    local filesystem type)."""
    mounts = mount_types()
    if not mounts:
        return "no mount table"
    covering = max(
        (p for p in mounts if real_root == p or real_root.startswith(p.rstrip("/") + "/")),
        key=len,
        default="",
    )
    inside = [p for p in mounts if p.startswith(real_root.rstrip("/") + "/")]
    for point in [covering, *inside]:
        if mounts.get(point) not in EVENT_FS_TYPES:
            return f"{mounts.get(point, 'unknown')} filesystem at {point or '?'}"
    return None


class TreeWatch:
    """The inotify watches of one folder tree and the paths changed since they were set."""

    def __init__(self, root: Path, skip: Path | None) -> None:
        from inotify_simple import INotify

        self.root = str(root)
        self._skip = os.path.realpath(skip) if skip is not None else ""
        self._notify = INotify(nonblocking=True)
        self._folders: dict[int, str] = {}  # watch descriptor -> folder, relative ('' = root)
        self._dirty: dict[str, int] = {}  # relative path -> sequence number of its last event
        self._seq = 0
        self._epoch = 0  # moved by anything only a walk can settle
        self._trusted = False
        self._lock = threading.Lock()
        self._budget = _watch_budget()
        self._mask_bits = self._mask()
        #: Why events cannot vouch for the tree for good ('' while they can).
        self.broken = ""

    @classmethod
    def start(cls, root: Path, skip: Path | None = None) -> TreeWatch | None:
        """A watch of `root` whose folders the next walk sets (`watch_folder`), or None when
        events cannot vouch for it here (logged: passes walk as before)."""
        real = os.path.realpath(root)
        why = _fs_trusted(real)
        watch: TreeWatch | None = None
        if why is None:
            try:
                watch = cls(Path(real), skip)
            except (ImportError, OSError) as exc:
                why = f"no inotify ({exc})"
            else:
                why = watch.broken
        if why:
            log.info("%s: no file watch, passes walk the tree: %s", root, why)
            if watch is not None:
                watch.close()
            return None
        return watch

    # ---- watches ------------------------------------------------------------------------
    def watch_folder(self, path: str, rel: str) -> None:
        """Watch a folder the walk is about to stat and list (`rel`: as the walk names it,
        '' = the root): a change after this raises an event, one before it the walk sees."""
        with self._lock:
            self._add(path, rel)

    def _add(self, path: str, rel: str) -> bool:
        """One watch (the lock held); False when the watches cannot cover the tree."""
        if self.broken:
            return False
        if len(self._folders) >= self._budget:
            self._break(f"more than {self._budget:,} folders to watch")
            return False
        try:
            self._folders[self._notify.add_watch(path, self._mask_bits)] = rel
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.ENOMEM):
                self._break(f"too many folders to watch ({exc})")
            return False  # gone meanwhile: its parent's event says so
        return True

    def _break(self, why: str) -> None:
        """The events cannot vouch for good: the watches are given back to the user's share."""
        log.info("%s: %s; passes walk the tree", self.root, why)
        self.broken = why
        self._notify.close()

    def _watch_tree(self, top: str) -> None:
        """Watch a folder created or moved in, and every folder below it (the next pass walks
        anyway: its files may predate these watches)."""
        stack = [top]
        while stack:
            rel = stack.pop()
            path = os.path.join(self.root, rel)
            if not self._add(path, rel):
                continue
            try:
                entries = list(os.scandir(path))
            except OSError:
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and self._watched(entry.path, entry.name):
                    stack.append(f"{rel}/{entry.name}")

    def _watched(self, path: str, name: str) -> bool:
        return name not in UNWATCHED and path != self._skip

    @staticmethod
    def _mask() -> int:
        f = _flags()
        return int(
            f.CREATE
            | f.DELETE
            | f.MODIFY
            | f.CLOSE_WRITE
            | f.ATTRIB
            | f.MOVED_FROM
            | f.MOVED_TO
            | f.DELETE_SELF
            | f.MOVE_SELF
            | f.EXCL_UNLINK
        )

    # ---- events -------------------------------------------------------------------------
    def drain(self) -> None:
        """Read the events the kernel queued (never blocks)."""
        with self._lock:
            self._drain()

    def _drain(self) -> None:
        if self.broken:
            return
        try:
            events = self._notify.read(timeout=0)
        except OSError as exc:
            self._untrust(f"reading events failed ({exc})")
            return
        for event in events:
            self._event(event.wd, event.mask, event.name)

    def _event(self, wd: int, mask: int, name: str) -> None:
        f = _flags()
        if mask & f.Q_OVERFLOW:
            self._untrust("the event queue overflowed")
            return
        folder = self._folders.get(wd)
        if folder is None:
            return
        if mask & f.IGNORED:
            del self._folders[wd]
            return
        if mask & (f.DELETE_SELF | f.MOVE_SELF):
            if not folder:
                self._untrust("the folder itself moved or went")
            return
        rel = f"{folder}/{name}" if folder else name
        self._seq += 1
        self._dirty[rel] = self._seq
        if mask & (f.CREATE | f.MOVED_TO) and not mask & f.ISDIR:
            path = os.path.join(self.root, rel)
            if os.path.islink(path) and os.path.isdir(path):
                self._untrust("")  # a new symlink to a folder: the walk judges it
        if mask & f.ISDIR and mask & (f.CREATE | f.MOVED_TO | f.MOVED_FROM):
            if not mask & f.MOVED_FROM:  # (a moved folder's watches follow it: same inode)
                self._watch_tree(rel)  # its files may predate the watch: the next pass walks
            self._untrust("")
        elif name in IGNORE_FILES:
            self._untrust("")  # files may enter or leave the rules: the next pass walks

    def _untrust(self, why: str) -> None:
        if why:
            log.info("%s: %s; the next pass walks the tree", self.root, why)
        self._epoch += 1
        self._trusted = False

    def distrust(self) -> None:
        """The next pass walks (a rebuild: the index was cleared, the events say too little)."""
        with self._lock:
            self._untrust("")

    # ---- what a pass asks ---------------------------------------------------------------
    @property
    def trusted(self) -> bool:
        """Whether the events vouch for the tree (else the next pass walks)."""
        return self._trusted and not self.broken

    def pending(self) -> bool:
        """Whether trusted events name changes no pass has settled (a poll's question)."""
        with self._lock:
            self._drain()
            return self._trusted and not self.broken and bool(self._dirty)

    def take(self) -> Taken:
        """The paths changed since the last settled pass (`paths` None: walk instead)."""
        with self._lock:
            self._drain()
            trusted = self._trusted and not self.broken and len(self._dirty) <= MAX_PATHS
            paths = sorted(self._dirty) if trusted else None
            return Taken(paths, self._seq, self._epoch)

    def settle(self, taken: Taken) -> None:
        """The pass that took `taken` is saved: its paths are clean unless they changed again
        since; a walk that began after the watches (and nothing since that only a walk can
        settle) makes the events trusted."""
        with self._lock:
            self._dirty = {rel: seq for rel, seq in self._dirty.items() if seq > taken.seq}
            if taken.paths is None and taken.epoch == self._epoch:
                self._trusted = not self.broken

    def close(self) -> None:
        """Drop the watches (the kernel frees them with the descriptor)."""
        with self._lock:
            self.broken = self.broken or "closed"
            self._notify.close()
