"""Git history as searchable chunks (pygit2), plus blame and working-tree facts.

Commits and their diff hunks become `Chunk`s (kinds 'commit' and 'hunk') so that the same
embedder, BM25 index and ranking that serve code also answer "when/why/who changed X".
Every function degrades to "no history" instead of raising: a folder that is not a git
repository, an empty repository, a shallow clone or a broken ref only turn features off.

The workspace folder may be a subfolder of the repository (monorepos): paths in and out of
this module are relative to the workspace folder, and files outside it are left out of hunks.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import TextIO

import numpy as np
import pygit2
from pygit2.enums import DeltaStatus, DiffOption, FileMode, FileStatus, SortMode

from codeask.config import HistorySettings, IndexSettings
from codeask.core.discover import IGNORED, IgnoreRules, path_policy
from codeask.core.records import Chunk
from codeask.core.secrets import redact_text

SHORT_SHA = 10
#: Per-commit work caps: a vendored or generated commit must never stall indexing (nor flood
#: the embedder). Files diffed, diff lines kept in hunk chunks, hunk chunks; hunks per file.
MAX_FILES = 50
MAX_DIFF_LINES = 20_000
MAX_HUNKS = 200
MAX_HUNKS_PER_FILE = 20
#: Blobs above this size are not diffed at all (generated files, data dumps).
MAX_BLOB_BYTES = 2_000_000
#: Rename detection is quadratic-ish; skip it on commits with more files than this.
RENAME_DETECT_MAX_DELTAS = 1_000
#: Files named in a commit chunk's "Files:" line.
FILES_LISTED = 10
#: How far `recent_commits(path=...)` walks before giving up.
PATH_WALK_LIMIT = 20_000
#: Editor line ranges longer than this are clipped before mapping them to HEAD for blame.
BLAME_MAX_LINES = 20_000
#: Unchanged lines between two changes that still merge them into one hunk.
INTERHUNK_LINES = 3

_WALK_ORDER = SortMode.TOPOLOGICAL | SortMode.TIME
_UNCOMMITTED = (
    FileStatus.INDEX_NEW
    | FileStatus.INDEX_MODIFIED
    | FileStatus.INDEX_RENAMED
    | FileStatus.INDEX_TYPECHANGE
    | FileStatus.WT_NEW
    | FileStatus.WT_MODIFIED
    | FileStatus.WT_RENAMED
    | FileStatus.WT_TYPECHANGE
    | FileStatus.CONFLICTED
)
_WORKDIR_FLAGS = (
    DiffOption.INCLUDE_UNTRACKED
    | DiffOption.RECURSE_UNTRACKED_DIRS
    | DiffOption.SHOW_UNTRACKED_CONTENT
    | DiffOption.IGNORE_SUBMODULES
)
_GIT_ERRORS = (pygit2.GitError, KeyError, ValueError, OSError)


# --------------------------------------------------------------------------- records


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


@dataclass(frozen=True)
class BlameInfo:
    """One commit, as shown to the user next to code."""

    sha: str
    author: str
    email: str
    date: str
    """Author date, ISO-8601 UTC (2024-03-01T12:00:00Z)."""
    subject: str


@dataclass(frozen=True)
class _Scope:
    """Where the workspace folder sits inside the repository's working tree."""

    prefix: str
    """POSIX path of the workspace folder relative to the working tree ('' at the top)."""

    def to_workspace(self, repo_path: str) -> str | None:
        """A repository path as a workspace path, None when outside the workspace."""
        if not self.prefix:
            return repo_path
        head = self.prefix + "/"
        return repo_path[len(head) :] if repo_path.startswith(head) else None

    def to_repo(self, rel_path: str) -> str:
        """A workspace path as a repository path."""
        rel = rel_path.replace("\\", "/").strip("/")
        if not self.prefix:
            return rel
        return f"{self.prefix}/{rel}" if rel else self.prefix


# --------------------------------------------------------------------------- opening


def open_repo(root: Path) -> pygit2.Repository | None:
    """The repository containing `root`, or None (not a repo, bare, broken): history off."""
    opened = _open(root)
    return opened[0] if opened else None


