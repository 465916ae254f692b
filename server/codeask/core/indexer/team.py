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
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from codeask.core.overlay import LexicalMerge, OverlayReader, overlay_paths
from codeask.core.records import Chunk, FileRecord
from codeask.core.storage import Storage, Tier

if TYPE_CHECKING:
    from codeask.config import Settings
    from codeask.core.pg.storage import PublishedReader

log = logging.getLogger("codeask.core.indexer")

#: How far back from HEAD a published revision is looked for (first parents).
MAX_ANCESTORS = 200


@dataclass
class TeamBase:
    """The published revision a folder reads, and the paths its local overlay must hold."""

    reader: PublishedReader | None = None
    sha: str = ""
    #: Paths whose published content must not be shown (they differ, or were deleted).
    shadowed: set[str] = field(default_factory=set)
    reason: str = ""
    """Why there is no base ('' when there is one)."""


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


def open_base(root: Path, settings: Settings) -> TeamBase:
    """The published revision nearest HEAD for `embed.model`, or why there is none."""
    from codeask.core.pg.connect import PgError, connect, dsn_from_env
    from codeask.core.pg.publish import repository_identity
    from codeask.core.pg.reader import nearest_revision
    from codeask.core.pg.storage import PublishedReader

    shas = ancestors(root)
    if not shas:
        return TeamBase(reason="not a git repository with a commit: indexing locally")
    name = repository_identity(root)
    try:
        dsn = dsn_from_env(settings.index.dsn_env)
        with connect(dsn) as conn:
            found = nearest_revision(conn, name, shas, settings.embed.model)
        if found is None:
            return TeamBase(reason=f"nothing of {name} is published near HEAD: indexing locally")
        reader = PublishedReader(dsn, found.id, model=settings.embed.model)
        shadowed = overlay_paths(root, found.sha)
    except (PgError, ValueError, ImportError) as exc:
        return TeamBase(reason=f"team index unusable ({exc}): indexing locally")
    except Exception as exc:  # a driver error (no published index yet, a dropped link, ...)
        from codeask.core.pg.connect import redact

        why = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        return TeamBase(reason=f"team index unusable ({why}): indexing locally")
    behind = shas.index(found.sha)
    log.info(
        "%s: reading the team index of %s@%s (%d commit(s) behind HEAD); %d file(s) differ",
        root,
        name,
        found.sha[:12],
        behind,
        len(shadowed),
    )
    return TeamBase(reader, found.sha, shadowed)


def refresh_shadowed(root: Path, team: TeamBase) -> None:
    """Re-ask git which files differ from the base (a full pass: files may have changed
    outside the editor, e.g. a checkout); an unknowable answer keeps the last one."""
    try:
        team.shadowed = overlay_paths(root, team.sha)
    except ValueError as exc:
        log.warning("%s: cannot tell which files differ from %s: %s", root, team.sha[:12], exc)


class TeamStorage(OverlayReader):
    """Reads: the published base under the local overlay. Writes: the local overlay's (the
    indexer decides what is shadowed: `refresh_shadowed` on a full pass, `update_paths` for
    the files it is told about)."""

    def __init__(self, base: TeamBase, local: Storage) -> None:
        assert base.reader is not None
        super().__init__(base.reader, local, lambda: base.shadowed, lexical_merge="rank")
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
        static_rows: np.ndarray | None = None,
    ) -> list[int]:
        return self.local.replace_file(record, chunks, static_rows)

    def touch_file(self, path: str, size: int, mtime_ns: int) -> None:
        self.local.touch_file(path, size, mtime_ns)

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
