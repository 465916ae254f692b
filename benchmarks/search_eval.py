"""Short code-search questions in many languages (the `../shared/eval-search` layout).

    python -m benchmarks.search_eval --eval-dir DIR --out RUN.jsonl [--set section.field=value]...
        [--repos a,b] [--work DIR] [--per-query ROWS.jsonl [--compare OTHER_ROWS.jsonl]]

DIR holds `queries.jsonl`, `repos.tsv`, `score.py` and the sources, either unpacked as `repos/`
or as `repos.tar.xz` (unpacked once into --work). Each repository's `benchmark_root` is indexed
once with the first pass of `codeask index` (lexical + static tier) into a fresh index folder,
every question is asked through `codeask search`'s code path (`retrieve.search`, then its hits
ranked into files with `rank_files`), and the run is written in the scorer's format:
repo-root-relative files, best first, deduplicated. Then the eval's own score.py prints its
table (overall, per language, per category, per repository), and this runner adds index time
per repository and in total, index seconds per 1k chunks, warm in-process query p50/p95 and the
process's peak RSS. It reads nothing specific to one eval: any folder with that layout works.
With `--compare`, another run's per-question rows (semble's, a baseline's) are set beside this
run's, per language (benchmarks/search_compare.py).
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.retrieval import load_instances, parse_overrides, require
from benchmarks.search_compare import compare, question_languages, read_rows
from codeask.config import build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.runtime import heap
from codeask.core.search.retrieve import Filters, fused_candidates, rank_files, search

#: Where repos.tar.xz is unpacked when the eval folder has no repos/.
DEFAULT_WORK = Path.home() / ".cache" / "codeask-eval" / "search"


@dataclass
class Repo:
    """One row of repos.tsv: the folder that is indexed is `<sources>/<name>/<root>`."""

    name: str
    language: str
    root: str

    def prefix(self, rel: str) -> str:
        """A path inside the indexed folder, as the scorer wants it (repo-root-relative)."""
        return rel if self.root in ("", ".") else f"{self.root.rstrip('/')}/{rel}"


@dataclass
class Timings:
    """What the run cost, per repository and in total."""

    index_s: dict[str, float] = field(default_factory=dict)
    chunks: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)


def load_repos(path: Path) -> dict[str, Repo]:
    """repos.tsv by name (extra columns are ignored)."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.DictReader(handle, delimiter="\t")
        return {
            row["name"]: Repo(row["name"], row.get("language", ""), row["benchmark_root"] or ".")
            for row in rows
        }


def sources_dir(eval_dir: Path, work: Path, repos: list[Repo]) -> Path:
    """The unpacked sources: DIR/repos when present, else repos.tar.xz unpacked into `work`
    (once: skipped when every indexed folder is already there)."""
    unpacked = eval_dir / "repos"
    if unpacked.is_dir():
        return unpacked
    if all((work / r.name / r.root).is_dir() for r in repos):
        return work
    archive = require(eval_dir / "repos.tar.xz", "the eval's sources (repos/ or repos.tar.xz)")
    work.mkdir(parents=True, exist_ok=True)
    print(f"unpacking {archive} into {work}", file=sys.stderr)
    with tarfile.open(archive, "r:xz") as tar:
        tar.extractall(work, filter="data")
    return work


def open_repo(
    folder: Path, index_home: Path, overrides: list[str], cache: Path | None = None
) -> FolderIndex:
    """The repository as a user's workspace folder, its index in `index_home` (outside it);
    with `cache`, vectors are computed afresh there instead of coming from the user's shared
    content-hash cache (which would make a repeated run's index time a cache read)."""
    base: dict[str, Any] = {"index": {"location": str(index_home)}, "history": {"enabled": False}}
    if cache is not None:
        base["embed"] = {"cache_dir": str(cache)}
    settings, warnings = build_settings(base, parse_overrides(overrides))
    if warnings:
        raise SystemExit("; ".join(warnings))
    return FolderIndex(folder, settings)


#: How chunk hits become files: `search` ranks `codeask search`'s diversified hits (k = depth)
#: with rank_files (the default); `hits` keeps the order in which `codeask search` (k = the
#: setting) shows files; `candidates` ranks every fused candidate, as benchmarks/retrieval.py does.
FILES_FROM = ("search", "hits", "candidates")


def ask(folder: FolderIndex, question: str, depth: int, files_from: str = "search") -> list[str]:
    """Files for one question, best first, deduplicated."""
    if files_from == "candidates":
        hits = fused_candidates([folder], question, filters=Filters())
        return [path for path, _ in rank_files(hits, depth)]
    if files_from == "hits":
        shown = search([folder], question).hits
        return list(dict.fromkeys(hit.path for hit in shown))[:depth]
    result = search([folder], question, k=depth)
    return [path for path, _ in rank_files(result.hits, depth)]


def answer_repo(
    repo: Repo,
    folder_path: Path,
    questions: list[dict[str, Any]],
    args: argparse.Namespace,
    timings: Timings,
) -> list[dict[str, Any]]:
    """Index one repository (first pass) and answer its questions; one line on stderr."""
    folder = open_repo(folder_path, args.index_home, args.set, args.cache)
    try:
        started = time.perf_counter()
        folder.refresh(embed=args.full)
        timings.index_s[repo.name] = time.perf_counter() - started
        chunks = folder.status().chunks
        timings.chunks[repo.name] = chunks
        # warm, as a running server is: it builds the in-memory BM25 copy once indexing ends
        # (lsp/folders/indexing.py), and its first query loads the models and name tables
        folder.storage.warm_up()
        if questions:
            ask(folder, questions[0]["query"], args.depth, args.files_from)
        lines, latencies = [], []
        for question in questions:
            t0 = time.perf_counter()
            ranked = ask(folder, question["query"], args.depth, args.files_from)
            latencies.append((time.perf_counter() - t0) * 1000)
            lines.append({"qid": question["qid"], "results": [repo.prefix(p) for p in ranked]})
    finally:
        folder.close()
        heap.give_back_freed()  # the next repository starts from what this one kept, not more
    timings.latencies_ms += latencies
    p50 = percentile(latencies, 50)
    print(
        f"{repo.name:20} {repo.language:11} chunks={chunks:6} "
        f"index={timings.index_s[repo.name]:6.2f}s p50={p50:.1f}ms",
        file=sys.stderr,
    )
    return lines


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (0 for no values), as run_semble.py reports it."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]