def _open(root: Path) -> tuple[pygit2.Repository, _Scope] | None:
    try:
        found = pygit2.discover_repository(str(root))
        if not found:
            return None
        repo = pygit2.Repository(found)
        if repo.is_bare or not repo.workdir:
            return None
        rel = Path(root).resolve().relative_to(Path(repo.workdir).resolve()).as_posix()
    except _GIT_ERRORS:
        return None
    return repo, _Scope("" if rel == "." else rel)


def _head_commit(repo: pygit2.Repository) -> pygit2.Commit | None:
    """HEAD as a commit; None when unborn or unreadable (broken ref)."""
    try:
        if repo.head_is_unborn:
            return None
        return repo.head.peel(pygit2.Commit)
    except _GIT_ERRORS:
        return None


def _shallow_boundary(repo: pygit2.Repository) -> set[str]:
    """Commits whose parents were cut off by a shallow clone (.git/shallow)."""
    if not repo.is_shallow:
        return set()
    try:
        text = (Path(repo.path) / "shallow").read_text(encoding="ascii")
    except OSError:
        return set()
    return {line.strip() for line in text.splitlines() if line.strip()}


# --------------------------------------------------------------------------- commit facts


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _message(commit: pygit2.Commit) -> str:
    """The message with secret values redacted (a token pasted into a commit message), tolerating
    commits with a wrong or missing encoding header."""
    try:
        message = commit.message
    except (UnicodeDecodeError, LookupError):
        message = _text(commit.raw_message)
    return redact_text(message)


def _person(sig: pygit2.Signature) -> tuple[str, str]:
    try:
        return sig.name, sig.email
    except (UnicodeDecodeError, LookupError):
        return _text(sig.raw_name), _text(sig.raw_email)


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _split_message(message: str) -> tuple[str, str]:
    """(subject, body): the first line and the rest, stripped."""
    subject, _, body = message.strip().partition("\n")
    return subject.strip(), body.strip()


def _info(commit: pygit2.Commit) -> BlameInfo:
    name, email = _person(commit.author)
    subject, _ = _split_message(_message(commit))
    return BlameInfo(str(commit.id), name, email, _iso(commit.author.time), subject)


def _meta(info: BlameInfo) -> dict[str, str]:
    return {
        "sha": info.sha,
        "author": info.author,
        "email": info.email,
        "date": info.date,
        "subject": info.subject,
    }


def _parents(commit: pygit2.Commit) -> list[pygit2.Commit]:
    """Parents that exist locally (a shallow or partial clone may lack them)."""
    try:
        return list(commit.parents)
    except _GIT_ERRORS:
        return []


# --------------------------------------------------------------------------- path rules


@dataclass(frozen=True)
class _Paths:
    """discover's rules applied to paths in history: a tracked `.env` that the walk skips must
    not come back through a diff. Ignored paths vanish; policy-skipped ones are only named."""

    rules: IgnoreRules
    settings: IndexSettings

    @classmethod
    def for_root(cls, root: Path, settings: IndexSettings | None) -> _Paths:
        settings = settings or IndexSettings()
        return cls(IgnoreRules.for_root(root, settings), settings)

    def reason(self, rel: str) -> str | None:
        """`IGNORED`, why discover() would skip the file, or None to read it."""
        return path_policy(self.rules, rel, self.settings)

    @property
    def max_bytes(self) -> int:
        """The smaller of the history cap and the user's file size cap."""
        return min(MAX_BLOB_BYTES, self.settings.max_file_bytes)


# --------------------------------------------------------------------------- diffs


def _commit_diff(commit: pygit2.Commit, context_lines: int = 0) -> pygit2.Diff:
    """Diff against the first parent (merges too); a root commit against the empty tree."""
    parents = _parents(commit)
    if parents:
        diff = parents[0].tree.diff_to_tree(
            commit.tree, context_lines=context_lines, interhunk_lines=INTERHUNK_LINES
        )
    else:
        diff = commit.tree.diff_to_tree(
            context_lines=context_lines, interhunk_lines=INTERHUNK_LINES, swap=True
        )
    if len(diff) <= RENAME_DETECT_MAX_DELTAS:
        diff.find_similar()
    return diff


def _blob_size(repo: pygit2.Repository, oid: pygit2.Oid) -> int:
    """Size from the object header (no inflate); 0 for the null id."""
    if not oid:
        return 0
    return repo.odb.read_header(oid)[1]


