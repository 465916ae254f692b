"""`index.backend = "postgres"`: read the team's published revision, index only what differs.

At open, the published revision nearest to HEAD (HEAD first, then its first-parent ancestors)
becomes the base; `overlay.overlay_paths` names the files that differ from it (later commits,
edits, new and deleted files). The local index then holds only those files: on a fresh clone of
a published commit that is nothing, so dense search works as soon as the base is open, with no
chunk embedded locally. Readers see `TeamStorage`: the overlay reader over both (the overlay
wins for its files, deleted files never appear); the indexer keeps writing the local part.

Whenever the base cannot be used (no DSN, the database unreachable, nothing published near HEAD,
another embedding model, no git), the folder is indexed locally in full, as with the local
backend, and `TeamBase.reason` says why (logged once; `codeask health` shows the database).
`TeamBase.kind` sorts the reasons for status lines; only "unreachable" is worth trying again
(team_retry.py), the others need someone to publish or configure something.

A query to the base that fails (the connection lost mid-query, a statement timeout) raises to
its caller as before (a clear `PgUnavailable`; the reader reconnects on the next call), and
`TeamBase.query_error` keeps why until a later query succeeds, for the status line.

The base is opened by the storage factory (core/storage/factory.py: `open_base`), the one place
besides health that imports the team backend `core.storage.postgres`; this module names it by a
Protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, cast

import numpy as np

from codeask.core.records import Chunk, FileRecord
from codeask.core.storage.file_table import StatedT
from codeask.core.storage.overlay import LexicalMerge, OverlayReader, overlay_paths
from codeask.core.storage.protocol import IndexReader, Storage, Tier
from codeask.core.storage.quantized_rows import QuantizedRows

log = logging.getLogger("codeask.core.indexer")

#: How far back from HEAD a published revision is looked for (first parents).
MAX_ANCESTORS = 200

#: Why a folder has (or has not) a base: "base" when it has one; "off" when it does not look
#: for one (the local backend, a publisher); "unreachable" (the database did not answer: retried);
#: "unpublished" (nothing of this repository near HEAD for `embed.model`); "unusable" (no git,
#: no DSN, a refused login, psycopg missing, ...).
BaseKind = Literal["base", "off", "unreachable", "unpublished", "unusable"]


class Retry(Protocol):
    """When to try an unreachable database again (`indexer/backoff.BaseRetry` is one)."""

    delay: float

    def due(self) -> bool:
        """Whether the next attempt may run now."""
        ...

    def seconds_left(self) -> float:
        """Seconds until the next attempt (0 when due)."""
        ...

    def failed(self) -> None:
        """Another attempt failed: wait longer."""
        ...


class PublishedBase(IndexReader, Protocol):
    """The team's published revision as the team storage reads it
    (`storage/postgres/published.PublishedReader` is one; named by this Protocol so the indexer does
    not import the team backend)."""

    @property
    def lexical_scale(self) -> Literal["bm25", "ts_rank"]:
        """How its lexical scores are scaled: its in-memory BM25 once built, else ts_rank."""
        ...

    def warm_up(self) -> None:
        """Build what the first queries would otherwise wait for."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


@dataclass
class TeamBase:
    """The published revision a folder reads, and the paths its local overlay must hold."""

    reader: PublishedBase | None = None
    sha: str = ""
    #: Paths whose published content must not be shown (they differ, or were deleted).
    shadowed: set[str] = field(default_factory=set)
    reason: str = ""
    """Why there is no base ('' when there is one)."""
    kind: BaseKind = "off"
    #: The name the base is published under (this folder's own, `naming.repository_name`, when
    #: nothing is found) and how far HEAD is ahead.
    repository: str = ""
    behind: int = 0
    #: Why the last query to the base failed; '' once one succeeded (or none failed).
    query_error: str = ""
    #: When to try an unreachable database again (backoff.py, applied by team_retry.py).
    retry: Retry | None = None
    #: An error of the base as `query_error` shows it: the storage factory (core/storage/factory.py)
    #: gives the database's own, which redacts passwords.
    describe: Callable[[BaseException], str] = field(default=lambda exc: type(exc).__name__)


