"""`codeask eval`: how well search finds the files recent commits changed, asked with their
messages, on the user's own repository (questions: selfcheck_questions).

Every question goes through the code path of `codeask search` (`retrieve.search`, scope code,
its hits ranked into files by `rank_files`, as benchmarks/search_eval.py does), once per tier:
the first pass (lexical + static vectors, what a fresh `codeask index` gives) and, when the
MiniLM tier is complete, the default hybrid. History chunks are never results (scope code): the
commit's own message and hunks would answer it. The numbers are recall of the answer files in
the first 1 and 5 files and the reciprocal rank of the first one, overall and per language.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import msgspec

from codeask.config import Settings
from codeask.core.checks.selfcheck_questions import Question, Selection
from codeask.core.search.retrieve import (
    Filters,
    Searchable,
    WithSettings,
    model_tier_for,
    rank_files,
    search,
)
from codeask.core.source.safe_read import read_regular_text

#: Files ranked per question (a first answer below this rank scores 0 in MRR).
DEPTH = 50
#: Recall cut-offs reported (R@k), then MRR.
KS = (1, 5)
METRICS = (*(f"R@{k}" for k in KS), "MRR")

#: What the report says it measures and where it misleads; the CLI prints it, docs/eval.md
#: explains it.
LIMITS = (
    "Commit messages are not the questions people type: they describe a change, often in the "
    "project's own words, and a short subject can name the very function it touched.",
    "The answer is the files the commit changed, as they are now: a commit is one reason among "
    "several to look at a file, the file may have changed a lot since, and files deleted or "
    "renamed since are dropped (not followed).",
    "Leakage: text written after the commit (a docstring or comment quoting the message, the "
    "function it named) makes a question easier than it was; the count of questions whose "
    "subject appears verbatim in an answer file says how often that is blatant.",
    "Searches run on the index as it is (never rebuilt here): a stale index answers from "
    "older files. History chunks are never results, but as in `codeask search` they take "
    "candidate slots and count in the term statistics, so an index with history (the commit "
    "itself among it) ranks code somewhat differently from one without (docs/eval.md).",
    "Small samples move a lot: with n under ~50 in a row, read its numbers as a direction, "
    "not a score.",
)


@dataclass(frozen=True)
class Tier:
    """A ranking configuration to measure: the index's own settings with other weights."""

    name: str
    label: str
    settings: Settings


@dataclass(frozen=True)
class TierCounts:
    """How much of the index each dense tier covers (IndexStatus's counts)."""

    chunks: int
    static: int
    minilm: int
    tiers: tuple[str, ...]


def tiers_for(settings: Settings, counts: TierCounts) -> tuple[list[Tier], list[str]]:
    """The first pass always; the default hybrid when MiniLM is configured and complete (a
    partly filled tier would measure how far the backlog got). With notes on what is left out."""
    first = msgspec.structs.replace(settings.retrieve, dense_weight=0.0, static_scope="all")
    static = "static" in counts.tiers and counts.static > 0
    label = "first pass (lexical + static)" if static else "first pass (lexical)"
    tiers = [Tier("first_pass", label, msgspec.structs.replace(settings, retrieve=first))]
    notes: list[str] = []
    if "minilm" in counts.tiers:
        if counts.chunks and counts.minilm >= counts.chunks:
            tiers += _model_tiers(settings)
        else:
            notes.append(
                f"MiniLM tier {counts.minilm}/{counts.chunks} chunks: the default hybrid is "
                "measured once it is complete (`codeask index --full`)"
            )
    return tiers, notes


def _model_tiers(settings: Settings) -> list[Tier]:
    """The default; and, when the default keeps the model tier to some pasted reports (the
    packaged MiniLM: reports on code in a language where it was measured to help), the same
    with it on every question too: whether it helps on this repository."""
    if model_tier_for(settings) == "all":
        return [Tier("default", "default (+ MiniLM)", settings)]
    everywhere = msgspec.structs.replace(settings.retrieve, model_tier_for="all")
    return [
        Tier("default", "default (MiniLM for pasted reports where it helps)", settings),
        Tier(
            "minilm_all",
            "MiniLM on every question",
            msgspec.structs.replace(settings, retrieve=everywhere),
        ),
    ]


def ranked_files(folder: Searchable, question: str, depth: int = DEPTH) -> list[str]:
    """`codeask search`'s files for a question, best first (history never among them)."""
    result = search([folder], question, k=depth, filters=Filters(scope="code"))
    return [path for path, _ in rank_files(result.hits, depth)]


def score(answers: Sequence[str], ranked: Sequence[str]) -> dict[str, float]:
    """R@k (share of the answers among the first k files) and the reciprocal rank of the
    first answer (0 when none is ranked), as benchmarks/retrieval.py scores a question."""
    wanted = set(answers)
    scores = {f"R@{k}": len(wanted & set(ranked[:k])) / len(wanted) for k in KS}
    first = next((i for i, path in enumerate(ranked, 1) if path in wanted), 0)
    scores["MRR"] = 1 / first if first else 0.0
    return scores


@dataclass
class Row:
    """Mean scores over the questions counted in one row of the table."""

    n: int = 0
    sums: dict[str, float] = field(default_factory=lambda: dict.fromkeys(METRICS, 0.0))

    def add(self, scores: dict[str, float]) -> None:
        self.n += 1
        for key in METRICS:
            self.sums[key] += scores[key]

    def to_json(self) -> dict[str, Any]:
        means = {
            key: round(total / self.n, 4) if self.n else 0.0 for key, total in self.sums.items()
        }
        return {"n": self.n, **means}


