"""The team backend at scale: every dev corpus published into ONE database (issue 15).

Issue 15: query p95 "must not grow linearly with the number of repositories". One embedded
PostgreSQL 18 + pgvector (pg_bench's helpers) receives the corpora one by one, each its own git
repository (one commit, its own `origin`, so its own repository name), indexed and published as
CI does (`index.backend = "postgres"`, the given local embedding cache: warm, so ~no vectors are
computed). After the checkpoints (by default 1, 8 and all corpora) it measures, k = 10, on the
same eval texts:

- team: the product path. A fresh clone of the FIRST corpus (sphinx) opened with the postgres
  backend, i.e. retrieval over `PublishedReader` of its published revision (core/storage/team.py)
  under an empty overlay; `perf.query_latency` for lexical, dense and hybrid. Reopened at each
  checkpoint, as a developer's editor would be.
- local: the first corpus's own local index (the CI run's folder), the same queries: it does not
  depend on the database, so its drift between checkpoints is the machine's noise.
- team workspace: the first `--workspace` corpora (4 by default) opened as team clones and
  searched together, as a multi-root workspace is (dense and hybrid: one SQL query per search
  for all of them, core/storage/postgres/dense_batch.py); the SQL queries sent per search are
  counted.

(Until 2026-11-26 it also timed `PgIndexReader`, one SQL query over every revision published so
far; no search path used it, and it was removed with core/pg/reader.py: benchmarks/README.md's
"all revisions" rows are that class's.)

Before each checkpoint's measurement the tables are ANALYZEd (autovacuum would, at its own time;
this keeps plans from depending on when it last ran; --no-analyze to skip). With --explain N,
after the last checkpoint the N slowest texts of each team mode run again under `auto_explain`
(log_analyze, buffers) and their plans are printed from the server log.

    python -m benchmarks.pg_scale [--corpus-root ~/.cache/codeask-eval/src] [--first sphinx-5.1.1]
        [--corpora 26 | --corpus NAME ...] [--checkpoints 1,8,all] [--queries 200]
        [--cache ~/.cache/codeask] [--workspace 4] [--explain 2]

Prints markdown tables for benchmarks/README.md. Not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import pygit2

from benchmarks.perf import eval_queries, query_latency, timed
from benchmarks.pg_bench import (
    DSN_ENV,
    add_instances_option,
    database,
    git_repository,
    index_run,
    postgres,
    settings_for,
)
from codeask.core.indexer import FolderIndex
from codeask.core.search.retrieve import Mode, search
from codeask.core.storage.postgres.publish import publish_folder
from codeask.core.storage.postgres.published import PublishedReader
from codeask.core.storage.postgres.schema import CHUNK_TABLE, FILE_TABLE, REVISION_TABLE
from codeask.core.storage.team import TeamStorage

MODES: tuple[Mode, ...] = ("lexical", "dense", "hybrid")
#: Where each corpus says it lives (its repository name: what `naming.repository_name` makes of it).
ORIGIN = "https://example.com/bench/{name}.git"


@dataclass
class Published:
    """One corpus as CI indexed and published it."""

    name: str
    files: int
    chunks: int
    vectors_computed: int
    index_s: float
    publish_s: float
    revision_id: int
    db_mb: float


@dataclass
class Checkpoint:
    """Latencies (p50, p95 ms) once `corpora` corpora are published."""

    corpora: int
    chunks: int
    db: dict[str, float]
    open_s: float
    team: dict[str, tuple[float, float] | str] = field(default_factory=dict)
    local: dict[str, tuple[float, float] | str] = field(default_factory=dict)
    #: A multi-root workspace of the first corpora: latency and SQL queries per search.
    workspace: dict[str, tuple[float, float] | str] = field(default_factory=dict)
    workspace_queries: dict[str, float] = field(default_factory=dict)
    workspace_size: int = 1
    slowest: dict[str, list[str]] = field(default_factory=dict)


def corpus_list(root: Path, first: str, names: list[str] | None, count: int | None) -> list[str]:
    """`first`, then the given names or every unpacked corpus under `root` (sorted)."""
    found = names or sorted(p.name for p in root.iterdir() if p.is_dir())
    ordered = [first, *(n for n in found if n != first)]
    return ordered[:count] if count else ordered


def checkpoint_list(spec: str, total: int) -> list[int]:
    """'1,8,all' → [1, 8, total] (clipped to `total`, sorted, unique)."""
    points = {total if p.strip() == "all" else min(total, int(p)) for p in spec.split(",")}
    return sorted(p for p in points if p > 0)


def scalar(conn: psycopg.Connection, sql: str) -> Any:
    """The one value `sql` selects."""
    row = conn.execute(sql).fetchone()
    assert row is not None
    return row[0]


def sizes(dsn: str) -> dict[str, float]:
    """MB of the database, the chunk table (with TOAST) and each of its indexes."""
    with psycopg.connect(dsn) as conn:
        out = {
            "database": scalar(conn, "SELECT pg_database_size(current_database())"),
            "chunk table": scalar(conn, f"SELECT pg_table_size('{CHUNK_TABLE}'::regclass)"),
        }
        for name, size in conn.execute(
            """SELECT c.relname, pg_relation_size(c.oid) FROM pg_index i
               JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = %s::regclass
               ORDER BY c.relname""",
            (CHUNK_TABLE,),
        ):
            out[f"index {name}"] = size
    return {k: float(v) / 1e6 for k, v in out.items()}


def analyze(dsn: str) -> None:
    """Fresh planner statistics (what autovacuum gets to eventually)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in (REVISION_TABLE, FILE_TABLE, CHUNK_TABLE):
            conn.execute(f"ANALYZE {table}")


