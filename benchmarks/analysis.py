"""Why the misses miss: where each gold file ranks in every retriever, question by question.

    python -m benchmarks.analysis --instances ../shared/eval/dev.jsonl --out benchmarks/analysis.md
        [--mode hybrid] [--set section.field=value] [--no-fetch] [--index-home DIR]

Same corpora, indexes and settings as `benchmarks.retrieval`. For every question it ranks the
files with the real retrieval (the final rank), then asks each retriever alone (chunk BM25,
the report's lead line alone, whole-file BM25, exact symbol names, path mentions, the static
tier, MiniLM) where the gold file would be, and tags the miss with the facts a ranking fix
could use: whether the question names the gold file or a symbol the gold file defines, what
kind of file took the top places. Writes a markdown report: R@5 per package, one row per miss,
a tally of tags.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.retrieval import (
    corpora,
    default_eval_dir,
    load_instances,
    open_corpus,
    require,
)
from codeask.core.embedding.static import STATIC_MODEL_NAME
from codeask.core.indexer import FolderIndex
from codeask.core.records import HISTORY_KINDS
from codeask.core.search.query import query_signals
from codeask.core.search.retrieve import (
    CANDIDATES,
    FILE_CANDIDATES,
    PROSE_LANGUAGES,
    Filters,
    Mode,
    embed_query,
    fused_candidates,
    is_test_path,
    rank_files,
)
from codeask.core.storage.lexical.index import expand_query

#: Past this rank a retriever "did not find" the file.
NOT_FOUND = 999


@dataclass
class Row:
    """One question's gold files and where each retriever put them."""

    id: str
    package: str
    gold: list[str]
    final: dict[str, int]
    per_retriever: dict[str, dict[str, int]]
    top: list[str]
    tags: list[str] = field(default_factory=list)


def first_ranks(paths: Iterable[str]) -> dict[str, int]:
    """path → 1-based rank of its first appearance."""
    ranks: dict[str, int] = {}
    for path in paths:
        ranks.setdefault(path, len(ranks) + 1)
    return ranks


def chunk_paths(folder: FolderIndex, ids: Iterable[int]) -> list[str]:
    wanted = list(ids)
    chunks = folder.storage.chunks(wanted)
    return [chunks[i].path for i in wanted if i in chunks and chunks[i].kind not in HISTORY_KINDS]


def retriever_ranks(folder: FolderIndex, question: str) -> dict[str, dict[str, int]]:
    """Each retriever alone: path → rank."""
    from codeask.core.search.steps.mentions import path_matches
    from codeask.core.search.steps.words import symbol_ranked

    signals = query_signals(question)
    storage = folder.storage
    words = signals.text
    lexical = storage.lexical_top_k(expand_query(words), CANDIDATES)
    named = path_matches(folder.storage, signals)
    lead = signals.lead
    by_lead = storage.lexical_top_k(expand_query(lead), CANDIDATES) if lead else []
    out = {
        "bm25": first_ranks(chunk_paths(folder, (i for i, _ in lexical))),
        "lead": first_ranks(chunk_paths(folder, (i for i, _ in by_lead))),
        "file": first_ranks(p for p, _ in storage.lexical_files(words, FILE_CANDIDATES)),
        "symbol": first_ranks(chunk_paths(folder, symbol_ranked(folder, signals))),
        "path": first_ranks(sorted(named, key=lambda p: -named[p])),
    }
    vectors = embed_query([folder], words, lead)
    static = vectors.get(STATIC_MODEL_NAME)
    if static is not None:
        out["static"] = first_ranks(
            chunk_paths(folder, (i for i, _ in storage.dense_top_k("static", static, CANDIDATES)))
        )
    dense = vectors.get(folder.settings.embed.model)
    if dense is not None:
        out["minilm"] = first_ranks(
            chunk_paths(folder, (i for i, _ in storage.dense_top_k("minilm", dense, CANDIDATES)))
        )
    return out


def tags_for(folder: FolderIndex, question: str, gold: list[str], top: list[str]) -> list[str]:
    """Facts about a question that a general ranking rule could act on."""
    from codeask.core.search.steps.mentions import path_matches

    signals = query_signals(question)
    tags = []
    named = path_matches(folder.storage, signals)
    if any(g in named for g in gold):
        tags.append("names-gold-path")
    defined = {c.symbol for g in gold for c in folder.storage.chunks_of(g) if c.symbol}
    if defined & signals.identifiers:
        tags.append("names-gold-symbol")
    head = top[:5]
    if any(is_test_path(p) for p in head):
        tags.append("tests-in-top5")
    prose = [
        p
        for p in head
        if (r := folder.storage.file(p)) is not None and r.language in PROSE_LANGUAGES
    ]
    if prose:
        tags.append("prose-in-top5")
    if signals.about_tests:
        tags.append("question-mentions-tests")
    if len(question) > 2000:
        tags.append("long-question")
    if not any(folder.storage.file(g) is not None for g in gold):
        tags.append("gold-not-indexed")
    return tags


