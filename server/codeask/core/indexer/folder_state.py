"""`FolderState`: what the indexer's job modules (files, full_pass, updates, history, status,
team_retry) may use of a folder index, as a Protocol that `folder.FolderIndex` satisfies.

The jobs are handed the folder index they work on; naming `FolderIndex` for that made every
job import folder.py, which imports the jobs: a ten-module import circle (type-only, but a job
could not be read, moved or tested without the whole façade). The jobs import this Protocol
instead, and mypy checks FolderIndex against it wherever FolderIndex passes itself to a job.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from codeask.config import Settings
    from codeask.core.indexer.vectors import VectorTiers
    from codeask.core.source.tree_watch import TreeWatch
    from codeask.core.storage.protocol import Storage
    from codeask.core.storage.team import TeamBase


class FolderState(Protocol):
    """The state a folder index shares with its jobs (FolderIndex owns it; see its fields)."""

    #: Read by the jobs; a reader's reload or a test may replace them between calls.
    @property
    def root(self) -> Path: ...
    @property
    def folder(self) -> Path: ...
    @property
    def settings(self) -> Settings: ...
    @property
    def local(self) -> Storage: ...
    @property
    def embedding(self) -> VectorTiers: ...
    @property
    def run_lock(self) -> threading.Lock: ...
    @property
    def embedder_loaded(self) -> bool: ...
    @property
    def watch(self) -> TreeWatch | None: ...

    #: Written by the jobs: the run state, the files differing from HEAD, and (team_retry, when
    #: the team database comes back) the base and the storage readers see.
    state: str
    uncommitted: frozenset[str]
    ignore_note: str | None
    team: TeamBase
    storage: Storage

    def checkpoint(self) -> None:
        """Save a consistent snapshot if anything changed (never by a reader)."""
        ...

    def embedded_counts(self) -> tuple[int, int]:
        """(chunks with a vector, all chunks)."""
        ...
