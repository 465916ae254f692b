"""Where a first pass's CPU goes, part by part, on a sample of any tree (issue 42).

    .venv/bin/python -m benchmarks.pass_parts TREE [--files 2000] [--repeat 3] [--seed 7]

A first pass is a chunk worker's work per file (read, redact secrets, parse, query, the walk
over definitions, lexical columns, static vectors, the answer's frame) and the indexing
process's lexical tables (builds, merges, segment files) over the rows the workers sent. This
runs each part over the same sample of files in this process and prints each one's thread CPU
(the least of `--repeat` runs: a shared machine only ever adds time) and its share, per MB of
the sample's source. Parse, query and redaction are timed on their own as well as inside the
chunker, so "chunking walk" is the chunker's CPU less theirs. Not a test:
tests/test_benchmarks_smoke.py runs it on a small tree.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from collections import defaultdict
from itertools import groupby
from pathlib import Path

import msgspec

from codeask.config import build_settings
from codeask.core.embedding.static import StaticEmbedder
from codeask.core.indexer import chunk_pool
from codeask.core.records import Chunk
from codeask.core.source import chunk as chunker
from codeask.core.source import parse_bound
from codeask.core.source.discover import SkippedFile, SourceFile, discover, load_source
from codeask.core.source.languages import language_for_path
from codeask.core.source.secrets import redact_text
from codeask.core.storage.lexical.disk import DiskTables, TableWrite
from codeask.core.storage.lexical.index import chunks_columns
from codeask.core.storage.lexical.tokens import token_text

WORKER_PARTS = (
    *("read", "redact", "parse", "query", "chunking walk", "lexical columns"),
    *("static vectors", "frame encode"),
)


def sample(tree: Path, files: int, seed: int) -> list[SourceFile]:
    """`files` of the tree's indexed files, drawn at random (the same for the same seed)."""
    settings = build_settings({}, {})[0]
    found = list(discover(tree, settings.index).files)
    random.Random(seed).shuffle(found)
    return found[:files]


def worker_parts(files: list[SourceFile], model: StaticEmbedder) -> tuple[dict[str, float], list]:
    """Thread CPU of each part of a worker's work over `files`, and each file's chunks with
    their lexical columns (what the indexing process gets)."""
    settings = build_settings({}, {})[0]
    spent: dict[str, float] = defaultdict(float)
    clock = time.thread_time
    encoder = msgspec.msgpack.Encoder()
    answered: list[tuple[str, list[Chunk], list[tuple[str, str, str]]]] = []
    for start in range(0, len(files), chunk_pool.FILES_PER_TASK):
        answers = []
        for file in files[start : start + chunk_pool.FILES_PER_TASK]:
            began = clock()
            loaded = load_source(file, settings.index)
            spent["read"] += clock() - began
            if isinstance(loaded, SkippedFile):
                continue
            inside = _alone(file.rel, loaded.text, spent)
            began = clock()
            result = chunker.chunk_file(file.rel, loaded.text, settings.chunk)
            spent["chunking walk"] += clock() - began - inside
            began = clock()
            columns = chunks_columns(result.chunks)
            spent["lexical columns"] += clock() - began
            answers.append(chunk_pool.PreparedFile(file.rel, chunks=result.chunks, columns=columns))
            answered.append((file.rel, result.chunks, columns))
        began = clock()
        chunk_pool._embed_static(model, answers)
        spent["static vectors"] += clock() - began
        began = clock()
        encoder.encode(answers)
        spent["frame encode"] += clock() - began
    return spent, answered


def _alone(rel: str, text: str, spent: dict[str, float]) -> float:
    """Redaction, parse and query of one file timed on their own (into `spent`); their sum."""
    clock = time.thread_time
    began = clock()
    redacted = redact_text(text)
    spent["redact"] += clock() - began
    spec = language_for_path(rel)
    if spec is None:
        return clock() - began
    data = redacted.encode("utf-8", "replace")
    parsed = clock()
    try:
        tree = parse_bound.parse(chunker._parser(spec), data, parse_bound.Budget())
    except parse_bound.OverBudget:
        return clock() - began
    queried = clock()
    spent["parse"] += queried - parsed
    query = chunker._query(spec)
    if query is not None:
        chunker.QueryCursor(query).captures(tree.root_node)
    spent["query"] += clock() - queried
    return clock() - began


def lexical_tables(answered: list) -> float:
    """The indexing process's CPU for the lexical tables of these files' rows: one write per
    file as a first pass makes them (builds, merges, segment files), then the save."""
    folder = Path(tempfile.mkdtemp(prefix="codeask-pass-parts-"))
    clock = time.process_time
    try:
        began = clock()
        tables = DiskTables.open(folder / "lexical")
        number = 0
        for rel, group in groupby(answered, key=lambda item: item[0]):
            for _, chunks, columns in group:
                rows = tuple((number + at, *cols) for at, cols in enumerate(columns))
                number += len(chunks)
                row = (" ".join(c[0] for c in columns), token_text(rel))
                tables.write(TableWrite(rows, (), rel, row if rows else None, bool(rows)))
        tables.stamp(1)
        return clock() - began
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--files", type=int, default=2000, help="files in the sample")
    parser.add_argument("--repeat", type=int, default=3, help="runs; each part's least is kept")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    files = sample(args.tree.resolve(), args.files, args.seed)
    megabytes = sum(f.size for f in files) / 1e6
    best: dict[str, float] = {}
    model = StaticEmbedder()
    with model.widened():
        worker_parts(files[:50], model)  # caches and grammars, as a worker has them
        for _ in range(max(1, args.repeat)):
            spent, answered = worker_parts(files, model)
            spent["lexical tables (indexing process)"] = lexical_tables(answered)
            for part, seconds in spent.items():
                best[part] = min(best.get(part, seconds), seconds)
    chunks = sum(len(item[1]) for item in answered)
    total = sum(best.values())
    print(f"{len(files)} files, {megabytes:.1f} MB, {chunks:,} chunks; least of {args.repeat}")
    print("| part | CPU-s | share | CPU-s per MB |")
    print("|---|---|---|---|")
    for part in [*WORKER_PARTS, "lexical tables (indexing process)"]:
        seconds = best.get(part, 0.0)
        share = 100 * seconds / total if total else 0.0
        print(f"| {part} | {seconds:.3f} | {share:.1f} % | {seconds / max(megabytes, 1e-9):.4f} |")
    print(f"| all | {total:.3f} | 100 % | {total / max(megabytes, 1e-9):.4f} |")


if __name__ == "__main__":
    main()