def analyse(args: argparse.Namespace) -> list[Row]:
    instances = load_instances(require(args.instances, "the questions file"))
    if args.package:
        instances = [i for i in instances if i["package"] == args.package]
    rows: list[Row] = []
    for key, root, questions in corpora(instances, args):
        folder = open_corpus(root, args)
        folder.refresh(embed=args.mode != "lexical")
        for instance in questions:
            question, gold = instance["question"], instance["gold_files"]
            hits = fused_candidates([folder], question, filters=Filters(), mode=args.mode)
            ranked = [p for p, _ in rank_files(hits, 200)]
            final = first_ranks(ranked)
            per = retriever_ranks(folder, question)
            row = Row(
                instance["id"],
                instance["package"],
                gold,
                {g: final.get(g, NOT_FOUND) for g in gold},
                {name: {g: r.get(g, NOT_FOUND) for g in gold} for name, r in per.items()},
                ranked[:5],
            )
            row.tags = tags_for(folder, question, gold, ranked)
            rows.append(row)
        folder.close()
        print(f"{key[0]}=={key[1]}: {len(questions)} questions", file=sys.stderr)
    return rows


def _cell(rank: int) -> str:
    return "–" if rank >= NOT_FOUND else str(rank)


def report(rows: list[Row], args: argparse.Namespace) -> str:
    """The markdown report."""
    misses = [r for r in rows if min(r.final.values()) > 5 or max(r.final.values()) > 5]
    names = sorted({n for r in rows for n in r.per_retriever}, key=RETRIEVER_ORDER.index)
    lines = [
        f"Mode `{args.mode}`, settings {args.set or 'default'}; {len(rows)} questions, "
        f"{len(misses)} with a gold file outside the top 5.",
        "",
        "| package | questions | R@5 |",
        "|---|---:|---:|",
    ]
    packages = sorted({r.package for r in rows})
    for package in packages:
        mine = [r for r in rows if r.package == package]
        recall = sum(sum(v <= 5 for v in r.final.values()) / len(r.gold) for r in mine)
        lines.append(f"| {package} | {len(mine)} | {recall / len(mine):.2f} |")
    lines += [
        "",
        "| question | gold file | final | " + " | ".join(names) + " | top 3 files | tags |",
        "|---|---|---:|" + "---:|" * len(names) + "---|---|",
    ]
    for row in misses:
        for gold in row.gold:
            if row.final[gold] <= 5:
                continue
            ranks = " | ".join(_cell(row.per_retriever[n][gold]) for n in names)
            top = "<br>".join(row.top[:3])
            lines.append(
                f"| {row.id} | {gold} | {_cell(row.final[gold])} | {ranks} | {top} | "
                f"{', '.join(row.tags)} |"
            )
    tally = Counter(t for r in misses for t in r.tags)
    lines += ["", "Tags among the misses (a question counts once per tag):", ""]
    lines += [f"- {tag}: {count}" for tag, count in tally.most_common()]
    best_single = Counter(
        min(names, key=lambda n: row.per_retriever[n][g])
        for row in misses
        for g in row.gold
        if row.final[g] > 5 and min(row.per_retriever[n][g] for n in names) <= 5
    )
    lines += ["", "Misses where one retriever alone had the gold file in its top 5:", ""]
    lines += [f"- {name}: {count}" for name, count in best_single.most_common()]
    return "\n".join(lines) + "\n"


RETRIEVER_ORDER = ["bm25", "lead", "file", "symbol", "path", "static", "minilm"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--eval-dir", type=Path, default=default_eval_dir())
    parser.add_argument("--instances", type=Path)
    parser.add_argument("--corpus-root", type=Path)
    parser.add_argument("--out", type=Path, default=Path("analysis.md"))
    parser.add_argument("--mode", choices=("lexical", "dense", "hybrid"), default="hybrid")
    parser.add_argument("--package")
    parser.add_argument(
        "--index-home", type=Path, default=Path.home() / ".cache" / "codeask" / "bench-indexes"
    )
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--no-fetch", action="store_true")
    args = parser.parse_args(argv)
    args.instances = args.instances or args.eval_dir / "dev.jsonl"
    mode: Mode = args.mode
    args.mode = mode
    rows = analyse(args)
    args.out.write_text(report(rows, args), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
