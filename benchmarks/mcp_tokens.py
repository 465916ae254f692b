"""Tokens an agent reads until the gold file appears: `search_code` against a grep baseline.

    python -m benchmarks.mcp_tokens --eval ../shared/eval          # pasted bug reports (dev)
    python -m benchmarks.mcp_tokens --eval-search ../shared/eval-search   # short questions

For each question of an eval (its dev questions; never its answers in code), two agents:

- `search_code`: one call, `k=10`, default `max_tokens`; it reads the answer's JSON up to and
  including the first hit in a gold file. A miss costs the whole answer, then the grep agent's
  cost (it falls back to grep).
- grep: it greps for the question's identifiers and words (code-aware terms, stop words out;
  `grep -l` per term), reads the list of matching files, then reads whole files, most terms
  matched first, until it has read a gold file. A gold file no term matches is never found.

Tokens are characters / 4 for both (the issue's measure). The search side is computed in
process with the exact functions the MCP tool runs (`core.operations.search_now` and
`mcp.results.fit_hits`: the same text an agent receives); the index is the state of a first
call on a cold folder (lexical + static tier, no MiniLM) unless --minilm.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.operations import query_words, search_now
from codeask.core.source.discover import discover
from codeask.core.source.limits import DEFAULT_MAX_TOKENS, max_chars
from codeask.core.storage.lexical.index import code_tokens, query_terms
from codeask.mcp import results

CHARS_PER_TOKEN = 4


@dataclass
class Question:
    qid: str
    corpus: Path
    """The folder indexed."""
    prefix: str
    """What turns a path relative to `corpus` into a gold path ('' or 'benchmark_root/')."""
    text: str
    gold: set[str]


@dataclass
class Cost:
    found: bool
    tokens: int


def tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


# ---------------------------------------------------------------- the two agents


def search_agent(folder: FolderIndex, q: Question) -> Cost:
    """One `search_code` call; the answer read up to the first gold hit."""
    query = q.text[: max_chars("mcp", "query")]
    found = search_now([folder], query, k=10)
    answer = results.fit_hits(
        found.result.hits, query_words(query), {"query": query}, DEFAULT_MAX_TOKENS
    )
    items = answer["results"]
    root = str(folder.root) + "/"
    for i, item in enumerate(items):
        if q.prefix + item["path"].removeprefix(root) in q.gold:
            return Cost(True, tokens(results.dumps(answer | {"results": items[: i + 1]})))
    return Cost(False, tokens(results.dumps(answer)))


class GrepAgent:
    """grep -l per term over a corpus's files (the files `codeask index` would see)."""

    def __init__(self, root: Path, folder: FolderIndex) -> None:
        self.files: dict[str, str] = {}
        self.terms: dict[str, frozenset[str]] = {}
        for source in discover(root, folder.settings.index).files:
            try:
                text = Path(source.path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            self.files[source.rel] = text
            self.terms[source.rel] = frozenset(code_tokens(text))

    def cost(self, q: Question) -> Cost:
        wanted = query_terms(q.text)[:48]
        matched: defaultdict[str, int] = defaultdict(int)
        for rel, present in self.terms.items():
            for term in wanted:
                if term in present:
                    matched[rel] += 1
        order = sorted(matched, key=lambda rel: (-matched[rel], rel))
        spent = sum(tokens(f"{rel}\n") for rel in order)  # the grep -l listings (once each)
        for rel in order:
            spent += tokens(self.files[rel])
            if q.prefix + rel in q.gold:
                return Cost(True, spent)
        return Cost(False, spent)


# ---------------------------------------------------------------- evals


def eval_questions(eval_dir: Path) -> list[Question]:
    """The bug-report eval's dev questions over the fetched sdists."""
    import subprocess

    instances = eval_dir / "dev.jsonl"
    listing = subprocess.run(
        [
            sys.executable,
            str(eval_dir / "fetch_corpus.py"),
            "--instances",
            str(instances),
            "--print-roots",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    roots = {
        tuple(line.split("\t")[:2]): Path(line.split("\t")[2]) for line in listing.splitlines()
    }
    out = []
    for line in instances.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        root = roots.get((row["package"], row["version"]))
        if root is not None and root.is_dir():
            out.append(Question(row["id"], root, "", row["question"], set(row["gold_files"])))
    return out


def search_eval_questions(eval_dir: Path, repos_dir: Path) -> list[Question]:
    """The short-question eval's questions over its unpacked repositories."""
    roots: dict[str, tuple[Path, str]] = {}
    lines = (eval_dir / "repos.tsv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    for line in lines[1:]:
        row = dict(zip(header, line.split("\t"), strict=False))
        base = row["benchmark_root"]
        prefix = "" if base == "." else base.rstrip("/") + "/"
        roots[row["name"]] = (repos_dir / row["name"] / base, prefix)
    out = []
    for line in (eval_dir / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        root, prefix = roots[row["repo"]]
        gold = {t["repo_path"] for t in row["relevant"] + row["secondary"]}
        out.append(Question(row["qid"], root, prefix, row["query"], gold))
    return out


def open_folder(root: Path, index_home: Path, minilm: bool) -> FolderIndex:
    settings, warnings = build_settings(
        {
            "index": {"location": str(index_home)},
            "history": {"enabled": False},
            "embed": {"tiers": ["static", "minilm"] if minilm else ["static"]},
        }
    )
    if warnings:
        raise SystemExit("; ".join(warnings))
    folder = FolderIndex(root, settings)
    folder.refresh(embed=minilm)
    return folder


def run(questions: Iterable[Question], index_home: Path, minilm: bool) -> list[dict[str, Any]]:
    by_corpus: dict[Path, list[Question]] = defaultdict(list)
    for q in questions:
        by_corpus[q.corpus].append(q)
    rows = []
    for corpus, group in sorted(by_corpus.items()):
        started = time.perf_counter()
        folder = open_folder(corpus, index_home, minilm)
        grep = GrepAgent(corpus, folder)
        for q in group:
            s, g = search_agent(folder, q), grep.cost(q)
            rows.append({"qid": q.qid, "search": s.__dict__, "grep": g.__dict__})
        folder.close()
        print(
            f"{corpus.name}: {len(group)} questions, {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
    return rows


def table(name: str, rows: list[dict[str, Any]]) -> str:
    """The markdown rows: found within the first answer / by grep, median and mean tokens."""
    n = len(rows)
    s_found = [r for r in rows if r["search"]["found"]]
    g_found = [r for r in rows if r["grep"]["found"]]
    # a search miss falls back to grep: its answer plus the grep agent's whole cost
    s_total = [
        r["search"]["tokens"] + (0 if r["search"]["found"] else r["grep"]["tokens"]) for r in rows
    ]
    g_total = [r["grep"]["tokens"] for r in rows]
    both = [r for r in rows if r["search"]["found"] and r["grep"]["found"]]
    wins = sum(r["search"]["tokens"] < r["grep"]["tokens"] for r in both)

    def med(values: list[int]) -> str:
        return f"{statistics.median(values):,.0f}" if values else "-"

    s_gold = med([r["search"]["tokens"] for r in s_found])
    return (
        f"| {name} | {n} | {len(s_found) / n:.0%} | {s_gold} "
        f"| {med(s_total)} | {statistics.fmean(s_total):,.0f} "
        f"| {len(g_found) / n:.0%} | {med([r['grep']['tokens'] for r in g_found])} "
        f"| {med(g_total)} | {statistics.fmean(g_total):,.0f} | {wins}/{len(both)} |"
    )


HEADER = (
    "| eval | questions | search_code: gold in answer | tokens to gold (found) "
    "| tokens incl. fallback: median | mean | grep: gold reached | tokens to gold (found) "
    "| tokens: median | mean | "
    "search cheaper (both found) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, help="the bug-report eval folder (dev.jsonl)")
    parser.add_argument("--eval-search", type=Path, help="the short-question eval folder")
    parser.add_argument(
        "--repos",
        type=Path,
        default=Path.home() / ".cache/codeask-eval/search",
        help="where eval-search's repos.tar.xz is unpacked",
    )
    parser.add_argument("--minilm", action="store_true", help="embed with MiniLM too (slow)")
    parser.add_argument("--out", type=Path, help="per-question rows (JSONL)")
    args = parser.parse_args()
    lines = [HEADER]
    everything = []
    with tempfile.TemporaryDirectory(prefix="codeask-mcp-tokens-") as home:
        if args.eval:
            rows = run(eval_questions(args.eval), Path(home), args.minilm)
            lines.append(table("eval (bug reports, dev)", rows))
            everything += rows
        if args.eval_search:
            rows = run(search_eval_questions(args.eval_search, args.repos), Path(home), args.minilm)
            lines.append(table("eval-search (short questions)", rows))
            everything += rows
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in everything), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
