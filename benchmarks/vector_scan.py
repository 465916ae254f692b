"""A static-tier query's scan time and temporary memory at a given row count, on one core.

    python -m benchmarks.vector_scan --index-home DIR [--rows 160000,1300000] [--queries 100]
        [--k 200] [--float32] [--layouts listed,scattered]

The rows are real static-tier vectors (every `static.npz` under DIR, e.g. the indexes
`benchmarks.search_eval --index-home DIR` kept), repeated with a little noise up to each row
count; the queries are eval-search questions (`--eval-dir`) embedded by the static model. Each
row count is written as a base file with the tier's own writer, loaded mapped as a search
loads it, and queried `--queries` times (k = 200, `retrieve.CANDIDATES`). Prints p50/p95 scan
time, the query's peak temporary memory (tracemalloc), bytes per row on disk, recall@50 /
@200 of the answer against the exact float32 scan of the same rows, and the process's RSS growth
over the first query and the first 30 on the freshly mapped base (`rss1_mb`, `rss30_mb`; the
`_file_mb` figures are the mapped file pages among them).
`--layouts scattered` writes a large base as before list_order.py (rows in id order, lists
as row numbers) for a before/after on the same rows.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, as the issue asks
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import itertools
import json
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from codeask.core.storage import coarse_lists
from codeask.core.storage.coarse_lists import PROBE_SHARE
from codeask.core.storage.vector_file import read_base, write_base
from codeask.core.storage.vectors import VectorIndex


def seed_rows(index_home: Path) -> np.ndarray:
    """Every static-tier row stored under `index_home`, as float32."""
    parts = []
    for path in sorted(index_home.glob("*/gen-*/static.npz")):
        with np.load(path) as data:
            rows = data["rows"].astype(np.float32)
            if "scales" in data:
                rows *= data["scales"][:, None]
            parts.append(rows)
    if not parts:
        raise SystemExit(f"no static.npz under {index_home}")
    return np.concatenate(parts)


def grown(seeds: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` unit rows: the seeds, then seeds with noise (a tenth of a row's length)."""
    picks = rng.integers(0, len(seeds), size=count)
    rows = seeds[picks].copy()
    noisy = np.arange(count) >= len(seeds)
    noise = rng.standard_normal((int(noisy.sum()), seeds.shape[1])).astype(np.float32)
    rows[noisy] += noise * (0.1 / np.sqrt(seeds.shape[1]))
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)
    return rows


