"""Cost and findings of secret detection on a corpus: what indexing pays for `core.source.secrets`.

    python -m benchmarks.secrets_cost --root ~/.cache/codeask-eval/src/sphinx-5.1.1 [--show 40]
    python -m benchmarks.secrets_cost --root ... --cold 3   # + cold lexical index, on vs off

Reads exactly the files the indexer would read (discover + load_source), then times
`secrets.redact` over all of them (median of 5 passes) and counts findings per rule, so false
positives on ordinary code can be read with `--show`. `--cold N` also times N cold lexical
indexes with detection and N with it switched off, interleaved (the cores are shared, so only
a paired comparison means anything).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.retrieval import DEFAULT_EVAL, corpus_roots
from codeask.config import IndexSettings, build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.source import chunk
from codeask.core.source.discover import LoadedSource, discover, load_source
from codeask.core.source.secrets import find_secrets, redact


def load_texts(root: Path) -> list[tuple[str, str]]:
    """(rel, text) of every file the indexer would chunk."""
    settings = IndexSettings()
    out = []
    for source in discover(root, settings).files:
        loaded = load_source(source, settings)
        if isinstance(loaded, LoadedSource):
            out.append((source.rel, loaded.text))
    return out


def timed_pass(texts: list[tuple[str, str]]) -> float:
    start = time.perf_counter()
    for _, text in texts:
        redact(text)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="sphinx==5.1.1")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL)
    parser.add_argument("--root", type=Path, help="a folder instead of an eval corpus")
    parser.add_argument("--show", type=int, default=0, help="print this many findings")
    parser.add_argument("--cold", type=int, default=0, help="cold lexical index runs per arm")
    args = parser.parse_args()
    root = args.root or _corpus_root(args.eval_dir, args.corpus)
    texts = load_texts(root)
    megabytes = sum(len(t.encode()) for _, t in texts) / 1e6
    seconds = statistics.median(timed_pass(texts) for _ in range(5))
    rules: Counter[str] = Counter()
    shown = 0
    for rel, text in texts:
        for start, end, rule in find_secrets(text):
            rules[rule] += 1
            if shown < args.show:
                line = text.count("\n", 0, start) + 1
                print(f"  {rel}:{line} {rule}: {text[max(0, start - 30) : end + 10]!r}")
                shown += 1
    print(
        f"{root.name}: {len(texts)} files, {megabytes:.2f} MB; detection {seconds:.3f} s "
        f"({megabytes / seconds:.1f} MB/s, {seconds / megabytes * 1000:.0f} ms/MB); "
        f"findings {sum(rules.values())} {dict(rules)}"
    )
    if args.cold:
        cold_pair(root, args.cold)


def cold_lexical(root: Path) -> float:
    """Seconds for one cold `refresh(embed=False)` into a fresh index folder."""
    with tempfile.TemporaryDirectory() as work:
        settings, _ = build_settings(
            {
                "index": {"location": work},
                "embed": {"cache_dir": work},
                "history": {"enabled": False},
            }
        )
        folder = FolderIndex(root, settings)
        start = time.perf_counter()
        folder.refresh(embed=False)
        return time.perf_counter() - start


def cold_pair(root: Path, runs: int) -> None:
    """Median cold lexical index time with detection on and off: runs alternate ABBA so a load
    that drifts during the measurement favours neither arm."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for i in range(runs):
        for detect in (True, False) if i % 2 == 0 else (False, True):
            times[detect].append(_cold(root, detect))
    a, b = statistics.median(times[True]), statistics.median(times[False])
    print(f"cold lexical index: {a:.2f} s with detection, {b:.2f} s without ({(a - b) / b:+.1%})")


def _cold(root: Path, detect: bool) -> float:
    redact_text = chunk.redact_text
    if not detect:
        chunk.redact_text = lambda text: text
    try:
        return cold_lexical(root)
    finally:
        chunk.redact_text = redact_text


def _corpus_root(eval_dir: Path, corpus: str) -> Path:
    package, _, version = corpus.partition("==")
    instances = eval_dir / "dev.jsonl"
    return corpus_roots(eval_dir, instances, fetch=False)[(package, version)]


if __name__ == "__main__":
    main()
