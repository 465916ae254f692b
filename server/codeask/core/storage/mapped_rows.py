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

import mmap
import struct
import threading
import time
import weakref
import zipfile
from pathlib import Path

import numpy as np

from codeask.core.runtime import resident

#: A tier not scanned for this long gives its pages back.
IDLE_SECONDS = 20.0
#: How often the releasing thread looks.
_TICK_SECONDS = 5.0
#: Local file header: signature, ..., name length and extra length at bytes 26-29.
_LOCAL_HEADER = struct.Struct("<4s22xHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"
#: Bytes of the .npy header read to find where its data starts (headers are 64-256 bytes).
_NPY_HEADER_READ = 4096
#: An int8 tier whose rows fit in this as float32 is scanned from a float32 copy while it is
#: in use (`wide`): 32 MB is 32k static rows (256 dims).
WIDE_BYTES = 32 << 20


class MappedRows:
    """(count, dim) rows over a read-only mapping of a snapshot file: little-endian float32, or
    int8 with one float32 scale a row (`scales`, mapped too; see quantized_rows.py)."""

    def __init__(
        self, mapping: mmap.mmap, rows: np.ndarray, scales: np.ndarray | None = None
    ) -> None:
        self._mapping = mapping
        self.rows = rows
        self.scales = scales
        self._last_scan = 0.0
        self._resident = False
        self._lock = threading.Lock()
        self._wide: np.ndarray | None = None

    def wide(self) -> np.ndarray | None:
        """The int8 rows as float32 (unscaled), copied at the first scan after the tier was
        idle and dropped with its pages, when they fit in `WIDE_BYTES` and the process is
        long-lived; else None (the scan converts block by block, quantized_rows.scores).

        Why (issue 42): converting int8 rows to float32 is most of a scan's cost. Over a kept
        copy a scan took 0.43 ms instead of 1.98 (24k rows, in cache), and an eval-search
        question's dense step ~35 % less. The copy is 4 bytes a row's dimension, held while
        questions come; float32 rows (MiniLM) convert nothing and keep none."""
        wide = self._wide
        if wide is not None or self.scales is None or resident.one_shot():
            return wide
        if self.rows.size * 4 > WIDE_BYTES:
            return None
        wide = np.ascontiguousarray(self.rows, dtype=np.float32)
        with self._lock:
            if self._wide is None:
                self._wide = wide
            return self._wide

    def scanned(self) -> None:
        """A query read every row: its pages are resident until the tier is idle again (a
        one-shot process gives them back now: runtime/resident.py)."""
        resident.step_done(self._mapping)
        with self._lock:
            self._last_scan = time.monotonic()
            newly = not self._resident
            self._resident = True
        if newly:
            _releaser.watch(self)

    def step_done(self) -> None:
        """A block of rows was read: a one-shot process gives its pages back now."""
        resident.step_done(self._mapping)

    def release_if_idle(self, now: float) -> bool:
        """Let the pages go when no scan came for `IDLE_SECONDS`; True if they went now."""
        with self._lock:
            if not self._resident or now - self._last_scan < IDLE_SECONDS:
                return False
            self._resident = False
            self._wide = None
        release(self._mapping)
        return True


def release(mapping: mmap.mmap) -> None:
    """Drop a read-only shared mapping's pages from this process (they stay in the page cache
    and come back on the next touch). A scan running meanwhile only faults them in again."""
    resident.give_back(mapping)


def map_rows(
    path: Path, archive: zipfile.ZipFile, member: str, count: int, dim: int
) -> MappedRows | None:
    """The `member` (.npy) of an .npz as a read-only (count, dim) matrix over the file: float32,
    or int8 with its "scales.npy" beside it; None when a member is compressed (it is then read).
    ValueError for a layout that does not hold `count` such rows inside the file."""
    infos = [archive.getinfo(member)]
    if "scales.npy" in archive.namelist():
        infos.append(archive.getinfo("scales.npy"))
    if any(i.compress_type != zipfile.ZIP_STORED or i.file_size != i.compress_size for i in infos):
        return None
    with path.open("rb") as handle:
        try:
            mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:  # ValueError: an empty file
            raise ValueError(f"{path.name}: cannot be mapped ({exc})") from exc
    try:
        rows = _map_array(mapping, infos[0], (count, dim), ROW_DTYPES, path.name)
        scales = None
        if rows.dtype == np.int8:
            if len(infos) < 2:
                raise ValueError(f"{path.name}: int8 rows without their scales")
            scales = _map_array(mapping, infos[1], (count,), (np.dtype("<f4"),), path.name)
    except ValueError:
        mapping.close()
        raise
    return MappedRows(mapping, rows, scales)


#: The row layouts a tier file may hold: float32, or int8 with per-row scales.
ROW_DTYPES = (np.dtype("<f4"), np.dtype("i1"))


def _map_array(
    mapping: mmap.mmap,
    info: zipfile.ZipInfo,
    shape: tuple[int, ...],
    dtypes: tuple[np.dtype, ...],
    name: str,
) -> np.ndarray:
    """A stored .npy member as a read-only array over the mapping, once its header and size
    say `shape` of one of `dtypes`."""
    start = _member_data(mapping, info, name)
    data, dtype = _npy_data(mapping, start, info.file_size, shape, dtypes, name)
    count = int(np.prod(shape))
    return np.frombuffer(mapping, dtype=dtype, count=count, offset=data).reshape(shape)


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


def _npy_data(
    mapping: mmap.mmap,
    start: int,
    size: int,
    shape: tuple[int, ...],
    dtypes: tuple[np.dtype, ...],
    name: str,
) -> tuple[int, np.dtype]:
    """(offset of a .npy member's data, its dtype), once its header says `shape` in C order of
    one of `dtypes` and the member holds exactly that many bytes after it."""
    import io

    head = io.BytesIO(mapping[start : start + min(size, _NPY_HEADER_READ)])
    version = np.lib.format.read_magic(head)
    if version == (1, 0):
        found, fortran, dtype = np.lib.format.read_array_header_1_0(head)
    else:
        found, fortran, dtype = np.lib.format.read_array_header_2_0(head)
    if tuple(found) != shape:
        raise ValueError(f"{name}: {found} vectors, expected {shape}")
    if fortran or dtype not in dtypes:
        kinds = " or ".join(str(d) for d in dtypes)
        raise ValueError(f"{name}: rows of {dtype}, expected C-order little-endian {kinds}")
    header = head.tell()
    want = int(np.prod(shape)) * dtype.itemsize
    if size - header != want:
        raise ValueError(f"{name}: vectors hold {size - header} bytes, expected {want}")
    return start + header, dtype


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
            self._tick(time.monotonic())

    def _tick(self, now: float) -> None:
        """One round; its strong references end with it (held in `_run` across the sleep, they
        kept a replaced generation's tiers mapped for a tick: test_reload_frees)."""
        with self._lock:
            watched = list(self._watched)
        for rows in watched:  # a released tier stays watched (weakly): the next scan
            rows.release_if_idle(now)  # makes it resident again


_releaser = _Releaser()
