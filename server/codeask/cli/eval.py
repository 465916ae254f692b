"""`codeask eval`: a retrieval self-check on this repository, from its own git history.

Recent commits that change a few code files become questions (their messages), answered by
those files; each is asked through `codeask search`'s code path and the report gives R@1, R@5
and MRR per tier and per language, with what it left out and its limits (docs/eval.md).

It reads the existing index as it is (never rebuilt, never written: a reader like `codeask
search`, even while an editor's server writes it); without one it builds the first pass as
`codeask index` does. Exit 1 with one line when there is nothing to ask: not a git repository,
no commits, no commit that qualifies.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeask.cli.common import EXIT_OK, UserError, print_json, roots
from codeask.config import load_settings
from codeask.core.checks.selfcheck import (
    DEPTH,
    LIMITS,
    METRICS,
    Report,
    TierCounts,
    measure,
    tiers_for,
    verbatim,
)
from codeask.core.checks.selfcheck_questions import (
    SKIP_REASONS,
    LanguageOf,
    NoHistory,
    Selection,
    SelectOptions,
    open_history,
    parse_day,
    select_questions,
)
from codeask.core.indexer import CancelToken, FolderIndex, RootRefused, has_index
from codeask.core.source.names import display_path, display_text
from codeask.core.storage import writer_lock

log = logging.getLogger("codeask.cli.eval")


def run(args: argparse.Namespace) -> int:
    """Select the questions, ask them in every tier, print the report."""
    options = _options(args)
    root = roots([args.path] if args.path else None)[0]
    try:
        head = str(open_history(root)[2].id)
    except NoHistory as exc:
        raise UserError(str(exc)) from None
    with _open_index(root) as (folder, built):
        selection = select_questions(root, _language_of(folder), options)
        if not selection.questions:
            raise UserError(_nothing_to_ask(selection, options))
        status = folder.status()
        counts = TierCounts(
            status.chunks, status.static_embedded, status.embedded, tuple(status.tiers)
        )
        tiers, notes = tiers_for(folder.settings, counts)
        sys.stderr.write(
            f"codeask: asking {len(selection.questions)} questions in "
            f"{len(tiers)} tier{'s' if len(tiers) > 1 else ''}…\n"
        )
        results = measure(folder, selection.questions, tiers)
        report = Report(
            root=root,
            head=head,
            run_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            index={
                "folder": str(folder.folder),
                "built_now": built,
                "files": status.files,
                "chunks": status.chunks,
                "tiers": status.tier_summary(),
                "saved_at": _iso(status.last_indexed),
            },
            selection=selection,
            options={
                "commits": options.commits,
                "since": options.since,
                "max_files": options.max_files,
                "min_words": options.min_words,
                "subject_only": options.subject_only,
            },
            results=results,
            notes=notes,
            verbatim=[verbatim(root, q, options.min_words) for q in selection.questions],
        )
    if args.json:
        print_json(report.to_json())
    else:
        _print_report(report.to_json(), show_questions=args.questions)
    return EXIT_OK


def _options(args: argparse.Namespace) -> SelectOptions:
    if args.commits <= 0:
        raise UserError("--commits must be 1 or more")
    if args.max_files <= 0:
        raise UserError("--max-files must be 1 or more")
    if args.since:
        try:
            parse_day(args.since)
        except ValueError as exc:
            raise UserError(str(exc)) from None
    return SelectOptions(
        commits=args.commits,
        since=args.since,
        max_files=args.max_files,
        subject_only=args.subject_only,
    )


@contextmanager
def _open_index(root: Path) -> Iterator[tuple[FolderIndex, bool]]:
    """The folder's index and whether it was built now: an existing one is only read (even
    while another process writes it); without one, the first pass is built as `codeask index`
    builds it, unless another process is building it already."""
    settings, warnings = load_settings(root)
    for warning in warnings:
        log.warning("%s", warning)
    built = False
    try:
        if has_index(root, settings):
            folder = FolderIndex(root, settings, warnings=warnings, mode="read")
        else:
            folder = FolderIndex(root, settings, warnings=warnings, mode="auto", kind="index")
            built = not folder.read_only
    except RootRefused as exc:
        raise UserError(str(exc)) from None
    try:
        if built:
            _build_first_pass(folder)
        elif not folder.storage.paths():
            raise UserError(_no_index(folder))
        yield folder, built
    finally:
        folder.close()  # a reader saves nothing; a first pass built here is saved


def _build_first_pass(folder: FolderIndex) -> None:
    shown = display_path(str(folder.root))
    sys.stderr.write(
        f"codeask: no index of {shown} yet: building its first pass (lexical + static), "
        "as `codeask index` does…\n"
    )
    token = CancelToken()
    try:
        folder.refresh(cancel=token, embed=False)
    except KeyboardInterrupt:
        token.cancel()
        raise UserError("interrupted; the index keeps what was done") from None


def _no_index(folder: FolderIndex) -> str:
    """Why a reader found nothing to search."""
    if folder.damage:
        return (
            f"the index at {folder.folder} is damaged ({folder.damage}); "
            "`codeask index` (or the running editor server) rebuilds it"
        )
    holder = writer_lock.holder(folder.folder)
    if holder is not None:
        return (
            f"the index at {folder.folder} is being built by {holder.describe()}; "
            "run `codeask eval` again when it is done"
        )
    return f"the index at {folder.folder} holds no files: run `codeask index` first"


def _language_of(folder: FolderIndex) -> LanguageOf:
    """The language of a path the index holds as code (chunked, a grammar language)."""
    storage = folder.storage

    def language_of(rel: str) -> str | None:
        record = storage.file(rel)
        if record is None or record.skipped or not record.chunk_ids:
            return None
        return record.language or None

    return language_of


def _nothing_to_ask(selection: Selection, options: SelectOptions) -> str:
    since = f" since {options.since}" if options.since else ""
    why = _skipped_text(dict(selection.skipped)) or "none"
    return (
        f"no commit qualifies as a question ({selection.walked} commits read{since}; left out: "
        f"{why}); a question is a non-merge commit with a message of {options.min_words}+ "
        f"words that changes 1 to {options.max_files} code files still in the index"
    )


def _skipped_text(skipped: dict[str, int]) -> str:
    order = {reason: i for i, reason in enumerate(SKIP_REASONS)}
    ranked = sorted(skipped.items(), key=lambda item: (-item[1], order.get(item[0], 99)))
    return ", ".join(f"{reason} {count}" for reason, count in ranked)


def _iso(epoch: float) -> str:
    if not epoch:
        return ""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _print_report(report: dict[str, Any], *, show_questions: bool) -> None:
    out = sys.stdout.write
    selection, index = report["selection"], report["index"]
    out(
        f"codeask eval: {display_path(report['root'])} at {report['head'][:10]}, "
        f"run {report['run_at']}\n"
    )
    built = " (first pass built now)" if index["built_now"] else ""
    out(f"  index: {index['files']} files, {index['chunks']} chunks; {index['tiers']}{built}\n")
    out(
        f"  questions: {selection['questions']} from {selection['commits_read']} commits read; "
        f"left out: {_skipped_text(selection['skipped']) or 'none'}\n"
    )
    out(
        f"  answer files gone or not indexed since: {selection['files_dropped']}; questions "
        f"naming an answer file: {selection['naming_an_answer_file']}; whose subject is "
        f"verbatim in an answer file now: {selection['verbatim_subjects']}\n\n"
    )
    out(f"{'tier':32} {'language':12} {'n':>5} " + " ".join(f"{m:>6}" for m in METRICS) + "\n")
    for tier in report["tiers"]:
        rows = [("all", tier["overall"]), ("no file named", tier["no_file_named"])]
        rows += tier["languages"].items()
        for i, (language, row) in enumerate(rows):
            label = tier["label"] if i == 0 else ""
            values = " ".join(f"{row[m]:6.3f}" for m in METRICS)
            out(f"{label:32} {language:12} {row['n']:5} {values}\n")
        out(f"{'':32} query p50 {tier['query_ms_p50']:.1f} ms\n")
    for note in report["notes"]:
        out(f"\nnote: {note}\n")
    out(
        f"\nR@k: share of a question's answer files among the first k files `codeask search` "
        f"ranks; MRR: mean of 1/rank of the first answer file (0 beyond {DEPTH}). A language's "
        "row scores its own answer files only; `no file named` leaves out the questions that name "
        "an answer file by path or file name, or by a leading `module:` prefix (`netrc: ...` for "
        "lib/netrc.c).\n"
    )
    out("Limits: " + " ".join(LIMITS) + "\n")
    if show_questions:
        _print_questions(report)


def _print_questions(report: dict[str, Any]) -> None:
    out = sys.stdout.write
    names = [tier["name"] for tier in report["tiers"]]
    out("\nrank of the first answer (" + " / ".join(names) + "), commit, answers, question:\n")
    for question in report["questions"]:
        ranks = " / ".join(_rank(question["tiers"][name]["first_rank"]) for name in names)
        subject = display_text(question["question"].partition("\n")[0][:100])
        answers = ", ".join(display_path(p) for p in question["answers"])
        out(f"  {ranks:>9}  {question['sha'][:10]}  {answers}  {subject}\n")


def _rank(rank: int | None) -> str:
    return str(rank) if rank is not None else "-"
