"""What every indexing run shares: how it is stopped, what it reports while it works, and what
it did. One set of types, so the CLI's progress line and the editor's `$/progress` read alike.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # discover (pathspec, file walking) is for writers only
    from codeask.core.source.discover import SkippedFile


class Cancelled(Exception):
    """The caller asked the run to stop; what was done so far is kept."""


class CancelToken:
    """A flag the editor (or Ctrl-C) sets; checked between files and batches."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the run to stop at the next check."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether cancel() was called."""
        return self._event.is_set()

    def check(self) -> None:
        """Raise Cancelled when asked to stop."""
        if self._event.is_set():
            raise Cancelled()


@dataclass
class Progress:
    """One progress event: what phase, and how far.

    Phases in order: `scan` (files_done = files found so far; no total yet), `chunk` (files
    done of files_total, known up front), `static` (static-tier vectors: chunks_embedded of
    chunks_total, seconds; again after history), `history` (new commits diffed: commits_done of
    commits_total), `embed` (chunks_embedded of chunks_total, which counts the chunks embedded
    by earlier runs too), `done`.
    """

    phase: str
    files_done: int = 0
    files_total: int = 0
    chunks_embedded: int = 0
    chunks_total: int = 0
    message: str = ""
    commits_done: int = 0
    commits_total: int = 0

    @property
    def percent(self) -> int:
        """Overall percent: chunking is the first 30%, embedding the rest."""
        chunked = self.files_done / self.files_total if self.files_total else 1.0
        embedded = self.chunks_embedded / self.chunks_total if self.chunks_total else 1.0
        if self.phase == "static":  # runs after chunking, before any MiniLM vector
            return 30
        if self.phase in ("scan", "chunk"):
            return int(30 * chunked)
        return min(100, 30 + int(70 * embedded))


ProgressFn = Callable[[Progress], None]


def no_progress(_event: Progress) -> None:
    """The progress callback of a caller that did not ask for one."""


@dataclass
class IndexReport:
    """What one indexing run did."""

    files_seen: int = 0
    files_checked: int = 0
    """Files whose stat the pass looked at: every file found by a walk, or only those a file
    watch saw change."""
    watched: list[str] | None = None
    """The files a pass re-checked because a file watch named them (None: the pass walked)."""
    files_indexed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_embedded: int = 0
    vectors_computed: int = 0
    static_computed: int = 0
    commits_added: int = 0
    commits_removed: int = 0
    seconds_lexical: float = 0.0
    seconds_total: float = 0.0
    cancelled: bool = False