def questions(eval_dir: Path, limit: int) -> np.ndarray:
    """The first `limit` eval-search questions, embedded by the static model."""
    from codeask.config import Settings
    from codeask.core.embedding.static import load_static_embedder

    lines = (eval_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [json.loads(line)["query"] for line in lines[:limit]]
    return np.asarray(load_static_embedder(Settings()).embed(texts), dtype=np.float32)


def loaded(
    rows: np.ndarray, quantized: bool, work: Path, layout: str = "listed"
) -> tuple[VectorIndex, Path, float]:
    """`rows` written as a base by the tier's writer (with coarse lists from
    `coarse_lists.MIN_ROWS` rows; `layout` "scattered": rows in id order, as before
    list_order.py), then loaded mapped; and the seconds the write took."""
    path = work / "static.npz"
    fresh = VectorIndex(rows.shape[1], quantized=quantized)
    step = 65536
    for start in range(0, len(rows), step):
        fresh.add(list(range(start, min(start + step, len(rows)))), rows[start : start + step])
    started = time.perf_counter()
    if layout == "scattered" and len(rows) >= coarse_lists.MIN_ROWS:
        dtype = np.dtype(np.int8 if quantized else np.float32)
        write_base(path, len(rows), rows.shape[1], dtype, fresh.live_blocks())
        _, written, _ = read_base(path, rows.shape[1])
        coarse_lists.add_to(path, written.rows, written.scales)
        del written
    else:
        fresh.write_base(path)
    took = time.perf_counter() - started
    del fresh
    ids, _, _ = read_base(path, rows.shape[1])
    index = VectorIndex.load(path, rows.shape[1], 0, set(ids.tolist()), quantized=quantized)
    return index, path, took


def rss_growth(index: VectorIndex, queries: np.ndarray, k: int) -> dict:
    """MB the process's RSS grew over the first query and the first 30 on a base just mapped
    (its pages may be in the page cache, but none is in this process yet); `file` is the
    share of it that is mapped file pages (the base's rows and scales)."""
    before = _rss_mb()
    index.query(queries[0], k)
    one = _rss_mb()
    for query in queries[1:30]:
        index.query(query, k)
    thirty = _rss_mb()
    return {
        "rss1_mb": one[0] - before[0],
        "rss1_file_mb": one[1] - before[1],
        "rss30_mb": thirty[0] - before[0],
        "rss30_file_mb": thirty[1] - before[1],
    }


def _rss_mb() -> tuple[float, float]:
    """This process's resident set (VmRSS) and its mapped file pages (RssFile), in MB."""
    found = dict.fromkeys(("VmRSS:", "RssFile:"), 0.0)
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(" ", 1)[0].split("\t", 1)[0]
        if key in found:
            found[key] = int(line.split()[1]) / 1024
    return found["VmRSS:"], found["RssFile:"]


def measure(index: VectorIndex, path: Path, rows: np.ndarray, queries: np.ndarray, k: int) -> dict:
    """Time `queries` on the loaded `index` and check them against the exact float32 scan."""
    index.query(queries[0], k)  # pages in
    times, peaks, recall50, recall_k = [], [], [], []
    for query in queries:
        tracemalloc.start()
        start = time.perf_counter()
        got = index.query(query, k)
        times.append(time.perf_counter() - start)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        exact = np.argsort(-(rows @ (query / np.linalg.norm(query))), kind="stable")[:k]
        answer = [chunk_id for chunk_id, _ in got]
        recall50.append(len(set(answer[:50]) & set(exact[:50].tolist())) / 50)
        recall_k.append(len(set(answer) & set(exact.tolist())) / k)
    times.sort()
    return {
        "rows": len(rows),
        "layout": "int8" if index.quantized else "float32",
        "bytes_per_row": path.stat().st_size / len(rows),
        "p50_ms": 1000 * statistics.median(times),
        "p95_ms": 1000 * times[int(0.95 * (len(times) - 1))],
        "temp_mb": max(peaks) / 2**20,
        "recall@50": statistics.mean(recall50),
        f"recall@{k}": statistics.mean(recall_k),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index-home", type=Path, required=True)
    parser.add_argument("--eval-dir", type=Path, default=Path("/work/shared/eval-search"))
    parser.add_argument("--rows", default="160000,1300000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=200)
    parser.add_argument("--float32", action="store_true", help="also the float32 layout")
    parser.add_argument(
        "--layouts", default="listed", help="listed (list order) and/or scattered (before)"
    )
    parser.add_argument(
        "--probes", default="", help="coarse_lists.PROBE_SHARE values to try (0: exact scan)"
    )
    args = parser.parse_args()
    rng = np.random.default_rng(42)
    seeds = seed_rows(args.index_home)
    queries = questions(args.eval_dir, args.queries)
    print(f"{len(seeds)} seed rows, {len(queries)} queries, load {os.getloadavg()}")
    for count in (int(c) for c in args.rows.split(",")):
        rows = grown(seeds, count, rng)
        for quantized, layout in itertools.product(
            (True, False) if args.float32 else (True,), args.layouts.split(",")
        ):
            with tempfile.TemporaryDirectory() as work:
                index, path, took = loaded(rows, quantized, Path(work), layout)
                cold = rss_growth(index, queries, args.k)
                shares = [float(p) for p in args.probes.split(",") if p] or [PROBE_SHARE]
                lists = index._lists
                for share in shares:
                    coarse_lists.PROBE_SHARE = share
                    index._lists = lists if share > 0 else None  # 0: the exact scan
                    result = measure(index, path, rows, queries, args.k)
                    result.update(cold, layout_on_disk=layout, probe_share=share, write_s=took)
                    result.update(load=os.getloadavg()[0])
                    print(json.dumps({k: _round(v) for k, v in result.items()}), flush=True)


def _round(value: object) -> object:
    return round(value, 3) if isinstance(value, float) else value


if __name__ == "__main__":
    main()
