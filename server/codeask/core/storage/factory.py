"""The storage factory: the one place that turns `index.backend` into what a folder index
reads and writes, and into the embedding cache it embeds through (VectorCode's
`get_database_connector` is the shape). The indexer asks here and builds no part itself.

- `local`: `LocalStorage` (core/storage/local.py), the index on this machine.
- `postgres`: the team's published revision nearest HEAD (`core/storage/postgres/`, opened by
  `open_base`) under the local index of the files that differ (`storage.team.TeamStorage`); the
  team's embedding cache (`storage/postgres/layered.py`) behind the local one. When no revision can
  be used, the local storage alone, and `TeamBase.reason` says why.

Besides `core/checks/health.py` (which probes the database), this is the only engine module that
imports the team backend `core.storage.postgres` (tests/test_architecture.py); it does so inside
functions, since psycopg is an optional extra. How to add a backend: docs/storage.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeask.config import Settings
from codeask.core.embedding import embed
from codeask.core.embedding.base import VectorCache
from codeask.core.embedding.embed import CachedEmbedder
from codeask.core.storage.local import LocalStorage
from codeask.core.storage.overlay import overlay_paths
from codeask.core.storage.protocol import Storage
from codeask.core.storage.team import PublishedBase, TeamBase, TeamStorage, ancestors

if TYPE_CHECKING:
    from codeask.core.storage.postgres.naming import RepositoryName
    from codeask.core.storage.postgres.revision import RevisionInfo

log = logging.getLogger("codeask.core.indexer")


@dataclass(frozen=True)
class OpenedStorage:
    """One load of a folder's index (FolderIndex's `local`, `storage` and `damage`)."""

    local: Storage
    """What the indexer writes: this machine's index (with the team backend, only the files
    that differ from the published revision)."""
    storage: Storage
    """What everything else reads: `local`, or the team's published revision under it."""
    damage: str
    """Why the snapshot was (partly) unreadable; "" when it was intact."""
    newer_on_disk: Callable[[], bool]
    """Whether a newer snapshot than this load was saved since (a reader then opens again)."""


def open_storage(
    folder: Path, root: Path, settings: Settings, team: TeamBase, *, read_only: bool, kind: str
) -> OpenedStorage:
    """The storage of the index in `folder` for `settings.index.backend` (writer: repairing
    it; reader: as it is), under `team`'s published revision when it has one."""
    local, damage = LocalStorage.open(folder, root, settings, read_only=read_only, kind=kind)
    return OpenedStorage(local, storage_over(team, local), damage, local.newer_on_disk)


def storage_over(team: TeamBase, local: Storage) -> Storage:
    """What readers see: `local`, under `team`'s published revision when it has one (also
    when the team database comes back after a failed open: indexer/team_retry.py)."""
    return TeamStorage(team, local) if team.reader is not None else local


def load_embedder(settings: Settings) -> CachedEmbedder:
    """The process's shared embedder for `settings` (`embed.load_embedder`); with
    `index.backend = "postgres"` the team's embedding cache sits behind the local one."""
    layer = _team_cache if settings.index.backend == "postgres" else None
    return embed.load_embedder(settings, layer)


def cache_state(cache: VectorCache) -> str:
    """The team embedding cache's state for status lines ("" for a cache without one)."""
    from codeask.core.storage.postgres.layered import LayeredCache

    return cache.team_state if isinstance(cache, LayeredCache) else ""


def _team_cache(local: VectorCache, settings: Settings, model: str, dim: int) -> VectorCache:
    """The team cache at `$index.dsn_env` behind `local` (storage/postgres/layered.py), keyed by the
    model's name (a server's model: embed.model), as published revisions are: team members share
    vectors whatever URL reaches the server."""
    from codeask.core.storage.postgres.layered import team_cache  # psycopg: an optional extra

    return team_cache(local, settings.index.dsn_env, model, dim)