def publish_one(source: Path, work: Path, cache: Path) -> tuple[Published, FolderIndex]:
    """CI: the corpus as its own repository, indexed with the postgres backend and published."""
    name = source.name
    repo = git_repository(source, work / "repos" / name)
    pygit2.Repository(str(repo)).remotes.set_url("origin", ORIGIN.format(name=name))
    index_s, folder, report = index_run(repo, settings_for(work / "ci" / name, cache, "postgres"))
    publish_s, done = timed(lambda: publish_folder(folder.root, folder.storage, DSN_ENV))
    row = Published(
        name=name,
        files=done.files,
        chunks=done.chunks,
        vectors_computed=report.vectors_computed,
        index_s=index_s,
        publish_s=publish_s,
        revision_id=done.revision_id,
        db_mb=sizes(os.environ[DSN_ENV])["database"],
    )
    return row, folder


def guarded(fn: Callable[[], tuple[float, float]]) -> tuple[float, float] | str:
    """A latency pair, or the error that stopped it (e.g. the reader's statement timeout)."""
    try:
        return fn()
    except Exception as exc:  # reported in the table; the run goes on
        return f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"


def slowest_texts(folder: FolderIndex, queries: list[str], mode: Mode, count: int) -> list[str]:
    """The `count` texts that took longest (one more timed pass; for --explain)."""
    took = [(timed(partial(search, [folder], q, k=10, mode=mode))[0], q) for q in queries]
    return [q for _, q in sorted(took, reverse=True)[:count]]


def open_team(repo: Path, work: Path, tag: str) -> tuple[float, FolderIndex]:
    """A developer's fresh clone of the first corpus, opened with the postgres backend."""
    laptop = work / f"laptop-{tag}"
    shutil.copytree(repo, laptop, ignore=shutil.ignore_patterns(".codeask"))
    settings = settings_for(work / f"laptop-index-{tag}", work / "laptop-cache", "postgres")
    started = time.perf_counter()
    folder = FolderIndex(laptop, settings)
    folder.refresh()
    seconds = time.perf_counter() - started
    if not isinstance(folder.storage, TeamStorage):
        raise SystemExit(f"the clone did not open the team base: {folder.team.reason}")
    return seconds, folder


def queries_sent(folders: list[FolderIndex]) -> int:
    """SQL queries the folders' team readers sent so far: each is a `PublishedReader`, which
    counts them (the `PublishedBase` Protocol the team base is typed by has no count)."""
    readers = [f.team.reader for f in folders]
    return sum(r.queries_sent for r in readers if isinstance(r, PublishedReader))