def ancestors(root: Path, limit: int = MAX_ANCESTORS) -> list[str]:
    """HEAD and its first-parent ancestors, newest first ([] without a repository or HEAD)."""
    import pygit2

    try:
        repo = pygit2.Repository(pygit2.discover_repository(str(root)) or str(root))
        commit = repo.head.peel(pygit2.Commit)
    except (pygit2.GitError, KeyError, ValueError, TypeError):
        return []
    shas: list[str] = []
    current: pygit2.Commit | None = commit
    while current is not None and len(shas) < limit:
        shas.append(str(current.id))
        current = current.parents[0] if current.parents else None
    return shas


def refresh_shadowed(root: Path, team: TeamBase) -> None:
    """Re-ask git which files differ from the base (a full pass: files may have changed
    outside the editor, e.g. a checkout); an unknowable answer keeps the last one."""
    try:
        team.shadowed = overlay_paths(root, team.sha)
    except ValueError as exc:
        log.warning("%s: cannot tell which files differ from %s: %s", root, team.sha[:12], exc)


#: The base's methods that query the database every time (the others answer from what the
#: reader loaded at open, or from its cache): a success of one of these clears `query_error`.
_QUERIES = frozenset(
    {"chunks", "chunks_of", "all_chunks", "dense_top_k", "lexical_top_k", "lexical_files", "vector"}
)


class _Watched:
    """The base reader, noting in `team.query_error` whether its last query failed (the
    status line's "last team query failed"); every call and error passes through unchanged."""

    def __init__(self, reader: IndexReader, team: TeamBase) -> None:
        self._reader = reader
        self._team = team

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._reader, name)
        if not callable(attr):
            return attr
        team = self._team
        clears = name in _QUERIES

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                result = attr(*args, **kwargs)
            except Exception as exc:
                team.query_error = team.describe(exc)
                raise
            if clears and team.query_error:
                log.info("team index answering again (after: %s)", team.query_error)
                team.query_error = ""
            return result

        self.__dict__[name] = call  # built once: later calls skip __getattr__
        return call


class TeamStorage(OverlayReader):
    """Reads: the published base under the local overlay. Writes: the local overlay's (the
    indexer decides what is shadowed: `refresh_shadowed` on a full pass, `update_paths` for
    the files it is told about)."""

    def __init__(self, base: TeamBase, local: Storage) -> None:
        assert base.reader is not None
        watched = cast(IndexReader, _Watched(base.reader, base))
        super().__init__(watched, local, lambda: base.shadowed, lexical_merge="rank")
        self.local = local
        self.team = base
        self.reader = base.reader

    def merge_mode(self) -> LexicalMerge:
        """By raw score once the base ranks with its in-memory BM25 (the overlay's scale, the
        best merge measured: docs/storage.md); by rank while PostgreSQL's ts_rank answers."""
        return "score" if self.reader.lexical_scale == "bm25" else "rank"

    def new_ids(self, count: int) -> list[int]:
        return self.local.new_ids(count)

    def replace_file(
        self,
        record: FileRecord,
        chunks: Sequence[Chunk],
        static_rows: np.ndarray | QuantizedRows | None = None,
        columns: Sequence[tuple[str, str, str]] | None = None,
    ) -> list[int]:
        return self.local.replace_file(record, chunks, static_rows, columns)

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        self.local.touch_file(path, size, mtime_ns)

    def changed_files(self, files: Sequence[StatedT]) -> list[StatedT]:
        return self.local.changed_files(files)

    def remove_file(self, path: str) -> list[int]:
        return self.local.remove_file(path)

    def sync_history(
        self, removed: Iterable[str], added: dict[str, list[Chunk]], head: str
    ) -> None:
        self.local.sync_history(removed, added, head)

    def add_vectors(self, tier: Tier, ids: list[int], rows: np.ndarray) -> None:
        self.local.add_vectors(tier, ids, rows)

    def pending_ids(self, tier: Tier) -> list[int]:
        return self.local.pending_ids(tier)

    def has_vector(self, tier: Tier, chunk_id: int) -> bool:
        return self.local.has_vector(tier, chunk_id)

    def release_checks(self) -> None:
        self.local.release_checks()

    def size_model_tier(self, dim: int) -> bool:
        return self.local.size_model_tier(dim)

    def clear(self) -> None:
        self.local.clear()

    def save(self) -> None:
        self.local.save()

    def close(self) -> None:
        self.local.close()
        if self.team.reader is not None:
            self.team.reader.close()

    def warm_up(self) -> None:
        self.local.warm_up()
        self.reader.warm_up()
