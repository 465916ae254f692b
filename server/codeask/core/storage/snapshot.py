"""Snapshot folders on disk: the manifest, checksums, atomic publishing and generations.

Layout of an index folder:

    CURRENT                 name of the live snapshot folder (replaced atomically)
    gen-000007/manifest.json  schema, model, dim, generation, next id, size+blake2b of each file
    gen-000007/files.msgpack, chunks.rec, chunks_delta.msgpack, history.msgpack, vectors.npz,
              static.npz

chunks.rec is the mapped chunk base (chunk_file.py), chunks_delta.msgpack what changed since.

A snapshot folder is written completely (temp files, fsync) before CURRENT points at it, so a
kill at any moment leaves either the old or the new snapshot live, never a mix. This module
knows files and bytes only; what the components hold is the store's business (store.py).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import msgspec

from codeask.core.runtime import private_files
from codeask.core.storage.hashed import HASHED

SCHEMA_VERSION = 2  # 2: chunks.rec (mapped records) + chunks_delta.msgpack replace chunks.msgpack
COMPONENTS = (
    "files",
    "chunks",
    "chunks_delta",
    "history",
    "vectors",
    "static",
    "vectors_delta",
    "static_delta",
)
#: Past CHECK_AT_OPEN_BYTES a component's size is checked at open, not its hash (seconds on
#: the kernel before the first answer): SELF_CHECKED ones check each record when it is read
#: (a crc32 per record, chunk_file.py), the others are hashed by a background thread after the
#: open (`Deferred`; a mismatch drops that component, see store.py). Smaller ones: as before.
SELF_CHECKED = frozenset({"chunks"})
CHECK_AT_OPEN_BYTES = 8 << 20
_EXT = {
    "files": "msgpack",
    "chunks": "rec",
    "chunks_delta": "msgpack",
    "history": "msgpack",
    "vectors": "npz",
    "static": "npz",
    "vectors_delta": "npz",  # a tier's changes since its base (storage/vector_file.py)
    "static_delta": "npz",
}


class StoreError(Exception):
    """A snapshot cannot be loaded; the message is the reason logged before a rebuild."""


class ComponentInfo(msgspec.Struct):
    size: int
    blake2b: str


class Deferred(msgspec.Struct, frozen=True):
    """A big component whose hash is checked after the open (by `check_deferred`)."""

    name: str
    path: Path
    blake2b: str


def check_deferred(item: Deferred) -> str:
    """Why `item` is damaged ('' when its hash matches, or it is gone: a newer snapshot)."""
    try:
        intact = HASHED.intact(item.path, item.blake2b)
    except OSError:
        return ""
    return "" if intact else f"index file {item.path.name} fails its checksum (corrupted)"


class Manifest(msgspec.Struct, kw_only=True):
    schema_version: int
    model: str
    dim: int
    generation: int
    next_id: int
    root: str
    updated: float
    components: dict[str, ComponentInfo] = msgspec.field(default_factory=dict)
    static_model: str = ""
    """The static tier's model ('' in snapshots written before the tier existed)."""
    static_dim: int = 0
    #: Files with chunks in this snapshot's files.msgpack (-1: not known at the save, or a
    #: snapshot written before the count was kept): an open need not decode every record to
    #: count them (78k on the kernel: ~0.05 s of each cold search and edit).
    indexed_files: int = -1


def _digest(path: Path) -> str:
    return HASHED.digest(path)  # remembered: this process's next open of it reads no byte


def fsync_write(path: Path, data: bytes) -> None:
    """Write and fsync an owner-only file: it is complete on disk before anything points at it."""
    private_files.write_bytes(path, data, fsync=True)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def current_name(folder: Path) -> str:
    """The snapshot folder an index folder's CURRENT names ('' when none or unreadable)."""
    try:
        return (folder / "CURRENT").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def generation_of(name: str) -> int:
    """`gen-000007` → 7; 0 for any other name."""
    digits = name[4:]
    return int(digits) if name.startswith("gen-") and digits.isdigit() else 0


def read_manifest(folder: Path) -> Manifest | None:
    """The live manifest of an index folder, read without creating or locking anything."""
    name = current_name(folder)
    if not name.startswith("gen-"):
        return None
    try:
        return msgspec.json.decode((folder / name / "manifest.json").read_bytes(), type=Manifest)
    except (OSError, msgspec.DecodeError, RecursionError):  # nested too deep: unreadable
        return None


def component_path(live: Path, name: str) -> Path:
    """Where a component lives inside a snapshot folder."""
    return live / f"{name}.{_EXT[name]}"


