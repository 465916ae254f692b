"""Issue 44, LAT: a vector scan converts its rows into a block buffer each thread keeps. A
long-running process (`codeask serve`, `mcp`, the daemon) has every block of 128 KiB or more
mapped and unmapped at `free` (runtime/heap.py), so a fresh 4 MB block per scan cost ~360 page
faults a short question. The scores are those of the product over a fresh float32 copy, bit for
bit, for int8 rows with scales, float32 rows and row counts across several blocks."""

from __future__ import annotations

import threading

import numpy as np

from codeask.core.storage import quantized_rows
from codeask.core.storage.quantized_rows import BLOCK_ROWS, quantize, scores


def reference(rows: np.ndarray, scales: np.ndarray | None, unit: np.ndarray) -> np.ndarray:
    out = np.concatenate(
        [
            np.asarray(rows[s : s + BLOCK_ROWS], dtype=np.float32) @ unit
            for s in range(0, len(rows), BLOCK_ROWS)
        ]
    )
    return out * scales if scales is not None else out


def test_scans_reuse_one_block_buffer_and_score_bit_for_bit() -> None:
    rng = np.random.default_rng(44)
    unit = rng.standard_normal(256).astype(np.float32)
    unit /= np.linalg.norm(unit)
    seen: list[np.ndarray] = []
    for count in (7, 3000, 2 * BLOCK_ROWS + 5, 100):
        plain = rng.standard_normal((count, 256)).astype(np.float32)
        int8, scales = quantize(plain)
        assert scores(int8, scales, unit).tobytes() == reference(int8, scales, unit).tobytes()
        assert scores(plain, None, unit).tobytes() == reference(plain, None, unit).tobytes()
        seen.append(quantized_rows._block_buffer((1, 256)))
    assert all(np.shares_memory(seen[-1], b) for b in seen[2:])  # grown to a full block, kept
    assert len(quantized_rows._scratch.blocks[256]) == BLOCK_ROWS

    other: list[np.ndarray] = []  # another thread has its own
    thread = threading.Thread(target=lambda: other.append(quantized_rows._block_buffer((4, 256))))
    thread.start()
    thread.join()
    assert not np.shares_memory(other[0], seen[-1])
