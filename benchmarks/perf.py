"""Performance bench: one table of indexing and query numbers for a corpus (or several).

    python -m benchmarks.perf --corpus sphinx==5.1.1
    python -m benchmarks.perf --scale   # every corpus of dev.jsonl as one multi-root workspace
    python -m benchmarks.perf --eval-dir tests/data/mini_eval \
        --corpus-root tests/data/mini_eval/corpus --corpus codeask==mini   # the vendored sample

The eval folder (--eval-dir, else $CODEASK_EVAL_DIR, else ../shared/eval beside the repo) gives
the corpora (its fetch_corpus.py, or --corpus-root) and the queries (its dev.jsonl questions).

Cold runs use a fresh index folder and a fresh embedding cache. Cheap phases are repeated and
reported as medians; the full embedding runs once (it takes minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.retrieval import corpus_roots, default_eval_dir, load_instances, require
from codeask.config import Settings, build_settings
from codeask.core.embedding.embed import FastEmbedder, load_embedder
from codeask.core.indexer import FolderIndex
from codeask.core.search.retrieve import Mode, search

#: A query this short is a typed search (titles of the eval's issues), not a pasted report.
SHORT_QUERY = 200


def settings_for(work: Path, cache: Path, threads: int) -> Settings:
    """Index under `work`, embeddings cached under `cache`, history off (sdists have no git)."""
    settings, _ = build_settings(
        {
            "index": {"location": str(work / "indexes")},
            "embed": {"cache_dir": str(cache), "threads": threads},
            "history": {"enabled": False},
        }
    )
    return settings


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds taken and the result."""
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def median_of(runs: int, fn: Callable[[], Any]) -> float:
    """Median seconds of `runs` calls."""
    return statistics.median(timed(fn)[0] for _ in range(runs))


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def eval_queries(instances: Path, count: int, seed: int = 7) -> list[str]:
    """Queries from the eval questions: titles, first paragraphs, then sentences, up to `count`."""
    questions = [i["question"] for i in load_instances(instances)]
    pool = [q.strip().splitlines()[0][:200] for q in questions]
    pool += [q.strip()[:400] for q in questions]
    sentences = [s.strip() for q in questions for s in re.split(r"(?<=[.?!])\s+", q) if len(s) > 30]
    random.Random(seed).shuffle(sentences)
    pool += sentences
    return pool[:count]


def sample_copy(root: Path, target: Path, count: int) -> Path:
    """The first `count` Python files of a corpus, copied (for smoke runs that must stay fast)."""
    for source in sorted(root.rglob("*.py"))[:count]:
        dest = target / source.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
    return target


def cold_index(folders: list[FolderIndex]) -> dict[str, float]:
    """Time to lexically searchable and to fully embedded, and pipeline throughput."""
    lexical = 0.0
    for folder in folders:
        seconds, _ = timed(partial(folder.refresh, embed=False))
        lexical += seconds
    chunks = sum(f.storage.chunk_count() for f in folders)
    embed_seconds = 0.0
    computed = 0
    for folder in folders:
        seconds, report = timed(folder.embed_pending)
        embed_seconds += seconds
        computed += report.vectors_computed
    return {
        "lexical_s": lexical,
        "embed_s": embed_seconds,
        "embedded_s": lexical + embed_seconds,
        "chunks": chunks,
        "computed": computed,
        "pipeline_cps": computed / embed_seconds if embed_seconds and computed else 0.0,
    }


def raw_fastembed_cps(folders: list[FolderIndex], settings: Settings, sample: int) -> float:
    """fastembed alone on a random sample of the same chunks' texts (unsorted, as-is)."""
    texts = [c.embed_text() for f in folders for c in f.storage.all_chunks()]
    random.Random(3).shuffle(texts)
    texts = texts[:sample]
    model = FastEmbedder(settings.embed, Path(tempfile.mkdtemp()) / "models")
    raw = model.chunk_model()
    list(raw.embed(texts[:32], batch_size=settings.embed.batch_size))
    seconds, _ = timed(lambda: list(raw.embed(texts, batch_size=settings.embed.batch_size)))
    return len(texts) / seconds


