"""The commits behind the lines the editor shows (hover and "why is this here?").

The editor's lines are those of the working tree: uncommitted edits are mapped back to HEAD
before blaming, so the answer fits what the user sees; new or uncommitted lines have none.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from codeask.core.git.commits import BlameInfo, commit_info
from codeask.core.git.repo import GIT_ERRORS, head_commit, open_scoped

#: Editor line ranges longer than this are clipped before mapping them to HEAD for blame.
BLAME_MAX_LINES = 20_000

#: (old_start, old_lines, new_start, new_lines) of one hunk.
_Span = tuple[int, int, int, int]


def _blob_at(tree: pygit2.Tree, path: str) -> pygit2.Blob | None:
    try:
        obj = tree[path]
    except GIT_ERRORS:
        return None
    return obj if isinstance(obj, pygit2.Blob) else None


def _line_count(data: bytes) -> int:
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _hunk_spans(old: bytes, new: bytes) -> list[_Span]:
    """(old_start, old_lines, new_start, new_lines) of a zero-context diff old → new."""
    patch = pygit2.Patch.create_from(old, new, context_lines=0, interhunk_lines=0)
    return [(h.old_start, h.old_lines, h.new_start, h.new_lines) for h in patch.hunks]


def _before(span: _Span, line: int) -> bool:
    """Whether a hunk lies entirely above `line` of the new file."""
    _, _, new_start, new_lines = span
    return line >= new_start + new_lines if new_lines else line > new_start


def _old_lines(spans: list[_Span], start: int, end: int) -> list[int]:
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
    opened = open_scoped(root)
    head = head_commit(opened[0]) if opened else None
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
    except GIT_ERRORS:
        return []
    commits.sort(key=lambda c: c.commit_time, reverse=True)
    return [commit_info(c) for c in commits]
