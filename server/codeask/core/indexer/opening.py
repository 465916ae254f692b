"""What a `FolderIndex` reads and writes, opened: the local snapshot and lexical table
(`snapshot`), under the team's published revision when the postgres backend has one (`team`);
and the embedder, whose local cache has the team's embedding cache behind it with that backend.
The one place that turns `index.backend` into parts (besides the team status and health).

Kept out of folder.py so the façade only holds state and orders runs; a reader that reloads or
becomes the writer opens the same stack again through here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from codeask.config import Settings
from codeask.core import embed
from codeask.core.embed import CachedEmbedder
from codeask.core.embed_base import VectorCache
from codeask.core.indexer.snapshot import memory_lexical, open_lexical, open_store
from codeask.core.indexer.team import TeamBase, TeamStorage, open_base
from codeask.core.lexical import LexicalIndex
from codeask.core.storage import Storage
from codeask.core.storage_local import LocalStorage
from codeask.core.store import IndexStore

log = logging.getLogger("codeask.core.indexer")


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


@dataclass(frozen=True)
class Opened:
    """One load of a folder's index (FolderIndex's attributes of the same names)."""

    store: IndexStore
    lexical: LexicalIndex
    local: Storage
    storage: Storage
    damage: str
    """Why the snapshot was (partly) unreadable; "" when it was intact."""


def open_storage(
    folder: Path, root: Path, settings: Settings, team: TeamBase, *, read_only: bool, kind: str
) -> Opened:
    """Open the store and the lexical table (writer: repairing them; reader: as they are)."""
    store, reason = open_store(folder, root, settings, read_only=read_only)
    if reason:
        action = "kept the rest" if store.recovered else "starting empty"
        if read_only:
            action += "; the writer rebuilds what is missing"
        log.warning("index at %s: %s (%s)", folder, reason, action)
    lexical = open_lexical(
        store,
        folder,
        read_only=read_only,
        kind=kind,
        fallback=lambda: memory_lexical(store),  # the snapshot loaded by then
    )
    local: Storage = LocalStorage(store, lexical)
    storage: Storage = TeamStorage(team, local) if team.reader is not None else local
    return Opened(store, lexical, local, storage, reason)


def load_embedder(settings: Settings) -> CachedEmbedder:
    """The process's shared embedder for `settings` (`embed.load_embedder`); with
    `index.backend = "postgres"` the team's embedding cache sits behind the local one."""
    layer = _team_cache if settings.index.backend == "postgres" else None
    return embed.load_embedder(settings, layer)


def _team_cache(local: VectorCache, settings: Settings, model: str, dim: int) -> VectorCache:
    """The team cache at `$index.dsn_env` behind `local` (pg/layered.py), keyed by the model's
    name (a server's model: embed.model), as published revisions are: team members share
    vectors whatever URL reaches the server."""
    from codeask.core.pg.layered import team_cache  # psycopg: an optional extra

    return team_cache(local, settings.index.dsn_env, model, dim)