def measure_workspace(
    result: Checkpoint, team: FolderIndex, work: Path, names: list[str], queries: list[str]
) -> None:
    """One search over a multi-root workspace: `team` and fresh team clones of `names`."""
    folders = [team]
    try:
        for i, name in enumerate(names, 1):
            folders.append(open_team(work / "repos" / name, work, f"{result.corpora}-w{i}")[1])
        result.workspace_size = len(folders)
        for mode in ("dense", "hybrid"):
            before = queries_sent(folders)
            result.workspace[mode] = guarded(partial(query_latency, folders, queries, mode))
            sent = queries_sent(folders) - before  # its warm-up query and the timed ones
            result.workspace_queries[mode] = sent / (len(queries) + 1)
    finally:
        for folder in folders[1:]:
            folder.close()


def measure(
    point: int,
    published: list[Published],
    local: FolderIndex,
    work: Path,
    queries: list[str],
    args: argparse.Namespace,
) -> Checkpoint:
    dsn = os.environ[DSN_ENV]
    if args.analyze:
        analyze(dsn)
    open_s, team = open_team(work / "repos" / published[0].name, work, str(point))
    result = Checkpoint(point, sum(p.chunks for p in published), sizes(dsn), open_s)
    for mode in MODES:
        result.team[mode] = guarded(partial(query_latency, [team], queries, mode))
        result.local[mode] = guarded(partial(query_latency, [local], queries, mode))
    if args.workspace > 1 and point > 1:
        others = [p.name for p in published[1 : args.workspace]]
        measure_workspace(result, team, work, others, queries)
    if args.explain and point == args.checkpoints[-1]:
        for mode in MODES:
            result.slowest[f"team {mode}"] = slowest_texts(team, queries, mode, args.explain)
    team.close()
    return result


def explain(
    server: Any,
    work: Path,
    first: Path,
    slow: dict[str, list[str]],
    min_ms: int,
) -> str:
    """The plans (auto_explain: analyze + buffers, statements >= `min_ms`) of the given texts,
    read back from the server log, each under the text that produced it."""
    dsn = os.environ[DSN_ENV]
    with psycopg.connect(dsn, autocommit=True) as conn:
        name = scalar(conn, "SELECT current_database()")
        for setting in (
            "session_preload_libraries = 'auto_explain'",
            f"auto_explain.log_min_duration = {int(min_ms)}",
            "auto_explain.log_analyze = on",
            "auto_explain.log_buffers = on",
            "auto_explain.log_parameter_max_length = 240",  # not the query vector's 384 numbers
        ):
            conn.execute(f"ALTER DATABASE {name} SET {setting}")
    log = Path(server.log)
    _, team = open_team(first, work, "explain")  # new connections: auto_explain is loaded
    out: list[str] = []
    try:
        for label, texts in slow.items():
            for text in texts:
                before = log.stat().st_size
                mode = next(m for m in MODES if label == f"team {m}")
                seconds, _ = timed(partial(search, [team], text, k=10, mode=mode))
                time.sleep(0.3)  # the server writes its log asynchronously
                plans = log.read_bytes()[before:].decode(errors="replace").strip()
                out.append(f"### {label}, {seconds * 1000:.0f} ms: {text[:120]!r}\n\n{plans}\n")
    finally:
        team.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"ALTER DATABASE {name} RESET ALL")
    return "\n".join(out)


def fmt(value: tuple[float, float] | str) -> str:
    return value if isinstance(value, str) else f"{value[0]:.1f} / {value[1]:.1f}"