def _skip_reason(
    repo: pygit2.Repository,
    delta: pygit2.DiffDelta,
    workdir: Path | None,
    paths: _Paths,
    rel: str,
) -> str:
    """Why a file's diff is not read: discover's rules (on the old and new name), submodule,
    too large, missing object; '' to read it."""
    for name in dict.fromkeys((rel, paths_rel(delta.old_file.path, delta.new_file.path, rel))):
        reason = paths.reason(name)
        if reason is not None:
            return reason
    if FileMode.COMMIT in (delta.new_file.mode, delta.old_file.mode):
        return "submodule"
    try:
        sizes = [_blob_size(repo, delta.old_file.id)]
        if workdir is not None and delta.status != DeltaStatus.DELETED:
            sizes.append((workdir / delta.new_file.path).stat().st_size)
        else:
            sizes.append(_blob_size(repo, delta.new_file.id))
    except _GIT_ERRORS:
        return "object not available"
    if max(sizes) > paths.max_bytes:
        return f"too large: {max(sizes):,} bytes"
    return ""


def paths_rel(old: str, new: str, rel: str) -> str:
    """The old name of a renamed file, in the same (workspace-relative) form as `rel`."""
    return rel[: len(rel) - len(new)] + old if rel.endswith(new) else old


def _label(delta: pygit2.DiffDelta, path: str) -> str:
    """The file as named in a hunk's text, with renames, additions and deletions spelled out."""
    if delta.status == DeltaStatus.RENAMED:
        return f"{path} (renamed from {delta.old_file.path})"
    if delta.status == DeltaStatus.ADDED:
        return f"{path} (new file)"
    if delta.status == DeltaStatus.DELETED:
        return f"{path} (deleted)"
    return path


def _hunk_body(hunk: pygit2.DiffHunk, limit: int) -> tuple[str, int]:
    """The hunk's +/-/context lines cut to `limit` (saying how many were left out), and how
    many were kept."""
    lines = [line for line in hunk.lines if line.origin in "+- "]
    kept = [
        f"{line.origin}{_text(line.raw_content).rstrip(chr(13) + chr(10))}"
        for line in lines[:limit]
    ]
    if len(lines) > limit:
        kept.append(f"... ({len(lines) - limit} more lines)")
    return "\n".join(kept), min(len(lines), limit)


def _new_side_range(hunk: pygit2.DiffHunk) -> tuple[int, int]:
    """The hunk's lines in the new file (>= 1; a pure deletion marks the line it follows)."""
    start = max(1, hunk.new_start)
    return start, max(start, hunk.new_start + hunk.new_lines - 1)


@dataclass
class _Budget:
    """Work done on one commit so far, against the MAX_* caps."""

    files: int = 0
    lines: int = 0
    hunks: int = 0

    def full(self) -> bool:
        """No room for another hunk."""
        return self.lines >= MAX_DIFF_LINES or self.hunks >= MAX_HUNKS

    def exhausted(self) -> bool:
        """No room for another file."""
        return self.files >= MAX_FILES or self.full()


@dataclass
class _CommitWork:
    """One commit being turned into chunks."""

    info: BlameInfo
    settings: HistorySettings
    budget: _Budget = field(default_factory=_Budget)
    hunks: list[Chunk] = field(default_factory=list)
    changed: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    capped_files: list[str] = field(default_factory=list)
    capped: bool = False

    def add_patch(self, patch: pygit2.Patch, path: str) -> None:
        """Hunk chunks of one file's patch, within the file's and the commit's budget."""
        _, additions, deletions = patch.line_stats
        self.budget.files += 1
        self.changed[path] = additions + deletions
        label = _label(patch.delta, path)
        hunks = patch.hunks
        if len(hunks) > MAX_HUNKS_PER_FILE:
            self.capped_files.append(f"{path} ({len(hunks)} hunks)")
        for hunk in hunks[:MAX_HUNKS_PER_FILE]:
            if self.budget.full():
                self.capped = True
                return
            self.hunks.append(self._hunk_chunk(hunk, path, label))

    def _hunk_chunk(self, hunk: pygit2.DiffHunk, path: str, label: str) -> Chunk:
        header = hunk.header.strip()
        start, end = _new_side_range(hunk)
        body, kept = _hunk_body(hunk, max(1, self.settings.max_hunk_lines))
        self.budget.hunks += 1
        self.budget.lines += kept
        header = redact_text(header)
        return Chunk(
            path=path,
            language="git",
            kind="hunk",
            start_line=start,
            end_line=end,
            text=redact_text(f"{self.info.subject}\n{label} {header}\n{body}"),
            symbol=self.info.sha[:SHORT_SHA],
            meta={**_meta(self.info), "hunk_header": header},
        )


