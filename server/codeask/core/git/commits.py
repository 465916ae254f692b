"""Commit facts as people read them (author, date, subject), and the newest commits.

Messages are redacted (a token pasted into a commit message must not reach the index or a
prompt) and decoded leniently (commits with a wrong or missing encoding header exist).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from codeask.core.git.repo import git_errors, head_commit, open_scoped
from codeask.core.source.secrets import redact_text

if TYPE_CHECKING:  # pygit2 loads with the first repository opened (BlameInfo needs none)
    import pygit2

SHORT_SHA = 10
#: How far `recent_commits(path=...)` walks before giving up.
PATH_WALK_LIMIT = 20_000


@dataclass(frozen=True)
class BlameInfo:
    """One commit, as shown to the user next to code."""

    sha: str
    author: str
    email: str
    date: str
    """Author date, ISO-8601 UTC (2024-03-01T12:00:00Z)."""
    subject: str


def decode(raw: bytes) -> str:
    """Bytes from git (paths, diff lines, messages) as text, whatever their encoding."""
    return raw.decode("utf-8", errors="replace")


def message(commit: pygit2.Commit) -> str:
    """The message with secret values redacted (a token pasted into a commit message), tolerating
    commits with a wrong or missing encoding header."""
    try:
        text = commit.message
    except (UnicodeDecodeError, LookupError):
        text = decode(commit.raw_message)
    return redact_text(text)


def _person(sig: pygit2.Signature) -> tuple[str, str]:
    try:
        return sig.name, sig.email
    except (UnicodeDecodeError, LookupError):
        return decode(sig.raw_name), decode(sig.raw_email)


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def split_message(text: str) -> tuple[str, str]:
    """(subject, body): the first line and the rest, stripped."""
    subject, _, body = text.strip().partition("\n")
    return subject.strip(), body.strip()


def commit_info(commit: pygit2.Commit) -> BlameInfo:
    """The commit's sha, author, date and subject."""
    name, email = _person(commit.author)
    subject, _ = split_message(message(commit))
    return BlameInfo(str(commit.id), name, email, _iso(commit.author.time), subject)


def info_meta(info: BlameInfo) -> dict[str, str]:
    """The facts as a chunk's `meta` (what the history filters read)."""
    return {
        "sha": info.sha,
        "author": info.author,
        "email": info.email,
        "date": info.date,
        "subject": info.subject,
    }


def parents(commit: pygit2.Commit) -> list[pygit2.Commit]:
    """Parents that exist locally (a shallow or partial clone may lack them)."""
    try:
        return list(commit.parents)
    except git_errors():
        return []


def _entry_id(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        return tree[path].id
    except git_errors():
        return None


def _touches(commit: pygit2.Commit, path: str) -> bool:
    """Whether the commit changed `path` (file or folder) relative to its first parent."""
    first = parents(commit)
    before = _entry_id(first[0].tree, path) if first else None
    return _entry_id(commit.tree, path) != before


def recent_commits(root: Path, n: int = 10, path: str | None = None) -> list[BlameInfo]:
    """The newest `n` commits reachable from HEAD, optionally only those touching `path`."""
    opened = open_scoped(root)
    head = head_commit(opened[0]) if opened else None
    if opened is None or head is None or n <= 0:
        return []
    from pygit2.enums import SortMode

    repo, scope = opened
    target = scope.to_repo(path) if path else scope.prefix
    out: list[BlameInfo] = []
    try:
        for commit in islice(repo.walk(head.id, SortMode.TIME), PATH_WALK_LIMIT):
            if not target or _touches(commit, target):
                out.append(commit_info(commit))
                if len(out) >= n:
                    break
    except git_errors():  # a missing or corrupt object ends the walk: keep what was found
        pass
    return out
