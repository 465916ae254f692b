"""Questions for `codeask eval` from a repository's own history: recent non-merge commits that
change a few code files become questions (their messages, cleaned) whose answers are those files
as the working tree has them now.

Commit messages are not questions people type, and a commit is only one reason a file changed:
the selection keeps the commits most likely to read like a question about specific code (a
short, focused change with a real message) and says how many it left out, and why.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path

import pygit2
from pygit2.enums import DeltaStatus, DiffOption, SortMode

from codeask.core.git.commits import message, split_message
from codeask.core.git.repo import GIT_ERRORS, Scope, head_commit, open_scoped, shallow_boundary
from codeask.core.search.retrieve import VENDORED, is_test_path
from codeask.core.source.languages import language_for_path

#: How many commits the walk reads at most, whatever --commits asks for.
WALK_LIMIT = 20_000
#: A commit that changes more files than this (code or not) is a sweep, not a question.
MAX_TOTAL_FILES = 20
#: Blobs above this size are generated or data: not code a question is about.
MAX_CODE_BYTES = 1_000_000
#: A question longer than this is cut (a message's first paragraph can be a changelog).
MAX_QUESTION_CHARS = 2_000

#: Why a commit is not a question, in the order the checks run (each commit counts once).
SKIP_REASONS = (
    "shallow clone boundary",
    "merge",
    "revert",
    "message too short",
    "more files than a focused change",
    "no code file changed",
    "formatting or renames only",
    "more code files than --max-files",
    "outside this folder",
    "its files are gone or not indexed",
)

_TRAILER = re.compile(
    r"^\s*(signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|"
    r"suggested-by|helped-by|requested-by|cc|change-id|fixes|closes|resolves|refs?|see-also|"
    r"bug|issue|pr-url|link)\s*:",
    re.IGNORECASE,
)
_CHERRY_PICK = re.compile(r"^\s*\(cherry picked from commit [0-9a-f]+\)\s*$")
#: `#12`, `owner/repo#12`, `#12/1c33594` (a PR and the commit a backport picks), `GH-7`, `gh-7`.
_REF = r"(?:[\w.-]+/[\w.-]+)?#\d+(?:/[0-9a-f]{7,40}\b)?|\b[Gg][Hh]-\d+\b"
_CLOSING_REF = re.compile(
    rf"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?|see|refs?)\s+(?:{_REF})", re.IGNORECASE
)
_ISSUE_REF = re.compile(_REF)
#: Backport bots' leading tags, dropped whole: `[PR #8079/1c335944 backport][3.9] `,
#: `[3.12] ` (any bracket naming a backport, cherry-pick or issue, or a bare version), then a
#: leading `gh-123: ` or `#123: `. A tag of words (`[netrc] `) stays; a tag is 160 characters at
#: most (the match stays linear on a long subject).
_LEADING_TAGS = re.compile(
    rf"^\s*(?:\[(?:[^\]]{{0,80}}?(?:backport|cherry[- ]?pick|{_REF})[^\]]{{0,80}}"
    r"|v?\d+(?:\.(?:\d+|x))*)\]\s*)*"
    rf"(?:(?:{_REF})\s*:\s*)?",
    re.IGNORECASE,
)
_URL = re.compile(r"https?://\S+")
_CI_TAG = re.compile(r"\[(?:skip ci|ci skip|no ci|skip-ci)\]", re.IGNORECASE)
#: `()` or `[]` left empty by the removals above; never a call's `foo()`.
_EMPTY_GROUP = re.compile(r"(?<![\w)\]])[(\[]\s*[,;\s]*[)\]]")
_WORD = re.compile(r"[^\W_]+")
#: A merge is a commit with more than one parent; this wording on a one-parent commit (a GitHub
#: squash merge, `Merge pull request from GHSA-...`, `Merge commit from fork`, or a flattened
#: history) names a branch or an advisory, not the change: the body's first line is asked instead.
_MERGE_SUBJECT = re.compile(
    r"^Merge (?:branch(?:es)?|pull request|remote-tracking branch|tag|commit)\b"
)
#: A revert asks the subject of the commit it undoes again, for code that commit changed.
_REVERT_SUBJECT = re.compile(r'^Revert "')


class NoHistory(Exception):
    """The folder is not in a git repository, or the repository has no commit: nothing to ask."""


@dataclass(frozen=True)
class SelectOptions:
    """Which commits become questions."""

    commits: int = 200
    """Questions at most, newest first."""
    since: str | None = None
    """Only commits made (committer date) on or after this day, YYYY-MM-DD."""
    max_files: int = 3
    """Commits that change more code files than this are not questions."""
    min_words: int = 4
    """A message with fewer words than this is not a question ("fix typo")."""
    subject_only: bool = False
    """Ask the subject line alone, not the body's first paragraph."""