def _collect_hunks(
    repo: pygit2.Repository, diff: pygit2.Diff, scope: _Scope, work: _CommitWork, paths: _Paths
) -> None:
    """Walk the diff's files in order, reading patches until the budget runs out."""
    for index, delta in enumerate(diff.deltas):
        path = scope.to_workspace(delta.new_file.path)
        if path is None:
            continue
        if work.budget.exhausted():
            work.capped = True
            return
        reason = _skip_reason(repo, delta, None, paths, path)
        patch = None if reason else diff[index]
        if patch is None or patch.delta.is_binary:
            if reason != IGNORED:
                work.skipped.append(f"{path} ({reason or 'binary'})")
            continue
        work.add_patch(patch, path)


def _main_path(work: _CommitWork, files: list[str]) -> str:
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


def _display_name(delta: pygit2.DiffDelta, scope: _Scope) -> str:
    """A touched file for the "Files:" line; renames keep the old name (a pure rename has
    no hunk, so this is the only place it can be found)."""
    name = scope.to_workspace(delta.new_file.path) or delta.new_file.path
    if delta.status == DeltaStatus.RENAMED:
        return f"{name} (from {scope.to_workspace(delta.old_file.path) or delta.old_file.path})"
    return name


def _touched_files(
    diff: pygit2.Diff | None, scope: _Scope, paths: _Paths
) -> tuple[list[str], list[str]]:
    """(files inside the workspace, all files for display) that a diff touches; files the
    ignore rules exclude are left out, as discover() leaves them out."""
    if diff is None:
        return [], []
    deltas = [d for d in diff.deltas if not _ignored(d, scope, paths)]
    inside = [p for p in (scope.to_workspace(d.new_file.path) for d in deltas) if p is not None]
    return inside, [_display_name(d, scope) for d in deltas]


def _ignored(delta: pygit2.DiffDelta, scope: _Scope, paths: _Paths) -> bool:
    rel = scope.to_workspace(delta.new_file.path)
    return rel is not None and paths.reason(rel) == IGNORED


def _commit_notes(work: _CommitWork, total_files: int) -> list[str]:
    short = work.info.sha[:SHORT_SHA]
    notes = []
    if work.capped:
        notes.append(
            f"{short}: large commit ({total_files} files); diffed {work.budget.files} files, "
            f"{work.budget.lines:,} lines, {work.budget.hunks} hunks, rest skipped"
        )
    if work.capped_files:
        names = ", ".join(work.capped_files[:5])
        notes.append(f"{short}: only the first {MAX_HUNKS_PER_FILE} hunks of {names}")
    if work.skipped:
        names = ", ".join(work.skipped[:5])
        more = f" (+{len(work.skipped) - 5} more)" if len(work.skipped) > 5 else ""
        notes.append(f"{short}: not diffed: {names}{more}")
    return notes


def _commit_chunks(
    repo: pygit2.Repository,
    commit: pygit2.Commit,
    settings: HistorySettings,
    scope: _Scope,
    boundary: bool,
    paths: _Paths,
) -> tuple[list[Chunk], list[str]]:
    """One 'commit' chunk followed by its 'hunk' chunks, plus log notes.

    `boundary` marks a shallow-clone boundary commit: its parent is missing, so a diff
    would wrongly show the whole tree as added; it gets a commit chunk only.
    """
    info = _info(commit)
    _, body = _split_message(_message(commit))
    work = _CommitWork(info, settings)
    diff = None if boundary else _commit_diff(commit)
    notes = [f"{info.sha[:SHORT_SHA]}: shallow-clone boundary, diff unknown"] if boundary else []
    if diff is not None:
        _collect_hunks(repo, diff, scope, work, paths)
    inside, files = _touched_files(diff, scope, paths)
    head = Chunk(
        path=_main_path(work, inside),
        language="git",
        kind="commit",
        start_line=1,
        end_line=1,
        text=_commit_text(info, body, files),
        symbol=info.sha[:SHORT_SHA],
        meta=_meta(info),
    )
    return [head, *work.hunks], notes + _commit_notes(work, len(files))


