"""The index on disk: loading a snapshot with a lexical table that provably matches it, and
saving a consistent one. A writer repairs what it loads; a reader never touches the writer's
files and falls back to a private in-memory copy instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from codeask.config import Settings
from codeask.core.embed import tier_dim
from codeask.core.lexical import LexicalIndex
from codeask.core.static_embed import STATIC_DIM, STATIC_MODEL_NAME
from codeask.core.store import IndexStore, current_name, read_manifest

log = logging.getLogger("codeask.core.indexer")


def open_store(
    folder: Path, root: Path, settings: Settings, *, read_only: bool
) -> tuple[IndexStore, str]:
    """Load the snapshot; a reader retries when the writer replaced it mid-load."""
    model, built = settings.embed.model, read_manifest(folder)
    # a server's size: remembered, else asked, else (server down) the one this index holds
    dim = tier_dim(settings, built.dim if built is not None and built.model == model else 0)
    static = (STATIC_MODEL_NAME, STATIC_DIM) if "static" in settings.embed.tiers else ("", 0)
    for _ in range(5):
        before = current_name(folder)
        store, reason = IndexStore.open(folder, root, model, dim, static)
        if not (read_only and reason) or store.live_name() == before:
            break
    return store, reason


def open_lexical(
    store: IndexStore,
    folder: Path,
    *,
    read_only: bool,
    kind: str,
    fallback: Callable[[], LexicalIndex],
) -> LexicalIndex:
    """The lexical table of `store`'s snapshot; a writer rebuilds a damaged or stale one.

    `fallback` builds a reader's in-memory copy when the writer moves the file under a view.
    """
    if read_only:
        return _read_lexical(store, folder, kind, fallback)
    path = folder / "lexical.sqlite"
    try:
        lexical = LexicalIndex(path)
        stamped = lexical.generation()
    except Exception as exc:  # sqlite3.DatabaseError and friends: a damaged file
        log.warning("lexical index %s unreadable (%s); rebuilding it", path, exc)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        lexical = LexicalIndex(path)
        stamped = -2
    if stamped != store.generation or lexical.count() != len(store.chunks):
        if store.chunks:
            log.info("lexical index does not match snapshot %d; rebuilding it", store.generation)
        lexical.rebuild(store.chunks.values())
        lexical.stamp(store.generation)
    return lexical


def _read_lexical(
    store: IndexStore, folder: Path, kind: str, fallback: Callable[[], LexicalIndex]
) -> LexicalIndex:
    """The on-disk table when it is stamped for exactly the loaded snapshot, else a private
    in-memory copy built from the snapshot's chunks (never touching the writer's file)."""
    path = folder / "lexical.sqlite"
    clean = not store.recovered
    rows, short = len(store.chunks), kind not in ("serve", "mcp")  # long-lived readers
    view = (
        LexicalIndex.open_snapshot(
            path, store.generation, rows, short_lived=short, fallback=fallback
        )
        if clean
        else None
    )
    return view if view is not None else fallback()


def memory_lexical(store: IndexStore) -> LexicalIndex:
    """The loaded snapshot's chunks as an in-memory table: a reader's own, consistent copy."""
    memory = LexicalIndex(None)
    memory.rebuild(store.chunks.values())
    memory.stamp(store.generation)
    return memory
