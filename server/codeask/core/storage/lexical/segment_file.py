"""One segment of a lexical table in one file, read through a memory map.

Layout: 8 magic bytes, the JSON header's length (8 bytes, little-endian), the header (each
array's dtype, length and offset, and the segment's few numbers), then the arrays, each at a
64-byte boundary: the sorted term dictionary (bytes and bounds), where each term's postings
start, the postings (row steps and weighted tf, one or two bytes each: lexical/packed.py),
the row lengths (uint32), the keys (int64 chunk ids, or the paths' bytes and bounds), the keys'
sort order and the rows' tie order. Opening reads the header and maps the file: a query then
reads only its terms' dictionary probes and postings, and nothing is decoded whole.

CQLEXS2 since the postings are packed; a CQLEXS1 file (rows int32, tf float32) reads as it is,
and a codeask from before refuses a CQLEXS2 file (`SegmentFileError`: it rebuilds the tables).
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from pathlib import Path

import numpy as np

from codeask.core.runtime import private_files
from codeask.core.storage.lexical.bm25 import Postings, Segment, StringColumn, TermSlices
from codeask.core.storage.lexical.packed import PackedFreqs, PackedRows, pack_freqs, pack_rows

MAGIC = b"CQLEXS2\n"
#: Segment files written before the postings were packed: read as they are.
MAGIC_PLAIN = b"CQLEXS1\n"
ALIGN = 64


class SegmentFileError(ValueError):
    """A segment file that is not one (truncated, another format): the index is rebuilt."""


def _arrays(segment: Segment) -> dict[str, np.ndarray]:
    postings = segment.postings
    names = postings.slices.names
    starts = np.asarray(postings.slices.starts, dtype=np.int64)
    arrays = {
        "terms": np.frombuffer(names.blob(), dtype=np.uint8),
        "term_bounds": names.bounds(),
        "starts": starts,
        **pack_rows(np.asarray(postings.rows), starts),
        **pack_freqs(np.asarray(postings.freqs)),
        "lengths": np.asarray(postings.lengths),
        "order": np.asarray(segment.order, dtype=np.int64),
    }
    keys = postings.keys
    if isinstance(keys, StringColumn):
        arrays["paths"] = np.frombuffer(keys.blob(), dtype=np.uint8)
        arrays["path_bounds"] = keys.bounds()
    else:
        arrays["keys"] = np.asarray(keys, dtype=np.int64)
        arrays["key_sort"] = np.argsort(arrays["keys"], kind="stable").astype(np.int64)
    return arrays


def write_segment(path: Path, segment: Segment) -> None:
    """Write `segment` to `path` (owner-only, fsynced: complete before a manifest names it)."""
    arrays = _arrays(segment)
    layout: dict[str, list[object]] = {}
    offset = 0
    for name, array in arrays.items():
        layout[name] = [array.dtype.str, int(array.size), offset]
        offset += -(-array.nbytes // ALIGN) * ALIGN
    postings = segment.postings
    header = json.dumps(
        {"arrays": layout, "average": postings.average, "total": postings.total}
    ).encode()
    start = -(-(len(MAGIC) + 8 + len(header)) // ALIGN) * ALIGN
    fd = private_files.open_fd(path, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "wb") as handle:
        handle.write(MAGIC + struct.pack("<Q", len(header)) + header)
        for name, array in arrays.items():
            handle.seek(start + int(layout[name][2]))  # type: ignore[call-overload]
            handle.write(np.ascontiguousarray(array).data.cast("B"))  # no bytes copy
        handle.truncate(start + offset)
        handle.flush()
        os.fsync(handle.fileno())


def open_segment(path: Path) -> tuple[Postings, np.ndarray]:
    """(postings, tie order) of the segment file at `path`, memory-mapped."""
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < len(MAGIC) + 8:
            raise SegmentFileError(f"{path}: truncated")
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    if mapped[: len(MAGIC)] not in (MAGIC, MAGIC_PLAIN):
        raise SegmentFileError(f"{path}: not a lexical segment")
    (length,) = struct.unpack("<Q", mapped[len(MAGIC) : len(MAGIC) + 8])
    try:
        header = json.loads(mapped[len(MAGIC) + 8 : len(MAGIC) + 8 + length])
    except ValueError as exc:
        raise SegmentFileError(f"{path}: unreadable header ({exc})") from exc
    start = -(-(len(MAGIC) + 8 + length) // ALIGN) * ALIGN
    arrays: dict[str, np.ndarray] = {}
    for name, (dtype, count, offset) in header["arrays"].items():
        end = start + offset + count * np.dtype(dtype).itemsize
        if end > size:
            raise SegmentFileError(f"{path}: truncated")
        arrays[name] = np.frombuffer(mapped, dtype=dtype, count=count, offset=start + offset)
    return _postings(mapped, start, header, arrays), arrays["order"]


def _postings(
    mapped: mmap.mmap, start: int, header: dict[str, object], arrays: dict[str, np.ndarray]
) -> Postings:
    layout = header["arrays"]
    assert isinstance(layout, dict)
    terms = StringColumn(mapped, arrays["term_bounds"], start + int(layout["terms"][2]))
    keys: StringColumn | np.ndarray
    if "paths" in arrays:
        keys = StringColumn(mapped, arrays["path_bounds"], start + int(layout["paths"][2]))
    else:
        keys = arrays["keys"]
    rows: np.ndarray | PackedRows = arrays.get("rows")  # type: ignore[assignment]
    freqs: np.ndarray | PackedFreqs = arrays.get("freqs")  # type: ignore[assignment]
    if rows is None:  # CQLEXS2
        rows, freqs = PackedRows(arrays, arrays["starts"]), PackedFreqs(arrays)
    return Postings(
        keys,
        arrays["lengths"],
        float(header["average"]),  # type: ignore[arg-type]
        TermSlices(terms, arrays["starts"]),
        rows,
        freqs,
        total=float(header["total"]),  # type: ignore[arg-type]
        key_sort=arrays.get("key_sort"),
        mapping=mapped,
    )