# --------------------------------------------------------------------------- sync


def _window(repo: pygit2.Repository, head: pygit2.Commit, limit: int) -> list[str]:
    """The first `limit` commits from HEAD, in topological + time order (newest first)."""
    if limit <= 0:
        return []
    walker = repo.walk(head.id, _WALK_ORDER)
    return [str(commit.id) for commit in islice(walker, limit)]


def _diff_new(
    repo: pygit2.Repository,
    scope: _Scope,
    shas: list[str],
    settings: HistorySettings,
    notes: list[str],
    cancel: Callable[[], bool] | None,
    paths: _Paths,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, list[Chunk]]:
    """Chunks for the commits not indexed yet; stops early (and says so) when cancelled.
    `progress(done, total)` is told how many of the new commits were diffed so far."""
    boundary = _shallow_boundary(repo)
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
        except _GIT_ERRORS as exc:  # a corrupt object: skip it, retry on the next sync
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
    opened = _open(root) if settings.enabled else None
    if opened is None:
        note = "history disabled" if not settings.enabled else f"{root}: not a git repository"
        return HistoryDelta(head="", removed=sorted(indexed), notes=[note + "; history off"])
    repo, scope = opened
    head = _head_commit(repo)
    if head is None:
        return HistoryDelta(head="", removed=sorted(indexed), notes=["no commits yet"])
    try:
        window = _window(repo, head, settings.max_commits)
    except _GIT_ERRORS as exc:  # unreadable history: keep what is indexed, try again later
        return HistoryDelta(head=str(head.id), notes=[f"cannot walk history: {exc}"])
    notes = _shallow_notes(repo)
    fresh = [sha for sha in window if sha not in indexed]
    paths = _Paths.for_root(root, index)
    added = _diff_new(repo, scope, fresh, settings, notes, cancel, paths, progress)
    if progress is not None and fresh:
        progress(len(added), len(fresh))
    removed = sorted(indexed.difference(window))
    return HistoryDelta(head=str(head.id), added=added, removed=removed, notes=notes)


def _shallow_notes(repo: pygit2.Repository) -> list[str]:
    boundary = _shallow_boundary(repo)
    if not repo.is_shallow:
        return []
    return [f"shallow clone: history stops at {len(boundary)} commit(s) whose parents are absent"]


def measure(
    root: Path, settings: HistorySettings | None = None, out: TextIO = sys.stdout
) -> dict[str, float]:
    """Sync a repository from scratch and print commits/s and hunks/s (for the benchmarks)."""
    start = time.perf_counter()
    delta = sync_history(root, settings or HistorySettings(), set())
    seconds = max(time.perf_counter() - start, 1e-9)
    commits = len(delta.added)
    hunks = sum(len(chunks) - 1 for chunks in delta.added.values())
    result = {
        "commits": float(commits),
        "hunks": float(hunks),
        "seconds": seconds,
        "commits_per_s": commits / seconds,
        "hunks_per_s": hunks / seconds,
    }
    print(
        f"history sync: {commits} commits, {hunks} hunks in {seconds:.2f}s "
        f"({result['commits_per_s']:.0f} commits/s, {result['hunks_per_s']:.0f} hunks/s)",
        file=out,
    )
    return result


# --------------------------------------------------------------------------- blame


def _blob_at(tree: pygit2.Tree, path: str) -> pygit2.Blob | None:
    try:
        obj = tree[path]
    except _GIT_ERRORS:
        return None
    return obj if isinstance(obj, pygit2.Blob) else None


def _line_count(data: bytes) -> int:
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _hunk_spans(old: bytes, new: bytes) -> list[tuple[int, int, int, int]]:
    """(old_start, old_lines, new_start, new_lines) of a zero-context diff old → new."""
    patch = pygit2.Patch.create_from(old, new, context_lines=0, interhunk_lines=0)
    return [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]


def _before(span: tuple[int, int, int, int], line: int) -> bool:
    """Whether a hunk lies entirely above `line` of the new file."""
    _, _, new_start, new_lines = span
    return line >= new_start + new_lines if new_lines else line > new_start