# ---- the team's published revision --------------------------------------------------------------
def team_base(root: Path, settings: Settings, *, read_team: bool) -> TeamBase:
    """The team's published revision this folder reads (index.backend = "postgres"), or an
    empty base; why none could be used is logged once here."""
    # `read_team=False`: a publisher (CI) indexes every file itself
    if not (read_team and settings.index.backend == "postgres"):
        return TeamBase()
    team = open_base(root, settings)
    if team.reason:
        log.warning("%s: %s", root, team.reason)
    return team


def first_line(exc: BaseException) -> str:
    """The first line of an error's message, redacted (its type's name when it has none)."""
    from codeask.core.storage.postgres.connect import redact

    text = str(exc).strip()
    return redact(text.splitlines()[0]) if text else type(exc).__name__


def _unreachable(exc: BaseException) -> bool:
    """A database that did not answer or dropped the link (waiting may fix it), as opposed to
    a refused login, a missing table or a bad DSN (waiting does not)."""
    from codeask.core.storage.postgres.connect import PgUnavailable

    if isinstance(exc, PgUnavailable):
        return exc.transient
    try:
        import psycopg
    except ImportError:
        return False
    return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)


def open_base(root: Path, settings: Settings) -> TeamBase:
    """The published revision nearest HEAD for `embed.model`, or why there is none. Looked up
    by commit under any name of this folder's scope, its own name (the publisher's derivation:
    `naming.repository_name`) first among equals; see core/storage/postgres/naming.py for why."""
    from codeask.core.storage.postgres.connect import connect, dsn_from_env
    from codeask.core.storage.postgres.naming import nearest_published, repository_name
    from codeask.core.storage.postgres.published import PublishedReader

    shas = ancestors(root)
    if not shas:
        return TeamBase(
            reason="not a git repository with a commit: indexing locally", kind="unusable"
        )
    wanted = repository_name(root)
    name = wanted.name
    model = settings.embed.model
    try:
        dsn = dsn_from_env(settings.index.dsn_env)
        with connect(dsn) as conn:
            if not _has_tables(conn):
                return TeamBase(
                    reason="nothing is published in the team database yet (it has no codeask "
                    "tables): CI publishes with `codeask index --backend postgres` (writer "
                    "role); indexing locally",
                    kind="unpublished",
                    repository=name,
                )
            found = nearest_published(conn, wanted, shas, model)
        if found is None:
            return TeamBase(
                reason=f"nothing published for {model} at HEAD or its last {len(shas) - 1} "
                f"first-parent commit(s), under this folder's name {wanted.describe()} nor "
                f"under any name: publish one with `codeask index --backend postgres"
                f" --repo-name {name}`; indexing locally",
                kind="unpublished",
                repository=name,
            )
        shadowed = overlay_paths(root, found.sha)  # before the reader: nothing left open
        reader = PublishedReader(dsn, found.id, model=model)
    except Exception as exc:  # PgError, ValueError, ImportError or a driver error
        return TeamBase(
            reason=f"team index unusable ({first_line(exc)}): indexing locally",
            kind="unreachable" if _unreachable(exc) else "unusable",
        )
    return _found_base(root, wanted, shas, found, shadowed, reader)


def _found_base(
    root: Path,
    wanted: RepositoryName,
    shas: list[str],
    found: RevisionInfo,
    shadowed: set[str],
    reader: PublishedBase,
) -> TeamBase:
    """The base read from the revision found (said in the log: where, how far behind HEAD)."""
    behind = shas.index(found.sha)
    if found.repository != wanted.name:
        log.info(
            "%s: published as '%s', found by commit (this folder's name is %s)",
            root,
            found.repository,
            wanted.describe(),
        )
    log.info(
        "%s: reading the team index of %s@%s (%d commit(s) behind HEAD); %d file(s) differ",
        root,
        found.repository,
        found.sha[:12],
        behind,
        len(shadowed),
    )
    return TeamBase(
        reader,
        found.sha,
        shadowed,
        kind="base",
        repository=found.repository,
        behind=behind,
        describe=first_line,
    )


def _has_tables(conn: Any) -> bool:
    """Whether anything was ever published here (a fresh database has no codeask tables)."""
    from codeask.core.storage.postgres.schema import REVISION_TABLE

    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (REVISION_TABLE,)).fetchone()
    return bool(row and row[0])
