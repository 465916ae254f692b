"""One commit's diff as 'hunk' chunks, within per-commit work caps.

A vendored or generated commit must never stall indexing nor flood the embedder: files
diffed, diff lines kept and hunks per commit (and per file) are capped, and what was left
out is recorded so that the sync can say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codeask.config import HistorySettings
from codeask.core.git.commits import SHORT_SHA, BlameInfo, decode, info_meta
from codeask.core.git.diffs import PathRules, skip_reason
from codeask.core.git.repo import Scope
from codeask.core.records import Chunk
from codeask.core.source.discover import IGNORED
from codeask.core.source.names import display_path
from codeask.core.source.secrets import redact_text

if TYPE_CHECKING:  # pygit2 is imported by the functions that use it (core/git/repo.py says why)
    import pygit2

#: Per-commit work caps: files diffed, diff lines kept in hunk chunks, hunk chunks; hunks per
#: file.
MAX_FILES = 50
MAX_DIFF_LINES = 20_000
MAX_HUNKS = 200
MAX_HUNKS_PER_FILE = 20


def _label(delta: pygit2.DiffDelta, path: str) -> str:
    """The file as named in a hunk's text, with renames, additions and deletions spelled out.
    Names are escaped (`display_path`): a newline or a bidi override in a file name must not
    split or reorder the hunk's lines in a preview or a prompt."""
    from pygit2.enums import DeltaStatus

    shown = display_path(path)
    if delta.status == DeltaStatus.RENAMED:
        return f"{shown} (renamed from {display_path(delta.old_file.path)})"
    if delta.status == DeltaStatus.ADDED:
        return f"{shown} (new file)"
    if delta.status == DeltaStatus.DELETED:
        return f"{shown} (deleted)"
    return shown


def _hunk_body(hunk: pygit2.DiffHunk, limit: int) -> tuple[str, int]:
    """The hunk's +/-/context lines cut to `limit` (saying how many were left out), and how
    many were kept."""
    lines = [line for line in hunk.lines if line.origin in "+- "]
    kept = [
        f"{line.origin}{decode(line.raw_content).rstrip(chr(13) + chr(10))}"
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
class Budget:
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
class CommitWork:
    """One commit being turned into chunks."""

    info: BlameInfo
    settings: HistorySettings
    budget: Budget = field(default_factory=Budget)
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
            meta={**info_meta(self.info), "hunk_header": header},
        )

    def notes(self, total_files: int) -> list[str]:
        """Log lines for what the caps and the path rules left out of this commit."""
        short = self.info.sha[:SHORT_SHA]
        notes = []
        if self.capped:
            notes.append(
                f"{short}: large commit ({total_files} files); diffed {self.budget.files} files, "
                f"{self.budget.lines:,} lines, {self.budget.hunks} hunks, rest skipped"
            )
        if self.capped_files:
            names = ", ".join(self.capped_files[:5])
            notes.append(f"{short}: only the first {MAX_HUNKS_PER_FILE} hunks of {names}")
        if self.skipped:
            names = ", ".join(self.skipped[:5])
            more = f" (+{len(self.skipped) - 5} more)" if len(self.skipped) > 5 else ""
            notes.append(f"{short}: not diffed: {names}{more}")
        return notes


def collect_hunks(
    repo: pygit2.Repository, diff: pygit2.Diff, scope: Scope, work: CommitWork, paths: PathRules
) -> None:
    """Walk the diff's files in order, reading patches until the budget runs out."""
    for index, delta in enumerate(diff.deltas):
        path = scope.to_workspace(delta.new_file.path)
        if path is None:
            continue
        if work.budget.exhausted():
            work.capped = True
            return
        reason = skip_reason(repo, delta, None, paths, path)
        patch = None if reason else diff[index]
        if patch is None or patch.delta.is_binary:
            if reason != IGNORED:
                work.skipped.append(f"{path} ({reason or 'binary'})")
            continue
        work.add_patch(patch, path)