def mid_sized_python_file(folder: FolderIndex) -> str:
    """The median-sized indexed Python file of a local folder index."""
    candidates = sorted(
        (
            r
            for p in folder.storage.paths()
            if (r := folder.storage.file(p)) is not None
            and r.path.endswith(".py")
            and not r.skipped
        ),
        key=lambda r: r.size,
    )
    return candidates[len(candidates) // 2].path


def edit_one_file(folder: FolderIndex, rel: str | None = None) -> tuple[float, float, int]:
    """Append a function to `rel` (default: a mid-sized Python file) and re-index it:
    (lexical s, total s, vectors computed); the file is restored afterwards."""
    rel = rel or mid_sized_python_file(folder)
    path = folder.root / rel
    original = path.read_bytes()
    try:
        stamp = time.time_ns()
        path.write_bytes(original + f"\n\ndef bench_added_{stamp}(x):\n    return x\n".encode())
        report = folder.update_paths([rel])
        return report.seconds_lexical, report.seconds_total, report.vectors_computed
    finally:
        path.write_bytes(original)
        folder.update_paths([rel])


def query_latency(
    folders: list[FolderIndex], queries: list[str], mode: Mode
) -> tuple[float, float]:
    """(p50 ms, p95 ms) of in-process search, k=10, warm: after one query and with the
    lexical tables in memory (as a server has them once a run of indexing ends)."""
    search(folders, queries[0], k=10, mode=mode)
    for folder in folders:
        folder.storage.warm_up()
    times = [timed(partial(search, folders, q, k=10, mode=mode))[0] * 1000 for q in queries]
    return percentile(times, 0.5), percentile(times, 0.95)


def disk_mb(folders: list[FolderIndex]) -> float:
    """Index folders' size in MB."""
    return sum(f.storage.disk_bytes() for f in folders) / 1e6


def run(args: argparse.Namespace) -> dict[str, Any]:
    instances = require(args.eval_dir / "dev.jsonl", "the eval's questions file")
    roots_by_key = corpus_roots(args.eval_dir, instances, not args.no_fetch, args.corpus_root)
    if args.scale:
        roots = sorted(roots_by_key.values())
    else:
        package, _, version = args.corpus.partition("==")
        if (package, version) not in roots_by_key:
            known = ", ".join(sorted(f"{p}=={v}" for p, v in roots_by_key))
            print(
                f"error: no corpus {args.corpus} in {instances} (known: {known})", file=sys.stderr
            )
            raise SystemExit(2)
        roots = [roots_by_key[(package, version)]]
    work = Path(tempfile.mkdtemp(prefix="codeask-perf-"))
    if args.sample_files:
        roots = [
            sample_copy(root, work / "sample" / root.name, args.sample_files) for root in roots
        ]
    cache = Path(args.cache) if args.cache else work / "cache"
    settings = settings_for(work, cache, args.threads)
    folders = [FolderIndex(root, settings) for root in roots]
    result: dict[str, Any] = {
        "corpus": "scale" if args.scale else args.corpus,
        "cores": os.cpu_count(),
    }
    result["files"] = 0
    result.update(cold_index(folders))
    result["index_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["files"] = sum(f.status().files for f in folders)
    result["loc"] = sum(
        c.end_line - c.start_line + 1
        for f in folders
        for c in f.storage.all_chunks()
        if c.part <= 1 and c.kind in ("function", "method", "class", "module", "section", "window")
    )
    if result["computed"]:
        result["raw_cps"] = raw_fastembed_cps(folders, settings, args.raw_sample)
        result["pipeline_vs_raw"] = result["pipeline_cps"] / result["raw_cps"]
    result["nochange_s"] = median_of(args.repeat, lambda: [f.refresh(embed=False) for f in folders])
    edits = [edit_one_file(folders[0]) for _ in range(args.repeat)]
    result["edit_lexical_s"] = statistics.median(e[0] for e in edits)
    result["edit_total_s"] = statistics.median(e[1] for e in edits)
    result["edit_vectors"] = statistics.median(e[2] for e in edits)
    queries = eval_queries(instances, args.queries)
    load_embedder(settings)
    for mode in ("lexical", "dense", "hybrid"):
        p50, p95 = query_latency(folders, queries, mode)
        result[f"{mode}_p50_ms"], result[f"{mode}_p95_ms"] = p50, p95
    short = [q for q in queries if len(q) <= SHORT_QUERY]
    result["short_queries"] = len(short)
    result["short_p50_ms"], result["short_p95_ms"] = query_latency(folders, short, "hybrid")
    reopen_s, _ = timed(lambda: [FolderIndex(f.root, settings, mode="read") for f in folders])
    result["open_s"] = reopen_s
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["disk_mb"] = disk_mb(folders)
    for folder in folders:
        folder.close()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return result


def table(result: dict[str, Any]) -> str:
    """The human table."""
    rows = [
        (
            "corpus",
            f"{result['corpus']} ({result['files']} files, {result['chunks']} chunks, "
            f"~{result['loc'] / 1000:.0f}k lines)",
        ),
        ("machine", f"{result['cores']} cores"),
        (
            "cold: searchable (lexical + static tier: dense-capable)",
            f"{result['lexical_s']:.1f} s",
        ),
        (
            "cold: fully embedded",
            f"{result['embedded_s']:.1f} s ({result['computed']} vectors computed)",
        ),
        ("embedding pipeline", f"{result['pipeline_cps']:.1f} chunks/s"),
    ]
    if "raw_cps" in result:
        rows.append(
            (
                "raw fastembed, same chunks",
                f"{result['raw_cps']:.1f} chunks/s "
                f"(pipeline = {100 * result['pipeline_vs_raw']:.0f}% of raw)",
            )
        )
    rows += [
        ("no-change re-index (median)", f"{result['nochange_s']:.2f} s"),
        (
            "one-file edit re-index (median)",
            f"{result['edit_lexical_s']:.3f} s lexical, "
            f"{result['edit_total_s']:.3f} s with {result['edit_vectors']:.0f} new vectors",
        ),
        ("open index from disk", f"{result['open_s']:.2f} s"),
    ]
    for mode in ("lexical", "dense", "hybrid"):
        rows.append(
            (
                f"query {mode} p50 / p95",
                f"{result[f'{mode}_p50_ms']:.1f} / {result[f'{mode}_p95_ms']:.1f} ms",
            )
        )
    rows.append(
        (
            f"query hybrid, {result['short_queries']} short queries (≤ {SHORT_QUERY} chars)",
            f"{result['short_p50_ms']:.1f} / {result['short_p95_ms']:.1f} ms",
        )
    )
    rows += [
        (
            "peak RSS of the cold index (before the raw comparison)",
            f"{result['index_rss_mb']:.0f} MB",
        ),
        ("peak RSS", f"{result['peak_rss_mb']:.0f} MB"),
        ("index on disk", f"{result['disk_mb']:.1f} MB"),
    ]
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"| {name.ljust(width)} | {value} |" for name, value in rows)


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", default="sphinx==5.1.1", help="package==version from dev.jsonl")
    parser.add_argument(
        "--scale", action="store_true", help="all corpora as one multi-root workspace"
    )
    parser.add_argument("--repeat", type=int, default=5, help="runs of each cheap phase (median)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--raw-sample", type=int, default=1000, help="chunks for the raw fastembed run"
    )
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--cache", help="embedding cache folder (default: fresh, i.e. cold)")
    parser.add_argument("--sample-files", type=int, default=0, help="smoke: only N Python files")
    parser.add_argument("--keep", action="store_true", help="keep the temporary index folders")
    parser.add_argument("--no-fetch", action="store_true")
    parser.add_argument(
        "--eval-dir",
        type=Path,
        default=default_eval_dir(),
        help="the eval folder (default: $CODEASK_EVAL_DIR, else ../shared/eval beside the repo)",
    )
    parser.add_argument(
        "--corpus-root",
        type=Path,
        help="corpora already unpacked as DIR/<package>-<version> (no fetch_corpus.py)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