def report(published: list[Published], points: list[Checkpoint], queries: int) -> str:
    lines = [
        "| # | corpus | files | chunks | vectors computed | index s | publish s | rows/s | "
        "database MB after |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for i, p in enumerate(published, 1):
        lines.append(
            f"| {i} | {p.name} | {p.files:,} | {p.chunks:,} | {p.vectors_computed:,} | "
            f"{p.index_s:.1f} | {p.publish_s:.1f} | {p.chunks / max(p.publish_s, 1e-9):,.0f} | "
            f"{p.db_mb:,.0f} |"
        )
    lines += ["", f"p50 / p95 ms, k = 10, {queries} eval texts:", ""]
    head = ["measure", *(f"{c.corpora} corpora ({c.chunks:,} chunks)" for c in points)]
    lines += ["| " + " | ".join(head) + " |", "|---|" + "---:|" * len(points)]
    rows: list[tuple[str, list[str]]] = [
        ("database size MB", [f"{c.db['database']:,.0f}" for c in points]),
        ("team clone: open until searchable, s", [f"{c.open_s:.2f}" for c in points]),
    ]
    for mode in MODES:
        rows.append((f"team (first corpus) {mode}", [fmt(c.team[mode]) for c in points]))
    for mode in MODES:
        rows.append(
            (f"local (first corpus, noise check) {mode}", [fmt(c.local[mode]) for c in points])
        )
    for mode in ("dense", "hybrid"):
        rows.append(
            (
                f"team workspace (first corpora as one multi-root workspace) {mode}",
                [
                    f"{fmt(c.workspace[mode])} ({c.workspace_size} folders, "
                    f"{c.workspace_queries[mode]:.2f} SQL queries/search)"
                    if mode in c.workspace
                    else "-"
                    for c in points
                ],
            )
        )
    lines += [f"| {a} | " + " | ".join(b) + " |" for a, b in rows]
    last = points[-1].db
    lines += [
        "",
        "sizes at the last checkpoint (MB): " + ", ".join(f"{k} {v:,.1f}" for k, v in last.items()),
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus-root", type=Path, default=Path.home() / ".cache/codeask-eval/src")
    parser.add_argument("--first", default="sphinx-5.1.1", help="the corpus the team path reads")
    parser.add_argument("--corpus", action="append", help="corpora after the first (default: all)")
    parser.add_argument("--corpora", type=int, default=0, help="publish only this many (0: all)")
    parser.add_argument("--checkpoints", default="1,8,all", help="measure after these counts")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/codeask")
    parser.add_argument("--queries", type=int, default=200, help="eval texts timed")
    add_instances_option(parser)
    parser.add_argument(
        "--workspace", type=int, default=4, help="folders of the multi-root workspace measured"
    )
    parser.add_argument("--explain", type=int, default=0, help="plans of the N slowest texts")
    parser.add_argument("--explain-ms", type=int, default=20, help="... of statements this slow")
    parser.add_argument("--no-analyze", dest="analyze", action="store_false")
    args = parser.parse_args()
    names = corpus_list(args.corpus_root, args.first, args.corpus, args.corpora)
    args.checkpoints = checkpoint_list(args.checkpoints, len(names))
    queries = eval_queries(args.instances, args.queries)
    published: list[Published] = []
    points: list[Checkpoint] = []
    with tempfile.TemporaryDirectory(prefix="codeask-pgscale-work-") as tmp, postgres() as server:
        work = Path(tmp)
        os.environ[DSN_ENV] = database(server, "team")
        local: FolderIndex | None = None
        for name in names:
            row, folder = publish_one(args.corpus_root / name, work, args.cache)
            published.append(row)
            print(
                f"published {len(published)}/{len(names)} {name}: {row.chunks} chunks, index "
                f"{row.index_s:.1f} s, publish {row.publish_s:.1f} s, db {row.db_mb:.0f} MB",
                flush=True,
            )
            if local is None:
                local = folder  # the first corpus's own index: the noise check
            else:
                folder.close()
                shutil.rmtree(work / "ci" / name, ignore_errors=True)
            if len(published) in args.checkpoints:
                assert local is not None
                points.append(measure(len(published), published, local, work, queries, args))
                print(report(published, points, len(queries)), flush=True)
        plans = ""
        if args.explain:
            slow = {k: v[: args.explain] for k, v in points[-1].slowest.items()}
            plans = explain(server, work, work / "repos" / names[0], slow, args.explain_ms)
        if local is not None:
            local.close()
    print("\n" + report(published, points, len(queries)))
    if plans:
        print("\n## EXPLAIN ANALYZE (auto_explain) of the slowest texts\n\n" + plans)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