@dataclass(frozen=True)
class Question:
    """One commit as a question and the files that answer it."""

    sha: str
    date: str
    """Author date, YYYY-MM-DD."""
    question: str
    answers: tuple[str, ...]
    """Workspace-relative paths of code files the commit changed that exist (and are indexed)
    now; test files only when the commit changed nothing else."""
    languages: tuple[str, ...]
    """The language of each answer, in the same order."""


@dataclass
class Selection:
    """The questions and what the walk left out."""

    questions: list[Question] = field(default_factory=list)
    walked: int = 0
    """Commits read."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Commits left out, by reason (SKIP_REASONS)."""
    files_dropped: int = 0
    """Answer files that no longer exist in the working tree or the index."""


LanguageOf = Callable[[str], str | None]
"""The language of a workspace path the index holds as code now; None for any other path."""


def select_questions(root: Path, language_of: LanguageOf, options: SelectOptions) -> Selection:
    """Walk the history from HEAD, newest first, until `options.commits` questions are found.

    Raises NoHistory when `root` is in no repository or the repository has no commit."""
    repo, scope, head = open_history(root)
    boundary = shallow_boundary(repo)
    since = parse_day(options.since) if options.since else None
    found = Selection()
    for commit in _walk(repo, head):
        if since is not None and commit.commit_time < since:
            break
        found.walked += 1
        reason, question, dropped = _judge(repo, scope, commit, boundary, language_of, options)
        found.files_dropped += dropped
        if question is None:
            found.skipped[reason] += 1
            continue
        found.questions.append(question)
        if len(found.questions) >= options.commits:
            break
    return found


def open_history(root: Path) -> tuple[pygit2.Repository, Scope, pygit2.Commit]:
    """The repository holding `root`, where `root` sits in it, and HEAD; NoHistory without."""
    opened = open_scoped(root)
    if opened is None:
        raise NoHistory(f"{root} is not a git repository: no history to ask questions from")
    repo, scope = opened
    head = head_commit(repo)
    if head is None:
        raise NoHistory(f"the repository at {root} has no commits yet: no history to ask from")
    return repo, scope, head


def _walk(repo: pygit2.Repository, head: pygit2.Commit) -> Iterator[pygit2.Commit]:
    """Commits reachable from HEAD, newest first; a missing object ends the walk."""
    try:
        yield from islice(repo.walk(head.id, SortMode.TIME), WALK_LIMIT)
    except GIT_ERRORS:
        return


def parse_day(day: str) -> int:
    """A YYYY-MM-DD day as the epoch second it starts (UTC); ValueError naming the format."""
    try:
        parsed = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"--since wants a date as YYYY-MM-DD, not {day!r}") from None
    return int(parsed.timestamp())


def _judge(
    repo: pygit2.Repository,
    scope: Scope,
    commit: pygit2.Commit,
    boundary: set[str],
    language_of: LanguageOf,
    options: SelectOptions,
) -> tuple[str, Question | None, int]:
    """(why not, the question, answer files dropped): one commit through every check."""
    sha = str(commit.id)
    if sha in boundary:
        return "shallow clone boundary", None, 0
    if len(commit.parent_ids) > 1:
        return "merge", None, 0
    text = message(commit)
    if _REVERT_SUBJECT.match(text.strip()):
        return "revert", None, 0
    question = clean_message(text, subject_only=options.subject_only)
    if len(_WORD.findall(question)) < options.min_words:
        return "message too short", None, 0
    diff = _diff(repo, commit)
    if diff is None or len(diff) > MAX_TOTAL_FILES:
        return "more files than a focused change", None, 0
    changed = _code_changes(diff)
    if changed is None:
        return "no code file changed", None, 0
    if not changed:
        return "formatting or renames only", None, 0
    answers = [p for p in changed if not is_test_path(p)] or changed
    if len(answers) > options.max_files:
        return "more code files than --max-files", None, 0
    inside = [rel for p in answers if (rel := scope.to_workspace(p)) is not None]
    if not inside:
        return "outside this folder", None, 0
    kept = [(rel, lang) for rel in inside if (lang := language_of(rel))]
    dropped = len(inside) - len(kept)
    if not kept:
        return "its files are gone or not indexed", None, dropped
    date = datetime.fromtimestamp(commit.author.time, UTC).strftime("%Y-%m-%d")
    paths, languages = zip(*kept, strict=True)
    return "", Question(sha, date, question, tuple(paths), tuple(languages)), dropped