def peak_rss_mb() -> float:
    """The process's peak resident set (VmHWM), in MB; 0 where /proc is not there."""
    try:
        status = Path("/proc/self/status").read_text(encoding="utf-8")
    except OSError:
        return 0.0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def summary(timings: Timings, wall_s: float) -> str:
    """The cost lines printed after the scorer's table."""
    rows = ["", "index time per repository (s) and chunks:"]
    for name, seconds in timings.index_s.items():
        rows.append(f"  {name:20} {seconds:7.2f}s {timings.chunks[name]:7} chunks")
    total_s, total_chunks = sum(timings.index_s.values()), sum(timings.chunks.values())
    per_k = total_s / total_chunks * 1000 if total_chunks else 0.0
    lat = timings.latencies_ms
    rows += [
        f"index total {total_s:.1f}s for {total_chunks} chunks ({per_k:.2f} s per 1k chunks)",
        f"query (in-process, warm, {len(lat)} questions): p50 {percentile(lat, 50):.1f} ms, "
        f"p95 {percentile(lat, 95):.1f} ms",
        f"peak RSS (VmHWM) {peak_rss_mb():.0f} MB; wall time {wall_s:.1f}s",
    ]
    return "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    if args.compare is not None and args.per_query is None:
        raise SystemExit("error: --compare needs --per-query (this run's rows to set beside it)")
    eval_dir: Path = args.eval_dir
    queries = require(eval_dir / "queries.jsonl", "the eval's questions")
    repos = load_repos(require(eval_dir / "repos.tsv", "the eval's repository list"))
    questions = load_instances(queries)
    wanted = [n for n in args.repos.split(",") if n] if args.repos else []
    unknown = [n for n in wanted if n not in repos]
    if unknown:
        raise SystemExit(f"error: not in repos.tsv: {', '.join(unknown)}")
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for question in questions:
        by_repo[question["repo"]].append(question)
    names = wanted or sorted(by_repo)
    chosen = [repos[n] for n in names]
    sources = sources_dir(eval_dir, args.work, chosen)
    heap.return_large_frees()  # as `codeask serve` does: big temporaries go back at free
    started, timings, lines = time.perf_counter(), Timings(), []
    with tempfile.TemporaryDirectory(prefix="codeask-search-eval-") as scratch:
        if args.index_home is None:  # a fresh index each run: index time is a first pass
            args.index_home = Path(scratch) / "indexes"
        # a fresh vector cache too, unless MiniLM is wanted (its model lives in the user cache)
        args.cache = None if args.full or args.warm_cache else Path(scratch) / "cache"
        for repo in chosen:
            folder = sources / repo.name / repo.root
            if not folder.is_dir():
                print(f"{repo.name:20} missing: {folder}", file=sys.stderr)
                continue
            lines += answer_repo(repo, folder, by_repo.get(repo.name, []), args, timings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    wall_s = time.perf_counter() - started
    score = [sys.executable, str(require(eval_dir / "score.py", "the eval's scorer"))]
    score += [str(args.out), "--queries", str(queries)]
    score += ["--repos", *names] if wanted else ["--all"]
    if args.per_query:
        score += ["--per-query", str(args.per_query)]
    sys.stdout.flush()
    code = subprocess.run(score, check=False).returncode
    print(summary(timings, wall_s), flush=True)
    if args.compare is not None:
        this, that = read_rows(args.per_query), read_rows(args.compare)
        print(f"\nfile NDCG@10 per language, this run − {args.compare}:")
        print(compare(question_languages(queries), this, that), flush=True)
    return code


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--eval-dir", type=Path, required=True, help="the eval folder")
    parser.add_argument("--out", type=Path, required=True, help="the run (JSONL) to write")
    parser.add_argument(
        "--set", action="append", default=[], help="setting override, e.g. retrieve.k=5"
    )
    parser.add_argument("--repos", default="", help="only these repositories (a,b); default all")
    parser.add_argument(
        "--work",
        type=Path,
        default=DEFAULT_WORK,
        help=f"where repos.tar.xz is unpacked (default {DEFAULT_WORK})",
    )
    parser.add_argument(
        "--index-home", type=Path, help="keep the indexes here (default: a fresh temporary folder)"
    )
    parser.add_argument("--depth", type=int, default=50, help="ranked files per question")
    parser.add_argument(
        "--files-from",
        choices=FILES_FROM,
        default="search",
        help="search: codeask search's hits ranked into files (default); hits: files in the "
        "order codeask search shows them; candidates: every fused candidate (retrieval.py's way)",
    )
    parser.add_argument(
        "--full", action="store_true", help="also the MiniLM tier (`codeask index --full`)"
    )
    parser.add_argument(
        "--warm-cache",
        action="store_true",
        help="take vectors from the user's embedding cache (default: a fresh one per run)",
    )
    parser.add_argument("--per-query", type=Path, help="the scorer's per-question rows, here")
    parser.add_argument(
        "--compare",
        type=Path,
        help="another run's per-question rows (needs --per-query): print file NDCG@10 per "
        "language, this run − that one (benchmarks/search_compare.py)",
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr)
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
