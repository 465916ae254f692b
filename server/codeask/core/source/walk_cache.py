"""What the last walk saw in each folder, so a pass after a one-file edit does not list and match
the whole tree again (issue 42: ~2.4 CPU-s of ignore matching per `codeask index` on the kernel).

A folder's entry is its listing after the ignore rules (each name with its kind: file or
folder), kept with the folder's stat (inode, mtime, ctime: any entry added, removed or renamed
moves them; ctime cannot be set back by a tool) and a key of every ignore line that judged it
(the root's layers and the content of each `.gitignore`/`.codeaskignore` from the root down to
the folder). A folder whose stat and key match is not listed or matched again; its files are
still stat'ed by the walk (an edit in place moves no folder's stat). A symlink is kept as a link
and judged again by each walk, rules included (its target can change, or change kind, under an
unchanged folder; the kernel's arch/arm/boot/dts, 2.5k entries, was listed by every walk when a
folder with a link was not kept). Folders with names that are not UTF-8 are never kept, nor a
folder changed within `RACY_NS` before its listing (a change in the same clock tick as the stat
would go unseen: git's "racy" rule) unless, when the walk's listings are saved, `RACY_NS` has
passed since its change and it lists the same names and inodes under the same stat: a tree
unpacked or cloned just before its first pass (a benchmark's copy) was otherwise listed again
whole by the next pass, ~5 s of ignore matching on the kernel.

The file lives beside the index (`walk.msgpack`) and is only a cache: missing, unreadable or
from another version, the walk lists everything; a stale one is checked folder by folder.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Sequence
from hashlib import blake2b
from pathlib import Path

import msgspec

from codeask.core.runtime.private_files import replace_bytes

log = logging.getLogger(__name__)

#: The file's name in the index folder.
WALK_CACHE = "walk.msgpack"
#: Bumped whenever what a kept listing means changes: a cache of another version is dropped.
VERSION = 2
#: A folder changed less than this before the walk started is listed again next time.
RACY_NS = 3_000_000_000
#: Kinds of kept entries: a file whose name passed the name policies, one that did not (its
#: reason is found again), a folder.
FILE, NAMED, FOLDER = "f", "n", "d"
#: A symlink's kind, by (whether it led to a folder, whether the rules left it out): each walk
#: judges the link again, and the rules again only when its target changed kind.
LINKS = {(False, False): "l", (True, False): "L", (False, True): "i", (True, True): "I"}
LINK_KINDS = {kind: key for key, kind in LINKS.items()}
#: The ignore files whose content is part of a folder's key.
IGNORE_FILES = (".gitignore", ".codeaskignore")


class Listing(msgspec.Struct, array_like=True, frozen=True):
    """One folder as the last walk judged it: entries the rules kept, each with its kind."""

    stat: tuple[int, int, int]
    key: bytes
    names: list[str]
    kinds: str
    #: Whether the folder held an ignore file (False: its key is its parent's alone, with no
    #: file to open: an unchanged folder's names are the same, so none appeared since).
    ignores: bool = True


class _Racy(msgspec.Struct, frozen=True):
    """A listing changed too recently to trust at once, confirmed or dropped at the save."""

    path: str
    listing: Listing
    #: `entries_digest` of the listing's raw entries.
    digest: bytes


class _Saved(msgspec.Struct, array_like=True):
    version: int
    root_key: bytes
    folders: dict[str, Listing]


_DECODER = msgspec.msgpack.Decoder(_Saved)


def folder_stat(path: str) -> tuple[int, int, int] | None:
    """(inode, mtime, ctime) of a folder (following a symlink, as the walk does); None: gone."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


def entries_digest(entries: Iterable[os.DirEntry[str]]) -> bytes:
    """Every name a listing saw, ignored ones included, with its inode (a name replaced by
    another file or folder moves its inode), in sorted order."""
    digest = blake2b(digest_size=16)
    for name, inode in sorted((entry.name, entry.inode()) for entry in entries):
        digest.update(f"{name}\0{inode}\0".encode("utf-8", "surrogateescape"))
    return digest.digest()