def _old_lines(spans: list[tuple[int, int, int, int]], start: int, end: int) -> list[int]:
    """HEAD line numbers of the working-tree lines start..end that are committed."""
    out: list[int] = []
    offset = index = 0
    for line in range(start, end + 1):
        while index < len(spans) and _before(spans[index], line):
            offset += spans[index][3] - spans[index][1]
            index += 1
        if index < len(spans) and spans[index][3] and spans[index][2] <= line:
            continue  # inside a changed hunk: the line is not committed
        out.append(line - offset)
    return out


def _head_range(head: bytes, work: bytes | None, start: int, end: int) -> tuple[int, int] | None:
    """Editor (working-tree) lines start..end as a HEAD line range; None if none are committed."""
    end = min(end, start + BLAME_MAX_LINES)
    head = head.replace(b"\r\n", b"\n")
    if work is not None and work.replace(b"\r\n", b"\n") != head:
        lines = _old_lines(_hunk_spans(head, work.replace(b"\r\n", b"\n")), start, end)
        if not lines:
            return None
        start, end = min(lines), max(lines)
    end = min(end, _line_count(head))
    return (start, end) if start <= end else None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def blame_commits(root: Path, rel_path: str, start_line: int, end_line: int) -> list[BlameInfo]:
    """Commits that last touched lines start..end of a file (editor lines), newest first.

    Lines are those of the working tree: uncommitted edits are mapped back to HEAD first,
    so the answer still fits what the user sees. New or uncommitted lines have no commit.
    """
    opened = _open(root)
    head = _head_commit(opened[0]) if opened else None
    if opened is None or head is None:
        return []
    repo, scope = opened
    repo_path = scope.to_repo(rel_path)
    blob = _blob_at(head.tree, repo_path)
    if blob is None:
        return []
    work = _read(Path(repo.workdir) / repo_path)
    span = _head_range(blob.data, work, max(1, start_line), max(start_line, end_line))
    if span is None:
        return []
    try:
        blame = repo.blame(repo_path, newest_commit=head.id, min_line=span[0], max_line=span[1])
        ids = list(dict.fromkeys(hunk.final_commit_id for hunk in blame))
        commits = [repo[oid].peel(pygit2.Commit) for oid in ids if oid]
    except _GIT_ERRORS:
        return []
    commits.sort(key=lambda c: c.commit_time, reverse=True)
    return [_info(c) for c in commits]


# --------------------------------------------------------------------------- working tree


def uncommitted_paths(root: Path) -> set[str]:
    """Files modified, staged or new (not ignored) relative to HEAD; deleted files left out."""
    opened = _open(root)
    if opened is None:
        return set()
    repo, scope = opened
    try:
        status = repo.status(untracked_files="all", ignored=False)
    except _GIT_ERRORS:
        return set()
    paths: set[str] = set()
    for repo_path, flags in status.items():
        rel = scope.to_workspace(repo_path)
        if rel is not None and flags & _UNCOMMITTED and not flags & FileStatus.WT_DELETED:
            paths.add(rel)
    return paths


def _patch_lines(
    repo: pygit2.Repository, diff: pygit2.Diff, scope: _Scope, workdir: Path | None, paths: _Paths
) -> Iterator[str]:
    """Unified diff lines file by file, skipping files outside the workspace, excluded by
    discover's rules or too large."""
    for index, delta in enumerate(diff.deltas):
        path = scope.to_workspace(delta.new_file.path)
        if path is None:
            continue
        reason = _skip_reason(repo, delta, workdir, paths, path)
        if reason == IGNORED:
            continue
        if reason:
            yield f"diff --git a/{delta.old_file.path} b/{delta.new_file.path}"
            yield f"(not shown: {reason})"
            continue
        patch = diff[index]
        if patch is not None:
            yield from _text(patch.data).splitlines()


def _capped(lines: Iterable[str], max_lines: int, total_files: int) -> str:
    out = list(islice(lines, max_lines + 1))
    if len(out) > max_lines:
        out = out[:max_lines]
        out.append(f"... (diff capped at {max_lines} lines; {total_files} files changed in all)")
    return "\n".join(out)


