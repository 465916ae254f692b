"""Cost and findings of secret detection on a corpus: what indexing pays for `core.source.secrets`.

    python -m benchmarks.secrets_cost --root ~/.cache/codeask-eval/src/sphinx-5.1.1 [--show 40]
    python -m benchmarks.secrets_cost --root ... --cold 3   # + cold lexical index, on vs off
    python -m benchmarks.secrets_cost --roots-under ~/.cache/codeask-eval/search --root . \
        --baseline <(git show main:server/codeask/core/source/secrets.py) --show 40

Reads exactly the files the indexer would read (discover + load_source), then times
`secrets.redact` over all of them (median of 5 passes) and counts findings per rule, so false
positives on ordinary code can be read with `--show`. `--baseline FILE` (another version of
secrets.py) compares: findings per rule and MB/s of both, and shows only the new findings.
`--cold N` also times N cold lexical
indexes with detection and N with it switched off, interleaved (the cores are shared, so only
a paired comparison means anything).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

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


def timed_pass(texts: list[tuple[str, str]], run: Callable[[str], object] = redact) -> float:
    start = time.perf_counter()
    for _, text in texts:
        run(text)
    return time.perf_counter() - start


def load_baseline(path: Path) -> ModuleType:
    """Another version of `core/source/secrets.py`, imported under its own name."""
    spec = importlib.util.spec_from_file_location("secrets_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def compare(texts: list[tuple[str, str]], baseline: ModuleType, show: int) -> None:
    """Findings per rule before (baseline) and after (this tree), the new ones shown, and the
    time per MB of both (medians of 3 passes, interleaved)."""
    megabytes = sum(len(t.encode()) for _, t in texts) / 1e6
    times: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(3):
        times["before"].append(timed_pass(texts, baseline.redact))
        times["after"].append(timed_pass(texts, redact))
    before: Counter[str] = Counter()
    after: Counter[str] = Counter()
    shown = 0
    for rel, text in texts:
        found = baseline.find_secrets(text)
        old = {(a, b) for a, b, _ in found}
        before.update(rule for _, _, rule in found)
        for a, b, rule in find_secrets(text):
            after[rule] += 1
            if (a, b) not in old and shown < show:
                line = text.count("\n", 0, a) + 1
                print(f"  new {rel}:{line} {rule}: {text[max(0, a - 40) : b + 10]!r}")
                shown += 1
    for rule in sorted(set(before) | set(after)):
        if before[rule] != after[rule]:
            print(f"  {rule}: {before[rule]} -> {after[rule]}")
    for arm in ("before", "after"):
        seconds = statistics.median(times[arm])
        print(
            f"{arm}: {sum((before if arm == 'before' else after).values())} findings; "
            f"{megabytes:.1f} MB in {seconds:.2f} s ({seconds / megabytes * 1000:.1f} ms/MB)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default="sphinx==5.1.1")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL)
    parser.add_argument(
        "--root", type=Path, action="append", help="a folder instead of an eval corpus"
    )
    parser.add_argument("--roots-under", type=Path, help="every sub-folder is a root")
    parser.add_argument("--baseline", type=Path, help="another secrets.py to compare with")
    parser.add_argument("--show", type=int, default=0, help="print this many findings")
    parser.add_argument("--cold", type=int, default=0, help="cold lexical index runs per arm")
    args = parser.parse_args()
    roots = list(args.root or [])
    if args.roots_under:
        roots += sorted(p for p in args.roots_under.iterdir() if p.is_dir())
    if args.baseline:
        texts = [(f"{r.name}/{rel}", t) for r in roots for rel, t in load_texts(r)]
        print(f"{len(roots)} roots, {len(texts)} files")
        compare(texts, load_baseline(args.baseline), args.show)
        return
    root = roots[0] if roots else _corpus_root(args.eval_dir, args.corpus)
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