def folder_key(parent: bytes, path: str, ignores: bool = True) -> bytes:
    """The key of a folder's rules: its parent's key and its own ignore files' content (read
    even when the rules leave the file itself out: git still obeys it); `ignores` False: the
    folder has none (two failed opens a folder cost ~0.05 s of a walk of the kernel)."""
    digest = blake2b(parent, digest_size=16)
    for name in IGNORE_FILES if ignores else ():
        try:
            with open(os.path.join(path, name), "rb") as handle:
                digest.update(name.encode() + blake2b(handle.read(), digest_size=16).digest())
        except FileNotFoundError:
            continue
        except OSError as exc:
            digest.update(f"{name} unreadable {exc.errno}".encode())
    return digest.digest()


class WalkCache:
    """The listings of one root's last walk (read once) and those of the walk under way."""

    def __init__(self, path: Path, root_key: bytes) -> None:
        self.path = path
        self.root_key = root_key
        self.started_ns = time.time_ns()
        self._old = self._read()
        self._new: dict[str, Listing] = {}
        self._racy: dict[str, _Racy] = {}
        self._changed = False
        #: Folders listed from the disk by this walk (the rest came from the cache).
        self.listed = 0

    def _read(self) -> dict[str, Listing]:
        try:
            saved = _DECODER.decode(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.info("%s: not used (%s); listing every folder", self.path, exc)
            return {}
        if saved.version != VERSION or saved.root_key != self.root_key:
            return {}
        return saved.folders

    def kept(self, rel: str, stat: tuple[int, int, int] | None) -> Listing | None:
        """The last walk's listing of `rel` when the folder's stat is unchanged (its key is
        checked by the caller, who can read the folder's ignore files only now)."""
        listing = self._old.get(rel)
        if listing is None or stat is None or listing.stat != tuple(stat):
            return None
        return listing

    def reuse(self, rel: str, listing: Listing) -> None:
        """The walk used `listing` as it was."""
        self._new[rel] = listing

    def store(
        self,
        rel: str,
        stat: tuple[int, int, int] | None,
        key: bytes,
        entries: list[tuple[str, str]] | None,
        ignores: bool = True,
        *,
        listed_ns: int | None = None,
        path: str = "",
        raw: Sequence[os.DirEntry[str]] = (),
    ) -> None:
        """A folder just listed: kept for the next walk unless it cannot be (None entries: it
        has a bad name); one changed within `RACY_NS` before `listed_ns` (taken before its stat
        and listing; default: the walk's start) waits for the save to be confirmed (`path`,
        `raw`: where it is and every entry its listing saw)."""
        self.listed += 1
        if entries is None or stat is None:
            self._changed |= rel in self._old  # dropped: the file changes; never kept: it does not
            return
        names = [name for name, _ in entries]
        listing = Listing(stat, key, names, "".join(kind for _, kind in entries), ignores)
        if max(stat[1], stat[2]) > (listed_ns or self.started_ns) - RACY_NS:
            self._changed |= rel in self._old
            if path:
                self._racy[rel] = _Racy(path, listing, entries_digest(raw))
            return
        self._changed |= self._old.get(rel) != listing
        self._new[rel] = listing

    def _confirm_racy(self) -> None:
        """Keep each recently changed folder whose change is now `RACY_NS` old and which lists
        the same entries under the same stat: a change after its listing would have moved its
        stat, as its clock tick is past (one stat and one listing per such folder)."""
        racy, self._racy = self._racy, {}
        now = time.time_ns()
        for rel, each in racy.items():
            stat = each.listing.stat
            if max(stat[1], stat[2]) > now - RACY_NS or folder_stat(each.path) != stat:
                continue
            try:
                with os.scandir(each.path) as listing:
                    digest = entries_digest(listing)
            except OSError:
                continue
            if digest == each.digest and folder_stat(each.path) == stat:
                self._changed |= self._old.get(rel) != each.listing
                self._new[rel] = each.listing

    def save(self) -> None:
        """Write the walk's listings when they differ from the file's (atomic; a failure is
        logged: the next walk simply lists more)."""
        self._confirm_racy()
        if not self._changed and self._new.keys() == self._old.keys():
            return
        data = msgspec.msgpack.encode(_Saved(VERSION, self.root_key, self._new))
        try:
            replace_bytes(self.path, data)
        except OSError as exc:
            log.warning("%s: could not save the walk's listings: %s", self.path, exc)