def working_tree_diff(root: Path, max_lines: int = 400, index: IndexSettings | None = None) -> str:
    """Unified diff of HEAD against the working tree, new untracked files included; capped."""
    opened = _open(root)
    if opened is None:
        return "not a git repository"
    repo, scope = opened
    head = _head_commit(repo)
    try:
        if head is None:
            diff = repo.index.diff_to_workdir(flags=_WORKDIR_FLAGS)
        else:
            diff = head.tree.diff_to_workdir(flags=_WORKDIR_FLAGS)
        lines = _patch_lines(repo, diff, scope, Path(repo.workdir), _Paths.for_root(root, index))
        text = redact_text(_capped(lines, max(1, max_lines), len(diff)))
    except _GIT_ERRORS as exc:
        return f"working-tree diff failed: {exc}"
    prefix = "(no commits yet: staged files are not shown)\n" if head is None else ""
    return prefix + (text or "no uncommitted changes")


def _resolve(repo: pygit2.Repository, rev: str) -> pygit2.Commit | None:
    try:
        return repo.revparse_single(rev).peel(pygit2.Commit)
    except (*_GIT_ERRORS, pygit2.InvalidSpecError):
        return None


def _commit_header(commit: pygit2.Commit) -> str:
    info = _info(commit)
    message = "\n".join(f"    {line}".rstrip() for line in _message(commit).strip().splitlines())
    return (
        f"commit {info.sha}\nAuthor: {info.author} <{info.email}>\nDate: {info.date}\n\n{message}\n"
    )


def commit_diff(
    root: Path, rev: str = "HEAD", max_lines: int = 400, index: IndexSettings | None = None
) -> str:
    """Message and unified diff (against the first parent) of one commit; capped."""
    opened = _open(root)
    if opened is None:
        return "not a git repository"
    repo, scope = opened
    commit = _resolve(repo, rev)
    if commit is None:
        return f"unknown revision {rev!r}"
    header = _commit_header(commit)
    if str(commit.id) in _shallow_boundary(repo):
        return header + "\n(parent not in this shallow clone: diff not available)"
    diff = _commit_diff(commit, context_lines=3)
    lines = _patch_lines(repo, diff, scope, None, _Paths.for_root(root, index))
    return header + "\n" + redact_text(_capped(lines, max(1, max_lines), len(diff)))


# --------------------------------------------------------------------------- recent commits


def _entry_id(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        return tree[path].id
    except _GIT_ERRORS:
        return None


def _touches(commit: pygit2.Commit, path: str) -> bool:
    """Whether the commit changed `path` (file or folder) relative to its first parent."""
    parents = _parents(commit)
    before = _entry_id(parents[0].tree, path) if parents else None
    return _entry_id(commit.tree, path) != before


def recent_commits(root: Path, n: int = 10, path: str | None = None) -> list[BlameInfo]:
    """The newest `n` commits reachable from HEAD, optionally only those touching `path`."""
    opened = _open(root)
    head = _head_commit(opened[0]) if opened else None
    if opened is None or head is None or n <= 0:
        return []
    repo, scope = opened
    target = scope.to_repo(path) if path else scope.prefix
    out: list[BlameInfo] = []
    try:
        for commit in islice(repo.walk(head.id, SortMode.TIME), PATH_WALK_LIMIT):
            if not target or _touches(commit, target):
                out.append(_info(commit))
                if len(out) >= n:
                    break
    except _GIT_ERRORS:  # a missing or corrupt object ends the walk: keep what was found
        pass
    return out


# --------------------------------------------------------------------------- routing

#: Prototype questions, written as minimal pairs (same topic, history vs code intent) so that
#: the difference of the two class centroids points along "intent" and topic words cancel out.
#: Their topics and wording are kept apart from tests/data/history_questions.jsonl.
HISTORY_PROTOTYPES = (
    "who wrote the config loader?",
    "when did the auth middleware change?",
    "why was the pagination helper removed?",
    "what changed in the csv importer recently?",
    "which commit broke the websocket handler?",
    "show the history of the email templates",
    "who last modified the thumbnail generator?",
    "when was the search ranking tweak added?",
    "why did we rewrite the billing invoices code?",
    "what did the user profile page look like before the redesign?",
    "list the recent commits that touched the database pool",
    "who introduced the plugin loader?",
    "when were the translation strings last updated?",
    "why was the sitemap builder disabled?",
    "what did Alice change in the notification service?",
    "which change made the backup job slow?",
    "who is the author of the metrics collector?",
    "what went into the latest commit?",
    "what have I modified today?",
    "show my uncommitted changes",
    "what is new since the last release?",
    "summarise yesterday's commits",
    "what was the previous commit about?",
    "why was this line changed?",
    "git blame for these lines",
    "has the session store been modified this week?",
    "when did we drop support for python 3.8?",
    "what was reverted in the last merge?",
)
CODE_PROTOTYPES = (
    "how does the config loader work?",
    "where is the auth middleware defined?",
    "what does the pagination helper return?",
    "how do I configure the csv importer?",
    "what calls the websocket handler?",
    "how are the email templates rendered?",
    "how can I extend the thumbnail generator?",
    "explain the search ranking",
    "how are billing invoices computed?",
    "which component renders the user profile page?",
    "is the database pool thread-safe?",
    "how do I write a new plugin for the plugin loader?",
    "where are the translation strings loaded from?",
    "how does the sitemap builder discover pages?",
    "what does the notification service send?",
    "how to run the backup job manually",
    "what does the metrics collector measure?",
    "how does the commit graph widget lay out branches?",
    "where is the merge conflict resolver implemented?",
    "what does the revert method of the undo stack do?",
    "how is the author avatar fetched?",
    "how does the changeset serializer work?",
    "where does the app read its git revision for the version string?",
    "how does the history sidebar paginate?",
    "what does commit_transaction do?",
    "how do I change the timeout setting?",
    "how does the file change watcher debounce events?",
    "what is the difference between the two diff modes of the viewer?",
)
#: Phrasings that are almost always about git history; the embedding decides the rest.
HISTORY_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bwho (wrote|added|changed|introduced|removed|deleted|touched|modified|authored|last)\b",
        r"\bwhen (did|was|were|has|have)\b.*"
        r"\b(chang|add|introduc|remov|delet|modif|fix|writ|renam|break|broke)",
        r"\bwhy (was|were|did|has|have)\b.*"
        r"\b(remov|chang|add|delet|revert|renam|introduc|disabl|increas|decreas|switch)",
        r"\b(last|latest|previous|recent|most recent) (\w+ )?(commits?|changes)\b",
        r"\bgit (log|history|blame)\b|\bblame\b",
        r"\buncommitted\b|\bnot (yet )?committed\b",
        r"\bwhat did (i|we) (just )?change\b",
        r"\bcommit (history|that|which)\b|\bwhich commit\b",
    )
)