@dataclass
class TierResult:
    """One tier's numbers: overall, per language of the answer files, per question."""

    tier: Tier
    overall: Row = field(default_factory=Row)
    unnamed: Row = field(default_factory=Row)
    """Questions that name none of their answer files (a message saying `bm25.py: ...` or
    `bm25: ...` is answered by the path alone)."""
    languages: dict[str, Row] = field(default_factory=dict)
    ranks: list[int | None] = field(default_factory=list)
    """Rank of the first answer file, per question (None: not in the first DEPTH)."""
    tops: list[list[str]] = field(default_factory=list)
    """The first five files, per question."""
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, question: Question, ranked: list[str], elapsed_ms: float) -> None:
        """Score one question overall and, for each language of its answers, on the answer
        files of that language alone."""
        scores = score(question.answers, ranked)
        self.overall.add(scores)
        if not names_an_answer(question):
            self.unnamed.add(scores)
        for language in dict.fromkeys(question.languages):
            pairs = zip(question.answers, question.languages, strict=True)
            mine = [path for path, lang in pairs if lang == language]
            self.languages.setdefault(language, Row()).add(score(mine, ranked))
        first = next((i for i, p in enumerate(ranked, 1) if p in question.answers), None)
        self.ranks.append(first)
        self.tops.append(ranked[:5])
        self.latencies_ms.append(elapsed_ms)

    def to_json(self) -> dict[str, Any]:
        ordered = sorted(self.languages.items(), key=lambda item: (-item[1].n, item[0]))
        return {
            "name": self.tier.name,
            "label": self.tier.label,
            "overall": self.overall.to_json(),
            "no_file_named": self.unnamed.to_json(),
            "languages": {language: row.to_json() for language, row in ordered},
            "query_ms_p50": round(_median(self.latencies_ms), 2),
        }


#: A subject's leading module prefix: `netrc: `, `vtls/openssl: `, or a conventional commit's
#: scope, `fix(netrc): ` / `perf(lexical/bm25)!: `.
_MODULE_PREFIX = re.compile(r"^(?:[a-z]+\(([\w.+/-]+)\)!?|([\w.+-]+(?:/[\w.+-]+)*)):\s", re.I)


def names_an_answer(question: Question) -> bool:
    """Whether the question names one of its answer files: by path or file name anywhere, or
    by a leading `module:` prefix of its first line (curl's `netrc: ...` for lib/netrc.c),
    which names the file as plainly as `netrc.c: ...` would."""
    text = question.question.lower()
    if any(
        rel.lower() in text or PurePosixPath(rel).name.lower() in text for rel in question.answers
    ):
        return True
    prefix = _MODULE_PREFIX.match(text)
    if prefix is None:
        return False
    module = prefix.group(1) or prefix.group(2)
    return any(_is_module_of(module, rel.lower()) for rel in question.answers)


def _is_module_of(module: str, rel: str) -> bool:
    """`bm25` or `lexical/bm25` for core/storage/lexical/bm25.py: the file's stem, or its path
    without the extension from a folder boundary on."""
    bare = str(PurePosixPath(rel).with_suffix(""))
    return bare == module or bare.endswith("/" + module)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0


def measure(
    folder: Searchable, questions: Sequence[Question], tiers: Sequence[Tier]
) -> list[TierResult]:
    """Ask every question in every tier through `codeask search`'s code path."""
    results = []
    for tier in tiers:
        tuned = WithSettings(folder, tier.settings)
        result = TierResult(tier)
        if questions:  # warm: the first query loads the models a running server holds
            ranked_files(tuned, questions[0].question)
        for question in questions:
            started = time.perf_counter()
            ranked = ranked_files(tuned, question.question)
            result.add(question, ranked, (time.perf_counter() - started) * 1000)
        results.append(result)
    return results


def verbatim(root: Path, question: Question, min_words: int = 4) -> bool:
    """Whether the question's subject line appears word for word in an answer file now: text
    written after the commit (a docstring quoting it) would make the question easy."""
    subject = _normal(question.question.partition("\n")[0])
    if len(subject.split()) < min_words:
        return False
    return any(subject in _normal(read_regular_text(root / rel)) for rel in question.answers)


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


@dataclass
class Report:
    """What `codeask eval` prints: the setup, the selection, each tier's table, the limits."""

    root: Path
    head: str
    run_at: str
    index: dict[str, Any]
    selection: Selection
    options: dict[str, Any]
    results: list[TierResult]
    notes: list[str]
    verbatim: list[bool]

    def to_json(self) -> dict[str, Any]:
        """The `--json` document (its schema is documented in docs/eval.md)."""
        questions = self.selection.questions
        return {
            "root": str(self.root),
            "head": self.head,
            "run_at": self.run_at,
            "index": self.index,
            "selection": {
                **self.options,
                "commits_read": self.selection.walked,
                "questions": len(questions),
                "skipped": dict(sorted(self.selection.skipped.items(), key=lambda i: -i[1])),
                "files_dropped": self.selection.files_dropped,
                "verbatim_subjects": sum(self.verbatim),
                "naming_an_answer_file": sum(names_an_answer(q) for q in questions),
            },
            "depth": DEPTH,
            "tiers": [result.to_json() for result in self.results],
            "notes": self.notes,
            "limits": list(LIMITS),
            "questions": [self._question_json(i, q) for i, q in enumerate(questions)],
        }

    def _question_json(self, i: int, question: Question) -> dict[str, Any]:
        return {
            "sha": question.sha,
            "date": question.date,
            "question": question.question,
            "answers": list(question.answers),
            "languages": list(question.languages),
            "verbatim_subject": self.verbatim[i],
            "names_an_answer_file": names_an_answer(question),
            "tiers": {
                r.tier.name: {"first_rank": r.ranks[i], "top": r.tops[i]} for r in self.results
            },
        }
