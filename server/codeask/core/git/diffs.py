"""Unified diffs of one commit or of the working tree, bound by discovery's path rules.

A tracked `.env` that the walk skips must not come back through a diff: the ignore rules,
secret-file names and size caps of `discover` apply here too (and to the hunk chunks).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from codeask.config import IndexSettings
from codeask.core.git.commits import commit_info, decode, message, parents
from codeask.core.git.repo import (
    Scope,
    git_errors,
    head_commit,
    open_scoped,
    resolve,
    shallow_boundary,
)
from codeask.core.source.discover import IGNORED, IgnoreRules, path_policy
from codeask.core.source.names import display_path
from codeask.core.source.secrets import redact_text

if TYPE_CHECKING:  # pygit2 is imported by the functions that use it (core/git/repo.py says why)
    import pygit2
    import pygit2.enums

#: Blobs above this size are not diffed at all (generated files, data dumps).
MAX_BLOB_BYTES = 2_000_000
#: Rename detection is quadratic-ish; skip it on commits with more files than this.
RENAME_DETECT_MAX_DELTAS = 1_000
#: Unchanged lines between two changes that still merge them into one hunk.
INTERHUNK_LINES = 3


def _workdir_flags() -> pygit2.enums.DiffOption:
    """Untracked files with their content, submodules left out."""
    from pygit2.enums import DiffOption

    return (
        DiffOption.INCLUDE_UNTRACKED
        | DiffOption.RECURSE_UNTRACKED_DIRS
        | DiffOption.SHOW_UNTRACKED_CONTENT
        | DiffOption.IGNORE_SUBMODULES
    )


@dataclass(frozen=True)
class PathRules:
    """discover's rules applied to paths in history: a tracked `.env` that the walk skips must
    not come back through a diff. Ignored paths vanish; policy-skipped ones are only named."""

    rules: IgnoreRules
    settings: IndexSettings

    @classmethod
    def for_root(cls, root: Path, settings: IndexSettings | None) -> PathRules:
        settings = settings or IndexSettings()
        return cls(IgnoreRules.for_root(root, settings), settings)

    def reason(self, rel: str) -> str | None:
        """`IGNORED`, why discover() would skip the file, or None to read it."""
        return path_policy(self.rules, rel, self.settings)

    @property
    def max_bytes(self) -> int:
        """The smaller of the history cap and the user's file size cap."""
        return min(MAX_BLOB_BYTES, self.settings.max_file_bytes)


def parent_diff(commit: pygit2.Commit, context_lines: int = 0) -> pygit2.Diff:
    """Diff against the first parent (merges too); a root commit against the empty tree."""
    first = parents(commit)
    if first:
        diff = first[0].tree.diff_to_tree(
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


def skip_reason(
    repo: pygit2.Repository,
    delta: pygit2.DiffDelta,
    workdir: Path | None,
    paths: PathRules,
    rel: str,
) -> str:
    """Why a file's diff is not read: discover's rules (on the old and new name), submodule,
    too large, missing object; '' to read it."""
    from pygit2.enums import DeltaStatus, FileMode

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
    except git_errors():
        return "object not available"
    if max(sizes) > paths.max_bytes:
        return f"too large: {max(sizes):,} bytes"
    return ""


def paths_rel(old: str, new: str, rel: str) -> str:
    """The old name of a renamed file, in the same (workspace-relative) form as `rel`."""
    return rel[: len(rel) - len(new)] + old if rel.endswith(new) else old


def _patch_lines(
    repo: pygit2.Repository, diff: pygit2.Diff, scope: Scope, workdir: Path | None, paths: PathRules
) -> Iterator[str]:
    """Unified diff lines file by file, skipping files outside the workspace, excluded by
    discover's rules or too large."""
    for index, delta in enumerate(diff.deltas):
        path = scope.to_workspace(delta.new_file.path)
        if path is None:
            continue
        reason = skip_reason(repo, delta, workdir, paths, path)
        if reason == IGNORED:
            continue
        if reason:
            old, new = display_path(delta.old_file.path), display_path(delta.new_file.path)
            yield f"diff --git a/{old} b/{new}"
            yield f"(not shown: {reason})"
            continue
        patch = diff[index]
        if patch is not None:
            yield from decode(patch.data).splitlines()


def _capped(lines: Iterable[str], max_lines: int, total_files: int) -> str:
    out = list(islice(lines, max_lines + 1))
    if len(out) > max_lines:
        out = out[:max_lines]
        out.append(f"... (diff capped at {max_lines} lines; {total_files} files changed in all)")
    return "\n".join(out)


def working_tree_diff(root: Path, max_lines: int = 400, index: IndexSettings | None = None) -> str:
    """Unified diff of HEAD against the working tree, new untracked files included; capped."""
    opened = open_scoped(root)
    if opened is None:
        return "not a git repository"
    repo, scope = opened
    head = head_commit(repo)
    try:
        if head is None:
            diff = repo.index.diff_to_workdir(flags=_workdir_flags())
        else:
            diff = head.tree.diff_to_workdir(flags=_workdir_flags())
        rules = PathRules.for_root(root, index)
        lines = _patch_lines(repo, diff, scope, Path(repo.workdir), rules)
        text = redact_text(_capped(lines, max(1, max_lines), len(diff)))
    except git_errors() as exc:
        return f"working-tree diff failed: {exc}"
    prefix = "(no commits yet: staged files are not shown)\n" if head is None else ""
    return prefix + (text or "no uncommitted changes")


def _commit_header(commit: pygit2.Commit) -> str:
    info = commit_info(commit)
    body = "\n".join(f"    {line}".rstrip() for line in message(commit).strip().splitlines())
    return f"commit {info.sha}\nAuthor: {info.author} <{info.email}>\nDate: {info.date}\n\n{body}\n"


def commit_diff(
    root: Path, rev: str = "HEAD", max_lines: int = 400, index: IndexSettings | None = None
) -> str:
    """Message and unified diff (against the first parent) of one commit; capped."""
    opened = open_scoped(root)
    if opened is None:
        return "not a git repository"
    repo, scope = opened
    commit = resolve(repo, rev)
    if commit is None:
        return f"unknown revision {rev!r}"
    header = _commit_header(commit)
    if str(commit.id) in shallow_boundary(repo):
        return header + "\n(parent not in this shallow clone: diff not available)"
    diff = parent_diff(commit, context_lines=3)
    lines = _patch_lines(repo, diff, scope, None, PathRules.for_root(root, index))
    return header + "\n" + redact_text(_capped(lines, max(1, max_lines), len(diff)))
