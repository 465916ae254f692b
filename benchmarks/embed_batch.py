"""MiniLM throughput and peak memory by batch size, each size in a fresh process.

    python -m benchmarks.embed_batch --root ~/.cache/codeask-eval/src/sphinx-5.1.1 \
        [--sizes 1,4,16] [--texts 800]

Chunks the folder with the real chunker (every indexable file, as `codeask index` would), takes
a fixed random sample of the chunks' embed texts, and embeds it with the packaged MiniLM model
once per batch size, each in its own process so that the peak RSS is that size's alone.
Prints chunks/s and peak RSS per size.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from codeask.config import build_settings
from codeask.core.embedding.embed import FastEmbedder, cache_dir
from codeask.core.source.chunk import chunk_file
from codeask.core.source.discover import LoadedSource, discover, load_source


def sample_texts(root: Path, count: int, seed: int = 5) -> list[str]:
    """Embed texts of `count` random chunks of the folder."""
    settings, _ = build_settings({})
    texts: list[str] = []
    for found in discover(root, settings.index).files:
        loaded = load_source(found, settings.index)
        if isinstance(loaded, LoadedSource):
            chunks = chunk_file(found.rel, loaded.text, settings.chunk).chunks
            texts += [c.embed_text() for c in chunks]
    random.Random(seed).shuffle(texts)
    return texts[:count]


def one_size(texts_file: Path, batch_size: int) -> dict[str, float]:
    """Run in a child: embed the texts at this batch size."""
    texts = json.loads(texts_file.read_text(encoding="utf-8"))
    settings, _ = build_settings({"embed": {"batch_size": batch_size}})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    embedder = FastEmbedder(settings.embed, cache_dir(settings) / "models")
    started = time.perf_counter()
    embedder.embed(texts)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"batch": batch_size, "cps": len(texts) / seconds, "peak_mb": peak, "base_mb": before}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", type=Path, help="the folder whose chunks are embedded")
    parser.add_argument("--sizes", default="1,4,16")
    parser.add_argument("--texts", type=int, default=800)
    parser.add_argument("--child", nargs=2, metavar=("TEXTS_JSON", "BATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(one_size(Path(args.child[0]), int(args.child[1]))))
        return 0
    if args.root is None or not args.root.is_dir():
        print("error: --root FOLDER is required (a corpus to chunk)", file=sys.stderr)
        return 2
    texts = sample_texts(args.root, args.texts)
    texts_file = Path(f"/tmp/codeask-embed-batch-{len(texts)}.json")
    texts_file.write_text(json.dumps(texts), encoding="utf-8")
    print(f"{len(texts)} chunks of {args.root}")
    print("| batch | chunks/s | peak RSS |\n|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.embed_batch", "--child", str(texts_file), str(size)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        row = json.loads(out.strip().splitlines()[-1])
        print(f"| {size} | {row['cps']:.1f} | {row['peak_mb']:.0f} MB |", flush=True)
    texts_file.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
