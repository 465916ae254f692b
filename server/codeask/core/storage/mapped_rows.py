"""A vector tier's rows mapped read-only from its snapshot file, instead of read into memory.

Why (issue 29): a language server on sphinx held both tiers' matrices (MiniLM 23 MB, static
15 MB) in its own memory for its whole life, though only a query reads them. Mapped, the rows
are the file's pages: shared with every process that maps the same file, out of the process
until a query scans them, and let go (`madvise(MADV_DONTNEED)`) once the tier has been idle
for `IDLE_SECONDS`, by one background thread. The next scan faults them back in from the page
cache (a few ms for sphinx's 23 MB).

Safe because a snapshot file is never written after it is published: a save writes a new
generation (temp files, fsync, rename) and the old folder is deleted, which keeps the mapped
inode alive until the mapping goes. The mapping is read-only, so nothing here can write the
file either. The snapshot's size and checksum are checked before the file is mapped
(`SnapshotFolder.verify`), and the layout here (stored member, .npy header, shape, dtype, the
rows inside the file) before a row is used: anything else is refused with the reason.
"""

from __future__ import annotations

import contextlib
import mmap
import struct
import threading
import time
import weakref
import zipfile
from pathlib import Path

import numpy as np

#: A tier not scanned for this long gives its pages back.
IDLE_SECONDS = 20.0
#: How often the releasing thread looks.
_TICK_SECONDS = 5.0
#: Local file header: signature, ..., name length and extra length at bytes 26-29.
_LOCAL_HEADER = struct.Struct("<4s22xHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"
#: Bytes of the .npy header read to find where its data starts (headers are 64-256 bytes).
_NPY_HEADER_READ = 4096


class MappedRows:
    """(count, dim) little-endian float32 rows over a read-only mapping of a snapshot file."""

    def __init__(self, mapping: mmap.mmap, rows: np.ndarray) -> None:
        self._mapping = mapping
        self.rows = rows
        self._last_scan = 0.0
        self._resident = False
        self._lock = threading.Lock()

    def scanned(self) -> None:
        """A query read every row: its pages are resident until the tier is idle again."""
        with self._lock:
            self._last_scan = time.monotonic()
            newly = not self._resident
            self._resident = True
        if newly:
            _releaser.watch(self)

    def release_if_idle(self, now: float) -> bool:
        """Let the pages go when no scan came for `IDLE_SECONDS`; True if they went now."""
        with self._lock:
            if not self._resident or now - self._last_scan < IDLE_SECONDS:
                return False
            self._resident = False
        release(self._mapping)
        return True


def release(mapping: mmap.mmap) -> None:
    """Drop a read-only shared mapping's pages from this process (they stay in the page cache
    and come back on the next touch). A scan running meanwhile only faults them in again."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is not None and hasattr(mapping, "madvise"):
        with contextlib.suppress(OSError, ValueError):  # ValueError: closed meanwhile
            mapping.madvise(advice)


def map_rows(
    path: Path, archive: zipfile.ZipFile, member: str, count: int, dim: int
) -> MappedRows | None:
    """The `member` (.npy) of an .npz as a read-only (count, dim) float32 matrix over the file;
    None when the member is compressed (it is then read). ValueError for a layout that does not
    hold `count` rows of `dim` float32 inside the file."""
    info = archive.getinfo(member)
    if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
        return None
    with path.open("rb") as handle:
        try:
            mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:  # ValueError: an empty file
            raise ValueError(f"{path.name}: cannot be mapped ({exc})") from exc
    try:
        start = _member_data(mapping, info, path.name)
        data = _npy_data(mapping, start, info.file_size, count, dim, path.name)
    except ValueError:
        mapping.close()
        raise
    rows = np.frombuffer(mapping, dtype="<f4", count=count * dim, offset=data).reshape(count, dim)
    return MappedRows(mapping, rows)


def _member_data(mapping: mmap.mmap, info: zipfile.ZipInfo, name: str) -> int:
    """Where a stored member's bytes start: after its local header (whose extra field may
    differ from the central directory's)."""
    at = info.header_offset
    if at + _LOCAL_HEADER.size > len(mapping):
        raise ValueError(f"{name}: member {info.filename} starts past the end of the file")
    signature, name_len, extra_len = _LOCAL_HEADER.unpack_from(mapping, at)
    if signature != _LOCAL_SIGNATURE:
        raise ValueError(f"{name}: member {info.filename} has no local header")
    start = at + _LOCAL_HEADER.size + name_len + extra_len
    if start + info.file_size > len(mapping):
        raise ValueError(
            f"{name}: member {info.filename} ends past the end of the file (truncated)"
        )
    return start


def _npy_data(mapping: mmap.mmap, start: int, size: int, count: int, dim: int, name: str) -> int:
    """The offset of a .npy member's data, once its header says (count, dim) C-order `<f4` and
    the member holds exactly that many bytes after it."""
    import io

    head = io.BytesIO(mapping[start : start + min(size, _NPY_HEADER_READ)])
    version = np.lib.format.read_magic(head)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(head)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(head)
    if len(shape) != 2 or tuple(shape) != (count, dim):
        raise ValueError(f"{name}: {shape} vectors, expected ({count}, {dim})")
    if fortran or dtype != np.dtype("<f4"):
        raise ValueError(f"{name}: rows of {dtype}, expected C-order little-endian float32")
    header = head.tell()
    if size - header != count * dim * 4:
        raise ValueError(f"{name}: vectors hold {size - header} bytes, expected {count * dim * 4}")
    return start + header


class _Releaser:
    """One daemon thread that gives idle tiers' pages back (started by the first scan)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: weakref.WeakSet[MappedRows] = weakref.WeakSet()
        self._thread: threading.Thread | None = None

    def watch(self, rows: MappedRows) -> None:
        with self._lock:
            self._watched.add(rows)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="codeask-mapped-release", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(_TICK_SECONDS)
            now = time.monotonic()
            with self._lock:
                watched = list(self._watched)
            for rows in watched:  # a released tier stays watched (weakly): the next scan
                rows.release_if_idle(now)  # makes it resident again


_releaser = _Releaser()
