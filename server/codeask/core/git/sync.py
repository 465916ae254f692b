"""Git history as searchable chunks: the indexed window kept in line with HEAD.

Commits and their diff hunks become `Chunk`s (kinds 'commit' and 'hunk') so that the same
embedder, BM25 index and ranking that serve code also answer "when/why/who changed X".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from codeask.config import HistorySettings, IndexSettings
from codeask.core.git.commits import (
    SHORT_SHA,
    BlameInfo,
    commit_info,
    info_meta,
    message,
    split_message,
)
from codeask.core.git.diffs import PathRules, parent_diff
from codeask.core.git.hunks import CommitWork, collect_hunks
from codeask.core.git.repo import Scope, git_errors, head_commit, open_scoped, shallow_boundary
from codeask.core.records import Chunk
from codeask.core.source.discover import IGNORED
from codeask.core.source.names import display_path

if TYPE_CHECKING:  # pygit2 is imported by the functions that use it (core/git/repo.py says why)
    import pygit2

#: Files named in a commit chunk's "Files:" line.
FILES_LISTED = 10


@dataclass
class HistoryDelta:
    """What the index must change to mirror the current history window."""

    head: str
    """HEAD commit sha ('' for an empty repository, an unborn HEAD or no repository)."""
    added: dict[str, list[Chunk]] = field(default_factory=dict)
    """sha -> [commit chunk, hunk chunks...] for commits newly in the window, newest first."""
    removed: list[str] = field(default_factory=list)
    """Previously indexed shas no longer in the window (rewritten, other branch, too old)."""
    notes: list[str] = field(default_factory=list)
    """Human log lines: shallow clone, capped diffs, skipped binaries and submodules."""


# --------------------------------------------------------------------------- one commit


def _main_path(work: CommitWork, files: list[str]) -> str:
    """The file with the most changed lines, else the first file touched, else ''."""
    if work.changed:
        return max(work.changed, key=lambda p: work.changed[p])
    return files[0] if files else ""


def _files_line(files: list[str]) -> str:
    if not files:
        return "(none)"
    line = ", ".join(files[:FILES_LISTED])
    more = len(files) - FILES_LISTED
    return f"{line} (+{more} more)" if more > 0 else line


def _commit_text(info: BlameInfo, body: str, files: list[str]) -> str:
    facts = f"Author: {info.author} <{info.email}>\nDate: {info.date}\nFiles: {_files_line(files)}"
    return "\n\n".join(part for part in (info.subject, body, facts) if part)


def _display_name(delta: pygit2.DiffDelta, scope: Scope) -> str:
    """A touched file for the "Files:" line; renames keep the old name (a pure rename has
    no hunk, so this is the only place it can be found)."""
    from pygit2.enums import DeltaStatus

    name = display_path(scope.to_workspace(delta.new_file.path) or delta.new_file.path)
    if delta.status == DeltaStatus.RENAMED:
        old = scope.to_workspace(delta.old_file.path) or delta.old_file.path
        return f"{name} (from {display_path(old)})"
    return name


def _touched_files(
    diff: pygit2.Diff | None, scope: Scope, paths: PathRules
) -> tuple[list[str], list[str]]:
    """(files inside the workspace, all files for display) that a diff touches; files the
    ignore rules exclude are left out, as discover() leaves them out."""
    if diff is None:
        return [], []
    deltas = [d for d in diff.deltas if not _ignored(d, scope, paths)]
    inside = [p for p in (scope.to_workspace(d.new_file.path) for d in deltas) if p is not None]
    return inside, [_display_name(d, scope) for d in deltas]


def _ignored(delta: pygit2.DiffDelta, scope: Scope, paths: PathRules) -> bool:
    rel = scope.to_workspace(delta.new_file.path)
    return rel is not None and paths.reason(rel) == IGNORED


def _commit_chunks(
    repo: pygit2.Repository,
    commit: pygit2.Commit,
    settings: HistorySettings,
    scope: Scope,
    boundary: bool,
    paths: PathRules,
) -> tuple[list[Chunk], list[str]]:
    """One 'commit' chunk followed by its 'hunk' chunks, plus log notes.

    `boundary` marks a shallow-clone boundary commit: its parent is missing, so a diff
    would wrongly show the whole tree as added; it gets a commit chunk only.
    """
    info = commit_info(commit)
    _, body = split_message(message(commit))
    work = CommitWork(info, settings)
    diff = None if boundary else parent_diff(commit)
    notes = [f"{info.sha[:SHORT_SHA]}: shallow-clone boundary, diff unknown"] if boundary else []
    if diff is not None:
        collect_hunks(repo, diff, scope, work, paths)
    inside, files = _touched_files(diff, scope, paths)
    head = Chunk(
        path=_main_path(work, inside),
        language="git",
        kind="commit",
        start_line=1,
        end_line=1,
        text=_commit_text(info, body, files),
        symbol=info.sha[:SHORT_SHA],
        meta=info_meta(info),
    )
    return [head, *work.hunks], notes + work.notes(len(files))


# --------------------------------------------------------------------------- the window


def _window(repo: pygit2.Repository, head: pygit2.Commit, limit: int) -> list[str]:
    """The first `limit` commits from HEAD, in topological + time order (newest first)."""
    if limit <= 0:
        return []
    from pygit2.enums import SortMode

    walker = repo.walk(head.id, SortMode.TOPOLOGICAL | SortMode.TIME)
    return [str(commit.id) for commit in islice(walker, limit)]


def _diff_new(
    repo: pygit2.Repository,
    scope: Scope,
    shas: list[str],
    settings: HistorySettings,
    notes: list[str],
    cancel: Callable[[], bool] | None,
    paths: PathRules,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, list[Chunk]]:
    """Chunks for the commits not indexed yet; stops early (and says so) when cancelled.
    `progress(done, total)` is told how many of the new commits were diffed so far."""
    import pygit2

    boundary = shallow_boundary(repo)
    added: dict[str, list[Chunk]] = {}
    for done, sha in enumerate(shas):
        if progress is not None:
            progress(done, len(shas))
        if cancel is not None and cancel():
            notes.append(f"cancelled after {len(added)} of {len(shas)} new commits")
            break
        try:
            commit = repo[sha].peel(pygit2.Commit)
            chunks, more = _commit_chunks(repo, commit, settings, scope, sha in boundary, paths)
        except git_errors() as exc:  # a corrupt object: skip it, retry on the next sync
            notes.append(f"{sha[:SHORT_SHA]}: not indexed ({exc})")
            continue
        added[sha] = chunks
        notes.extend(more)
    return added


def sync_history(
    root: Path,
    settings: HistorySettings,
    indexed: set[str],
    *,
    cancel: Callable[[], bool] | None = None,
    index: IndexSettings | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> HistoryDelta:
    """Bring the indexed history in line with the first `max_commits` commits from HEAD.

    Incremental: only shas missing from `indexed` are diffed, so a new commit costs one
    diff; an amend, rebase or branch switch shows up as `removed` + `added`. Without a
    repository (or with history disabled) everything indexed is removed. `index` supplies
    discovery's ignore, secret-name and size rules (defaults when None) for every commit.
    `progress(done, total)` counts the new commits diffed so far (for a progress display).
    """
    opened = open_scoped(root) if settings.enabled else None
    if opened is None:
        note = "history disabled" if not settings.enabled else f"{root}: not a git repository"
        return HistoryDelta(head="", removed=sorted(indexed), notes=[note + "; history off"])
    repo, scope = opened
    head = head_commit(repo)
    if head is None:
        return HistoryDelta(head="", removed=sorted(indexed), notes=["no commits yet"])
    try:
        window = _window(repo, head, settings.max_commits)
    except git_errors() as exc:  # unreadable history: keep what is indexed, try again later
        return HistoryDelta(head=str(head.id), notes=[f"cannot walk history: {exc}"])
    notes = _shallow_notes(repo)
    fresh = [sha for sha in window if sha not in indexed]
    paths = PathRules.for_root(root, index)
    added = _diff_new(repo, scope, fresh, settings, notes, cancel, paths, progress)
    if progress is not None and fresh:
        progress(len(added), len(fresh))
    removed = sorted(indexed.difference(window))
    return HistoryDelta(head=str(head.id), added=added, removed=removed, notes=notes)


def _shallow_notes(repo: pygit2.Repository) -> list[str]:
    boundary = shallow_boundary(repo)
    if not repo.is_shallow:
        return []
    return [f"shallow clone: history stops at {len(boundary)} commit(s) whose parents are absent"]
