"""Vector rows as int8 with one float32 scale per row, and a scan that reads them in blocks.

Why (issue 42): the static tier (potion, 256 dims) held 1,032 bytes a chunk as float32, 1.3 GB on
the Linux kernel. Symmetric int8 per row (scale = the row's largest magnitude / 127) holds 260
bytes a chunk, and a scan converts `BLOCK_ROWS` rows at a time, so a query's temporary memory is
a few MB whatever the row count. float16 was measured and dropped: numpy has no float16 BLAS, so
its scan converts at a third of the speed (1.3M rows: 0.72 s vs 73 ms for int8, one core).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

#: Rows converted to float32 at a time: 4096 x 256 x 4 = 4 MB, inside a core's cache, which
#: made it the fastest block measured (1.3M rows: 73 ms; 16k rows a block: 113 ms; 64k: 397 ms).
BLOCK_ROWS = 4096


_scratch = threading.local()


def _block_buffer(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 block of `shape`, in a buffer each thread keeps (at most BLOCK_ROWS rows: 4 MB
    at 256 dims). A long-running process serves every block of 128 KiB or more from its own
    mapping, unmapped at `free` (runtime/heap.py), so a fresh block per scan was mapped,
    faulted in page by page and unmapped again: ~360 page faults and ~0.7 ms of a ~3 ms short
    question on eval-search (issue 44)."""
    rows, dim = shape[0], int(np.prod(shape[1:]))
    blocks: dict[int, np.ndarray] = _scratch.__dict__.setdefault("blocks", {})  # one per width
    kept = blocks.get(dim)
    if kept is None or len(kept) < rows:
        kept = blocks[dim] = np.empty((max(rows, min(BLOCK_ROWS, 2 * rows)), dim), np.float32)
    return kept[:rows].reshape(shape)


@dataclass(frozen=True)
class QuantizedRows:
    """Unit rows already stored as int8 with their scales (`unit_quantized`): a chunk worker
    sends the static tier's vectors so, a quarter of the float32 bytes through its pipe, and the
    indexing process keeps them as they are (issue 42)."""

    rows: np.ndarray
    scales: np.ndarray

    def take(self, positions: Sequence[int]) -> QuantizedRows:
        return QuantizedRows(self.rows[positions], self.scales[positions])


def unit_rows(rows: np.ndarray) -> np.ndarray:
    """Each row scaled to unit length (an all-zero row left as it is): what every tier stores."""
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms > 0, norms, 1.0)


def unit_quantized(rows: np.ndarray) -> QuantizedRows:
    """`unit_rows`, then `quantize`d: what a quantized tier stores of them (one definition for
    the tier and the chunk workers, so both store the same bytes)."""
    return QuantizedRows(*quantize(unit_rows(rows)))


def quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 rows, float32 scales) with row ~= int8 row * scale; an all-zero row keeps scale 0."""
    rows = np.asarray(rows, dtype=np.float32)
    peak = np.abs(rows).max(axis=1) if rows.size else np.zeros(len(rows), np.float32)
    scales = (peak / 127.0).astype(np.float32)
    safe = np.where(scales > 0, scales, 1.0).astype(np.float32)
    quantized = np.clip(np.rint(rows / safe[:, None]), -127, 127).astype(np.int8)
    return quantized, scales


def dequantize(rows: np.ndarray, scales: np.ndarray | None) -> np.ndarray:
    """float32 rows (a copy) from stored ones: int8 times their scales, or float32 as they are."""
    if scales is None:
        return np.array(rows, dtype=np.float32)
    return rows.astype(np.float32) * scales[:, None]


def scores(
    rows: np.ndarray,
    scales: np.ndarray | None,
    unit: np.ndarray,
    done: Callable[[], None] | None = None,
) -> np.ndarray:
    """Every row's dot product with `unit` (float32), one block at a time, so the temporary
    memory is one block however many rows there are: int8 rows are converted per block, and
    float32 rows mapped from a .npz are unaligned, which made numpy copy the whole matrix
    before its product (1.3M rows: 1.27 GB and 4.4 s a query, issue 42). `done` is called
    after each block (mapped rows: a one-shot process gives the block's pages back)."""
    out = np.empty(len(rows), dtype=np.float32)
    for start in range(0, len(rows), BLOCK_ROWS):
        block = rows[start : start + BLOCK_ROWS]
        wide = _block_buffer(block.shape)
        np.copyto(wide, block, casting="unsafe")  # int8 or float32: exact in float32
        out[start : start + len(block)] = wide @ unit
        if done is not None:
            done()
    return scaled(out, scales)


def scaled(products: np.ndarray, scales: np.ndarray | None) -> np.ndarray:
    """Rows' products with a unit query, times their scales (float32 rows have none), in
    place: the same float32 multiplication however the products were made."""
    if scales is not None:
        products *= scales
    return products
