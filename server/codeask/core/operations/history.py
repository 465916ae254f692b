"""History: commits and diff hunks matching a query, and who last changed a line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from codeask.core.indexer import FolderIndex
from codeask.core.operations.search import search_now
from codeask.core.search.retrieve import Filters, Hit

if TYPE_CHECKING:
    from codeask.core.git.commits import BlameInfo


def history(
    folders: Sequence[FolderIndex],
    query: str,
    *,
    k: int | None = None,
    filters: Filters | None = None,
    minilm: bool = True,
) -> list[Hit]:
    """Commits and diff hunks matching `query` (`codeask search --history`'s ranking)."""
    scoped = replace(filters or Filters(), scope="history")
    return search_now(folders, query, k=k, filters=scoped, minilm=minilm).result.hits


def blame(folder: FolderIndex, rel: str, line: int) -> list[BlameInfo]:
    """The commits that last touched line `line` of `rel` (working-tree lines mapped to HEAD;
    an uncommitted line has none), newest first."""
    from codeask.core.git.blame import blame_commits  # pygit2: on the first blame only

    return blame_commits(folder.root, rel, line, line)


def blame_lines(root: Path, rel: str, start: int, end: int) -> list[BlameInfo]:
    """The commits that last touched lines `start`-`end` of `rel` under `root`, newest first
    (hover's last commit of a chunk)."""
    from codeask.core.git.blame import blame_commits

    return blame_commits(root, rel, start, end)
