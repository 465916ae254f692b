"""Two runs of an eval-search-layout eval, question by question: per language, this − that.

    python -m benchmarks.search_compare THIS_ROWS.jsonl THAT_ROWS.jsonl --queries queries.jsonl

The rows are the scorer's per-question output (`score.py --per-query`, written by
`benchmarks.search_eval --per-query`). The table is the one each round of benchmarks/README.md
reports (codeask − semble, or a change − its baseline): per language the mean file NDCG@10 of
both runs and their difference, worst language first, then all questions, R@5 of both, and how
many questions each run ranks better. `search_eval --compare ROWS` prints it after a run.
Only questions in both runs and in `queries.jsonl` count.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

METRIC = "file_ndcg10"
RECALL = "file_r5"


def read_rows(path: Path) -> dict[str, dict[str, Any]]:
    """The scorer's per-question rows, by question id."""
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line)
    return {row["qid"]: row for row in rows}


def _mean(rows: dict[str, dict[str, Any]], qids: list[str], key: str) -> float:
    return sum(rows[q][key] for q in qids) / len(qids) if qids else 0.0


def compare(
    languages: dict[str, str], this: dict[str, dict[str, Any]], that: dict[str, dict[str, Any]]
) -> str:
    """The per-language table of `this` run against `that` (`languages`: question id → its
    language)."""
    shared = [q for q in languages if q in this and q in that]
    by_language: dict[str, list[str]] = defaultdict(list)
    for qid in shared:
        by_language[languages[qid]].append(qid)
    rows = []
    for language, qids in by_language.items():
        mine, theirs = _mean(this, qids, METRIC), _mean(that, qids, METRIC)
        rows.append((mine - theirs, language, len(qids), mine, theirs))
    rows.sort()
    lines = [f"{'language':12} {'n':>4} {'this':>6} {'that':>6} {'diff':>7}"]
    lines += [f"{lang:12} {n:4} {a:6.3f} {b:6.3f} {d:+7.3f}" for d, lang, n, a, b in rows]
    mine, theirs = _mean(this, shared, METRIC), _mean(that, shared, METRIC)
    better = sum(this[q][METRIC] > that[q][METRIC] for q in shared)
    worse = sum(this[q][METRIC] < that[q][METRIC] for q in shared)
    lines.append(f"{'all':12} {len(shared):4} {mine:6.4f} {theirs:6.4f} {mine - theirs:+7.4f}")
    lines.append(
        f"file R@5 {_mean(this, shared, RECALL):.4f} vs {_mean(that, shared, RECALL):.4f}; "
        f"this better on {better} questions, worse on {worse}"
    )
    return "\n".join(lines)


def question_languages(queries: Path) -> dict[str, str]:
    """Question id → language, from the eval's queries.jsonl."""
    lines = queries.read_text(encoding="utf-8").splitlines()
    return {q["qid"]: q["language"] for q in (json.loads(line) for line in lines if line)}


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("this", type=Path, help="per-question rows of the run to judge")
    parser.add_argument("that", type=Path, help="per-question rows to compare it with")
    parser.add_argument("--queries", type=Path, required=True, help="the eval's queries.jsonl")
    args = parser.parse_args(argv)
    print(compare(question_languages(args.queries), read_rows(args.this), read_rows(args.that)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