def _diff(repo: pygit2.Repository, commit: pygit2.Commit) -> pygit2.Diff | None:
    """The commit against its first parent (a root commit against the empty tree), whitespace
    ignored so a reindented file shows no hunk; None when unreadable."""
    flags = DiffOption.IGNORE_WHITESPACE
    try:
        if commit.parent_ids:
            parent = repo[commit.parent_ids[0]].peel(pygit2.Commit)
            diff = parent.tree.diff_to_tree(commit.tree, flags=flags, context_lines=0)
        else:
            diff = commit.tree.diff_to_tree(flags=flags, context_lines=0, swap=True)
        if len(diff) <= MAX_TOTAL_FILES:
            diff.find_similar()
    except GIT_ERRORS:
        return None
    return diff


def _code_changes(diff: pygit2.Diff) -> list[str] | None:
    """Code files whose content changed beyond whitespace (added and deleted ones too), by
    their new path; None when the diff touches no code file at all."""
    touched = False
    changed: list[str] = []
    for index, delta in enumerate(diff.deltas):
        path = delta.new_file.path if delta.status != DeltaStatus.DELETED else delta.old_file.path
        if not _is_code(path) or delta.is_binary:
            continue
        if max(delta.old_file.size, delta.new_file.size) > MAX_CODE_BYTES:
            continue
        touched = True
        if delta.status in (DeltaStatus.ADDED, DeltaStatus.DELETED) or _has_hunks(diff, index):
            changed.append(path)
    return changed if touched else None


def _is_code(path: str) -> bool:
    """A file in a language the chunker parses, not vendored."""
    return language_for_path(path) is not None and not VENDORED.search(path)


def _has_hunks(diff: pygit2.Diff, index: int) -> bool:
    patch = diff[index]
    return patch is not None and len(patch.hunks) > 0


def clean_message(text: str, *, subject_only: bool = False) -> str:
    """The subject and the body's first paragraph, without trailers (Signed-off-by, ...),
    issue references, URLs and CI tags: what is left reads like a question about the change.
    A `Merge ...` subject (of a squash merge) says nothing about the change: the body's first
    line stands in for it."""
    subject, body = split_message(text)
    if _MERGE_SUBJECT.match(subject):
        subject, body = split_message(body)
    parts = [_clean_line(subject)]
    if not subject_only:
        parts += _first_paragraph(body)
    return "\n".join(p for p in parts if p)[:MAX_QUESTION_CHARS]


def _first_paragraph(body: str) -> list[str]:
    """The body's first paragraph that is not all trailers, line by line, cleaned."""
    for paragraph in re.split(r"\n\s*\n", body):
        lines = [
            _clean_line(line)
            for line in paragraph.splitlines()
            if not _TRAILER.match(line) and not _CHERRY_PICK.match(line)
        ]
        lines = [line for line in lines if line]
        if lines:
            return lines
    return []


def _clean_line(line: str) -> str:
    line = _LEADING_TAGS.sub("", line, count=1)
    line = _URL.sub("", line)
    line = _CI_TAG.sub("", line)
    line = _CLOSING_REF.sub("", line)
    line = _ISSUE_REF.sub("", line)
    line = re.sub(r"\s*,(\s*,)+", ",", line)
    line = re.sub(r"([(\[])\s*[,;]\s*", r"\1", line)
    line = re.sub(r"\s*[,;]\s*([)\]])", r"\1", line)
    line = _EMPTY_GROUP.sub("", line)
    return re.sub(r"\s+", " ", line).strip().rstrip(":").strip()
