"""A vector tier's two snapshot files: the base (mapped, rewritten only when folded) and its delta.

Why (issue 42): a one-file edit rewrote the whole tier (1.3 GB of static.npz on the Linux kernel).
Now the base holds the tier's rows as of its last fold and is written once, streamed block by
block (never a second copy of the rows in memory); the delta holds what changed since: the
rows added or replaced (ids, rows, scales) and the base rows no longer live (`removed`, as row
numbers of that base), plus the base's row count so a delta is never applied to another base.
The delta is read whole (it is small); the base is mapped (mapped_rows.py).
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from codeask.core.storage import coarse_lists
from codeask.core.storage.mapped_rows import ROW_DTYPES, MappedRows, map_rows
from codeask.core.storage.quantized_rows import dequantize, quantize


@dataclass
class Stored:
    """Rows as stored: float32 (`scales` None) or int8 with one float32 scale a row."""

    ids: np.ndarray
    rows: np.ndarray
    scales: np.ndarray | None


@dataclass
class Delta(Stored):
    """What changed since a base of `base_rows` rows: `removed` are row numbers in that base."""

    removed: np.ndarray
    base_rows: int


def read_base(
    path: Path, dim: int
) -> tuple[np.ndarray, MappedRows | Stored, coarse_lists.CoarseLists | None]:
    """(ids, rows, coarse lists) of a base file: the rows mapped, or read when the file is
    compressed. ValueError (naming the file) for anything that is not a tier file of `dim`."""
    try:
        with zipfile.ZipFile(path) as archive:
            with archive.open("ids.npy") as member:
                ids = np.asarray(np.lib.format.read_array(member), dtype=np.int64)
            if ids.ndim != 1:
                raise ValueError(f"{path.name}: ids of shape {ids.shape}")
            lists = coarse_lists.read(archive, len(ids), dim, path.name)
            base = map_rows(path, archive, "rows.npy", len(ids), dim)
            if base is not None:
                return ids, base, lists
            return ids, _read_stored(archive, ids, dim, path.name), lists
    except (zipfile.BadZipFile, KeyError, EOFError, OSError) as exc:
        raise ValueError(f"{path.name} is not a vector file ({exc})") from exc


def read_delta(path: Path, dim: int) -> Delta:
    """A delta file, read whole; ValueError (naming the file) when it is not one of `dim`."""
    try:
        with zipfile.ZipFile(path) as archive:
            ids = np.asarray(_member(archive, "ids.npy"), dtype=np.int64)
            stored = _read_stored(archive, ids, dim, path.name)
            removed = np.asarray(_member(archive, "removed.npy"), dtype=np.int64)
            base_rows = np.asarray(_member(archive, "base_rows.npy"), dtype=np.int64)
    except (zipfile.BadZipFile, KeyError, EOFError, OSError) as exc:
        raise ValueError(f"{path.name} is not a vector delta file ({exc})") from exc
    if ids.ndim != 1 or removed.ndim != 1 or base_rows.shape != (1,):
        raise ValueError(f"{path.name}: a delta of the wrong shape")
    return Delta(stored.ids, stored.rows, stored.scales, removed, int(base_rows[0]))


def _member(archive: zipfile.ZipFile, name: str) -> np.ndarray:
    with archive.open(name) as member:
        return np.asarray(np.lib.format.read_array(member, allow_pickle=False))


def _read_stored(archive: zipfile.ZipFile, ids: np.ndarray, dim: int, name: str) -> Stored:
    rows = _member(archive, "rows.npy")
    if rows.shape != (len(ids), dim):
        raise ValueError(f"{name}: {rows.shape} vectors, expected {(len(ids), dim)}")
    if rows.dtype not in ROW_DTYPES:
        raise ValueError(f"{name}: rows of {rows.dtype}, expected float32 or int8")
    scales = None
    if rows.dtype == np.int8:
        scales = np.asarray(_member(archive, "scales.npy"), dtype=np.float32)
        if scales.shape != (len(ids),):
            raise ValueError(f"{name}: {scales.shape} scales for {len(ids)} rows")
    return Stored(ids, rows, scales)


def empty_delta(dim: int, dtype: np.dtype) -> Delta:
    """A delta that changes nothing (it then fits any base: `base_rows` -1)."""
    scales = np.zeros(0, np.float32) if dtype == np.int8 else None
    rows = np.zeros((0, dim), dtype)
    return Delta(np.zeros(0, np.int64), rows, scales, np.zeros(0, np.int64), -1)


def as_layout(
    quantized: bool, ids: np.ndarray, rows: np.ndarray, scales: np.ndarray | None
) -> Stored:
    """Rows in a tier's layout: int8 with scales for a quantized tier (a float32 base of one is
    quantized), float32 otherwise."""
    if quantized and scales is None:
        return Stored(ids, *quantize(rows))
    if not quantized and scales is not None:
        return Stored(ids, dequantize(rows, scales), None)
    return Stored(ids, np.asarray(rows), scales)


def encode_delta(delta: Delta) -> bytes:
    """A delta as an uncompressed .npz (small: what changed since the base)."""
    out = io.BytesIO()
    arrays = {
        "ids": delta.ids,
        "rows": delta.rows,
        "removed": delta.removed,
        "base_rows": np.array([delta.base_rows], dtype=np.int64),
    }
    if delta.scales is not None:
        arrays["scales"] = delta.scales
    np.savez(out, **arrays)  # type: ignore[arg-type]
    return out.getvalue()


def write_base(path: Path, count: int, dim: int, dtype: np.dtype, blocks: Iterable[Stored]) -> None:
    """Stream `count` rows of `dim` into an uncompressed .npz at `path`, then fsync it."""
    with path.open("wb") as handle:
        write_base_to(handle, count, dim, dtype, blocks)
        handle.flush()
        os.fsync(handle.fileno())


def write_base_to(
    handle: IO[bytes], count: int, dim: int, dtype: np.dtype, blocks: Iterable[Stored]
) -> None:
    """Stream `count` rows of `dim` into an uncompressed .npz, block by block (the rows are
    never all in memory at once): rows first, then ids and scales."""
    ids = np.empty(count, dtype=np.int64)
    scales = np.empty(count, dtype=np.float32) if dtype == np.int8 else None
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        with archive.open("rows.npy", "w", force_zip64=True) as member:
            header = {"descr": dtype.str, "fortran_order": False, "shape": (count, dim)}
            np.lib.format.write_array_header_1_0(member, header)
            filled = _stream_rows(member, blocks, ids, scales, dtype)
        if filled != count:
            raise ValueError(f"{filled} vector rows written, expected {count}")
        write_member(archive, "ids.npy", ids)
        if scales is not None:
            write_member(archive, "scales.npy", scales)


def _stream_rows(
    member: IO[bytes],
    blocks: Iterable[Stored],
    ids: np.ndarray,
    scales: np.ndarray | None,
    dtype: np.dtype,
) -> int:
    filled = 0
    for block in blocks:
        end = filled + len(block.ids)
        ids[filled:end] = block.ids
        if scales is not None and block.scales is not None:
            scales[filled:end] = block.scales
        member.write(np.ascontiguousarray(block.rows, dtype=dtype).tobytes())
        filled = end
    return filled


def write_member(archive: zipfile.ZipFile, name: str, array: np.ndarray) -> None:
    """One array as a stored .npy member of an archive open for writing or appending."""
    with archive.open(name, "w", force_zip64=True) as member:
        np.lib.format.write_array(member, array, allow_pickle=False)