def keyword_prior(question: str) -> float:
    """1.0 when a strong history phrasing matches, else 0.0 (also the keyword-only baseline)."""
    return 1.0 if any(p.search(question) for p in HISTORY_PATTERNS) else 0.0


class HistoryRouter:
    """Decides whether a question is about history, by embedding similarity to prototype
    questions (plus a small keyword prior).

    score = (mean similarity to history prototypes − mean similarity to code prototypes),
    scaled to the unit centroid-difference direction and centred between the two classes,
    + prior_weight × keyword prior. A nearest-centroid rule rather than nearest neighbours:
    with paired prototypes a neighbour vote follows the topic ("retry logic") instead of
    the intent ("who wrote"). Prototypes are embedded once, on first use.
    """

    def __init__(
        self,
        embed: Callable[[list[str]], np.ndarray],
        *,
        prior_weight: float = 0.1,
        threshold: float = 0.0,
    ) -> None:
        self._embed = embed
        self.prior_weight = prior_weight
        self.threshold = threshold
        self._axis: tuple[np.ndarray, float] | None = None

    def _direction(self) -> tuple[np.ndarray, float]:
        """(unit history-minus-code direction, midpoint of the two classes along it)."""
        if self._axis is None:
            vectors = np.asarray(self._embed([*HISTORY_PROTOTYPES, *CODE_PROTOTYPES]))
            history, code = np.split(vectors, [len(HISTORY_PROTOTYPES)])
            axis = history.mean(axis=0) - code.mean(axis=0)
            axis = axis / np.linalg.norm(axis)
            middle = float(((history @ axis).mean() + (code @ axis).mean()) / 2)
            self._axis = (axis, middle)
        return self._axis

    def score(self, question: str) -> float:
        """Higher means more likely about history; above `threshold` routes to history."""
        axis, middle = self._direction()
        query = np.asarray(self._embed([question]))[0]
        return float(query @ axis) - middle + self.prior_weight * keyword_prior(question)

    def is_history_question(self, question: str) -> bool:
        """Whether to add commits, blame and diffs to the context of this question."""
        return self.score(question) > self.threshold