class SnapshotFolder:
    """The generations of one index folder: find and check the live one, publish the next."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def live_name(self) -> str:
        """The snapshot folder CURRENT names now ('' when none): readers reload when it moves."""
        return current_name(self.folder)

    def disk_generation(self) -> int:
        """The highest generation on disk: CURRENT's, or the newest gen-* folder's number."""
        best = 0
        try:
            entries = list(self.folder.iterdir())
        except OSError:
            return 0
        for entry in entries:
            best = max(best, generation_of(entry.name.split(".")[0]))
        return best

    def live(self) -> Path | None:
        """The folder CURRENT names; None without CURRENT, StoreError if it names no snapshot."""
        pointer = self.folder / "CURRENT"
        if not pointer.exists():
            return None
        try:
            name = pointer.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"index pointer {pointer} unreadable ({exc})") from exc
        live = self.folder / name
        if not name.startswith("gen-") or not live.is_dir():
            raise StoreError(f"index pointer names a missing snapshot '{name}'")
        return live

    def _live_quiet(self) -> Path | None:
        try:
            return self.live()
        except StoreError:
            return None

    @staticmethod
    def manifest(live: Path) -> Manifest:
        """The manifest of a snapshot folder (StoreError when unreadable)."""
        try:
            return msgspec.json.decode((live / "manifest.json").read_bytes(), type=Manifest)
        except (OSError, msgspec.DecodeError, RecursionError) as exc:
            raise StoreError(f"index manifest unreadable ({exc})") from exc

    @staticmethod
    def verify(
        live: Path, name: str, manifest: Manifest, later: list[Deferred] | None = None
    ) -> Path:
        """A component's path once its size and checksum match the manifest (else StoreError);
        a big one's hash is left to its records or, given `later`, to a background check."""
        path = component_path(live, name)
        info = manifest.components.get(name)
        if info is None or not path.is_file():
            raise StoreError(f"index file {path.name} missing")
        size = path.stat().st_size
        if size != info.size:
            raise StoreError(
                f"index file {path.name} is {size} bytes, manifest says {info.size} "
                "(truncated or overwritten)"
            )
        if size > CHECK_AT_OPEN_BYTES and name in SELF_CHECKED:
            return path  # each record is checked when it is read
        if size > CHECK_AT_OPEN_BYTES and later is not None:
            later.append(Deferred(name, path, info.blake2b))
            return path
        if not HASHED.intact(path, info.blake2b):
            raise StoreError(f"index file {path.name} fails its checksum (corrupted)")
        return path

    def refuse_stale(self, generation: int) -> None:
        """Belt and braces behind the writer lock: never write over a newer snapshot.

        Another writer's snapshot on disk means this copy's ids and generation are stale;
        saving would send the generation backwards and reuse ids. The caller reopens instead.
        """
        name = self.live_name()
        on_disk = generation_of(name)
        if on_disk > generation:
            raise StoreError(
                f"snapshot {name} on disk is newer than this index's generation "
                f"{generation} (another writer); not saving over it"
            )

    def write(
        self, manifest: Manifest, changed: set[str], write: Callable[[str, Path], None]
    ) -> Path:
        """Fill `gen-N.tmp` with every component and the manifest; returns that folder.

        A component not in `changed` is hard-linked (or copied) from the live snapshot, so a
        save costs what changed; the others are written by `write(name, path)`, which fsyncs.
        """
        target = self.folder / f"gen-{manifest.generation:06d}.tmp"
        if target.exists():
            shutil.rmtree(target)
        private_files.make_dir(target)
        previous = self._live_quiet()
        known = self._previous_infos(previous)
        for name in COMPONENTS:
            path = component_path(target, name)
            old = previous / path.name if previous else None
            if name not in changed and old is not None and old.is_file():
                try:
                    os.link(old, path)
                except OSError:
                    shutil.copyfile(old, path)
                info = known.get(name)  # linked: its recorded hash holds (no re-read)
                if info is None or info.size != path.stat().st_size:
                    info = ComponentInfo(size=path.stat().st_size, blake2b=_digest(path))
            else:
                write(name, path)
                private_files.tighten(path)  # the component writers create files 0644
                info = ComponentInfo(size=path.stat().st_size, blake2b=_digest(path))
            manifest.components[name] = info
        fsync_write(target / "manifest.json", msgspec.json.encode(manifest))
        return target

    def _previous_infos(self, previous: Path | None) -> dict[str, ComponentInfo]:
        """The live manifest's size + hash of each component ({} when unreadable)."""
        if previous is None:
            return {}
        try:
            return self.manifest(previous).components
        except StoreError:
            return {}

    def publish(self, target: Path) -> Path:
        """Rename a written `gen-N.tmp` to `gen-N`, then point CURRENT at it (each step atomic)."""
        final = self.folder / target.name.removesuffix(".tmp")
        if final.exists():
            shutil.rmtree(final)
        os.replace(target, final)
        _fsync_dir(self.folder)
        pointer_tmp = self.folder / "CURRENT.tmp"
        fsync_write(pointer_tmp, final.name.encode())
        os.replace(pointer_tmp, self.folder / "CURRENT")
        _fsync_dir(self.folder)
        return final

    def remove_old(self, keep: str) -> None:
        """Delete every snapshot folder but `keep` (old generations and leftover temp ones)."""
        for entry in self.folder.iterdir():
            if entry.is_dir() and entry.name.startswith("gen-") and entry.name != keep:
                shutil.rmtree(entry, ignore_errors=True)

    def disk_bytes(self) -> int:
        """Size of the index folder on disk."""
        return tree_bytes(self.folder)


def tree_bytes(folder: Path) -> int:
    """Bytes of the regular files under `folder`, while a writer may be publishing or removing
    snapshots there: a file or folder gone between its listing and its stat counts as gone
    (a status call must never fail because the writer saved at that moment)."""
    total = 0
    for top, _dirs, names in os.walk(folder):  # os.walk skips a folder it can no longer list
        for name in names:
            try:
                info = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
    return total
