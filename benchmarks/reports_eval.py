"""Pasted reports per language: the first pass against the default (first pass + model tier).

    python -m benchmarks.reports_eval                                 # the multi-language set
    python -m benchmarks.reports_eval --eval-dir ../shared/eval       # the Python set
    python -m benchmarks.reports_eval --set embed.provider=openai --set embed.model=M \\
        --set embed.base_url=http://host:port/v1                      # your embedding model

The eval folder holds dev.jsonl and fetch_corpus.py in the Python set's layout (default:
benchmarks/data/reports, bug-fix commits in C, C++, Java, Rust, JavaScript, TypeScript and Go).
Each corpus is indexed once with every tier (`codeask index --full`: the model tier is
embedded, by the packaged MiniLM or the model the settings name), then every question is asked
through `codeask search`'s code path (scope code) in three tiers on that one index: the first
pass (lexical + static, the model tier off), the model tier on every pasted report (`retrieve.
model_tier_for = reports`) and the default as the settings resolve it. Prints R@5, MRR and
Acc@5 per tier (`on_demand`: the model tier of a folder too big for a full pass) and
language (a question's language: its `language` field, else its first answer file's) and
per question shape; `--out` writes each question's first ranks and shape.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.retrieval import corpora, load_instances, open_corpus, require, score_one
from codeask.config import Settings
from codeask.core.checks.selfcheck import ranked_files
from codeask.core.runtime import heap
from codeask.core.search.query import prose_share, search_text
from codeask.core.search.retrieve import WithSettings, model_tier_for
from codeask.core.source.languages import language_for_path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "reports"
CACHE = Path.home() / ".cache" / "codeask-eval" / "reports"
METRICS = ("R@5", "MRR", "Acc@5")
#: Question shapes: how much of the report is English prose (`query.prose_share`).
SHAPES = ((0.0, "prose < .5"), (0.5, "prose .5-.7"), (0.7, "prose >= .7"))
TIERS = ("first_pass", "model", "on_demand", "default")
#: The tiers `--on-demand-only` asks (no model pass: the on-demand tier embeds what it ranks).
ON_DEMAND_TIERS = ("first_pass", "on_demand")


def tiers(settings: Settings) -> dict[str, Settings]:
    """first_pass, model (on every report), on_demand (the model tier on every report, as a
    folder past `embed.model_full_pass_chunks` has it: the first pass's best
    `embed.model_candidates` ranked by it) and default, as ranking settings on one index."""
    first = msgspec.structs.replace(settings.retrieve, dense_weight=0.0, static_scope="all")
    model = msgspec.structs.replace(settings.retrieve, model_tier_for="reports")
    scoped = msgspec.structs.replace(settings.embed, model_full_pass_chunks=0)
    return {
        "first_pass": msgspec.structs.replace(settings, retrieve=first),
        "model": msgspec.structs.replace(settings, retrieve=model),
        "on_demand": msgspec.structs.replace(settings, retrieve=model, embed=scoped),
        "default": settings,
    }


def language_of(instance: dict[str, Any]) -> str:
    """The question's `language`, else its first answer file's (the Python set has none)."""
    if instance.get("language"):
        return str(instance["language"])
    spec = language_for_path(instance["gold_files"][0])
    return spec.name if spec else "other"


def prose_of(question: str) -> float:
    """The prose share the engine reads: of the report's searched text (noise lines out)."""
    return prose_share(search_text(question))


def shape_of(question: str) -> str:
    """The question's prose band (SHAPES)."""
    share = prose_of(question)
    return [label for floor, label in SHAPES if share >= floor][-1]


def ask_corpus(
    root: Path, questions: list[dict[str, Any]], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Index one corpus with every tier (`--on-demand-only`: no model pass), then rank files
    for its questions in each tier (`<tier>_seconds`: its wall per question)."""
    folder = open_corpus(root, args)
    full = not args.on_demand_only
    folder.refresh(embed=full)
    folder.storage.warm_up()
    status = folder.status()
    if full and status.embedded < status.chunks:
        raise SystemExit(f"{root}: model tier {status.embedded}/{status.chunks} chunks")
    rows = []
    chosen = {k: v for k, v in tiers(folder.settings).items() if full or k in ON_DEMAND_TIERS}
    views = {name: WithSettings(folder, s) for name, s in chosen.items()}
    for instance in questions:
        row = {
            "id": instance["id"],
            "language": language_of(instance),
            "shape": shape_of(instance["question"]),
            "prose": round(prose_of(instance["question"]), 3),
        }
        for name, view in views.items():
            started = time.perf_counter()
            ranked = ranked_files(view, instance["question"])
            row[f"{name}_seconds"] = round(time.perf_counter() - started, 3)
            row[name] = score_one(instance["gold_files"], ranked)
        rows.append(row)
    print(
        f"{root.name}: {status.chunks} chunks, {len(questions)} questions, "
        f"model tier for reports: {model_tier_for(folder.settings)}",
        file=sys.stderr,
    )
    folder.close()
    heap.give_back_freed()
    return rows


def table(rows: Sequence[dict[str, Any]], key: str) -> list[str]:
    """One line per group (`key`: language or shape) and tier: n, R@5, MRR, Acc@5."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[row[key]].append(row)
        groups["all"].append(row)
    lines = [f"| {key} | n | tier | R@5 | MRR | Acc@5 |", "|---|---|---|---|---|---|"]
    for group, members in sorted(groups.items(), key=lambda g: (g[0] == "all", g[0])):
        for tier in [t for t in TIERS if t in members[0]]:
            means = [sum(m[tier][k] for m in members) / len(members) for k in METRICS]
            cells = " | ".join(f"{v:.3f}" for v in means)
            lines.append(f"| {group} | {len(members)} | {tier} | {cells} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--eval-dir", type=Path, default=DATA)
    parser.add_argument("--instances", type=Path, help="questions (default: EVAL_DIR/dev.jsonl)")
    parser.add_argument("--corpus-root", type=Path, help="corpora as DIR/<package>-<version>")
    parser.add_argument("--package", help="only this package's questions")
    parser.add_argument("--out", type=Path, help="write each question's scores here (JSON lines)")
    parser.add_argument("--index-home", type=Path, default=CACHE / "indexes")
    parser.add_argument("--threads", type=int, default=0, help="ONNX threads (0: default)")
    parser.add_argument("--set", action="append", default=[], help="setting, e.g. embed.model=M")
    parser.add_argument("--no-fetch", action="store_true", help="use the corpora already there")
    parser.add_argument(
        "--on-demand-only",
        action="store_true",
        help="no model pass: score the first pass and the on-demand model tier only",
    )
    args = parser.parse_args(argv)
    args.instances = require(args.instances or args.eval_dir / "dev.jsonl", "the questions file")
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    instances = load_instances(args.instances)
    if args.package:
        instances = [i for i in instances if i["package"] == args.package]
    rows: list[dict[str, Any]] = []
    heap.return_large_frees()
    for _key, root, questions in corpora(instances, args):
        rows += ask_corpus(root, questions, args)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print("\n".join([*table(rows, "language"), "", *table(rows, "shape")]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
