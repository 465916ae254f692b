"""FolderIndex: one workspace folder's index as the CLI, the editor and retrieval see it.

A façade over the modules of this package, each with one job: where the index lives and who
writes it (`location`), the full pass (`full_pass`, `files`), single-file
updates (`updates`), the dense tiers (`vectors`), history (`history`) and the status
(`status`). This class owns the state they share and the locks that order them. Its storage and
embedding cache come from the storage factory (core/storage/factory.py): it opens no part itself,
and shows only `storage` (what readers read) and `local` (what the indexer writes).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from codeask.config import Settings, load_settings
from codeask.core.embedding.embed import CachedEmbedder
from codeask.core.indexer.location import Mode, index_dir_for, resolved_root, take_writer
from codeask.core.indexer.run import CancelToken, IndexReport, ProgressFn, no_progress
from codeask.core.indexer.status import IndexStatus, status_of
from codeask.core.indexer.vectors import VectorTiers
from codeask.core.source.tree_watch import TreeWatch
from codeask.core.source.walk_cache import WALK_CACHE
from codeask.core.storage.factory import open_storage, team_base
from codeask.core.storage.protocol import Storage
from codeask.core.storage.writer_lock import WriterLock

log = logging.getLogger("codeask.core.indexer")


class FolderIndex:
    """Index of one workspace folder: its storage + (lazily) the embedder.

    A writer holds the folder's writer lock for its lifetime; a reader (mode "read", or "auto"
    when another process writes) creates nothing, writes nothing and loads the snapshot
    CURRENT names, with a lexical table that provably matches it (see `snapshot.open_lexical`).
    """

    def __init__(
        self,
        root: Path,
        settings: Settings,
        *,
        embedder: CachedEmbedder | None = None,
        warnings: Sequence[str] = (),
        mode: Mode = "write",
        kind: str = "index",
        allow_broad_root: bool = False,
        read_team: bool = True,
    ) -> None:
        self.root = resolved_root(root)
        self.settings = settings
        self.warnings = list(warnings)
        self.folder = index_dir_for(self.root, settings)
        self.kind = kind
        self.writer: WriterLock | None = take_writer(
            self.root, self.folder, kind, mode, allow_broad_root=allow_broad_root
        )
        #: Held by whole runs (refresh, update_paths, rebuild, promotion), not by the backlog.
        self.run_lock = threading.Lock()
        #: The dense tiers: static vectors, the MiniLM backlog and the lazily loaded model.
        self.embedding = VectorTiers(self, embedder)
        #: Files that differ from HEAD (git status); hits in them are flagged `uncommitted`.
        self.uncommitted: frozenset[str] = frozenset()
        #: Why the ignore rules leave (nearly) nothing here, '' when they do not; None until the
        #: first pass or status computes it (core/source/ignore_note.py).
        self.ignore_note: str | None = None
        self.state = "loading"
        self.damage = ""
        #: The folder's file events, set by a long-lived writer (core/source/tree_watch.py):
        #: a pass then re-checks the changed paths instead of walking. None: passes walk.
        self.watch: TreeWatch | None = None
        #: The team's published revision this folder reads (index.backend = "postgres").
        self.team = team_base(self.root, settings, read_team=read_team)
        self._load()

    @classmethod
    def open(
        cls,
        root: Path,
        editor: dict[str, object] | None = None,
        *,
        mode: Mode = "write",
        kind: str = "index",
        allow_broad_root: bool = False,
        read_team: bool = True,
    ) -> FolderIndex:
        """Open with settings merged from the folder's project file, the editor and the env."""
        settings, warnings = load_settings(root, editor)
        for warning in warnings:
            log.warning("%s", warning)
        return cls(
            root,
            settings,
            warnings=warnings,
            mode=mode,
            kind=kind,
            allow_broad_root=allow_broad_root,
            read_team=read_team,
        )

    @property
    def read_only(self) -> bool:
        """True when another process writes this folder: nothing here is indexed or saved."""
        return self.writer is None

    def _load(self) -> None:
        """Open the storage (writer: repairing it; reader: as it is)."""
        opened = open_storage(
            self.folder,
            self.root,
            self.settings,
            self.team,
            read_only=self.read_only,
            kind=self.kind,
        )
        self.damage = opened.damage or self.damage  # a reload keeps what the first load saw
        self._newer_on_disk = opened.newer_on_disk
        #: What the indexer reads and writes: this machine's index (with the postgres backend,
        #: only the files that differ from the team's published revision).
        self.local: Storage = opened.local
        #: What everything outside the indexer reads: `local`, or the team's published
        #: revision under it (team.py).
        self.storage: Storage = opened.storage
        self.state = "ready" if self.storage.paths() else "empty"

    # ---- readers follow the writer; a reader becomes the writer when the lock frees -----------
    def newer_on_disk(self) -> bool:
        """Whether the writer saved a snapshot after the one loaded (CURRENT moved)."""
        return self._newer_on_disk()

    def reload_if_changed(self) -> bool:
        """Reader: load the newest snapshot if CURRENT moved since the last load."""
        if not self.read_only or not self.newer_on_disk():
            return False
        self._load()  # the old table is not closed here: a search may still be reading it
        return True

    def try_promote(self) -> bool:
        """Reader: become the writer if the lock is free (reloading what is on disk now)."""
        if not self.read_only:
            return True
        lock = take_writer(self.root, self.folder, self.kind, "auto")
        if lock is None:
            return False
        self.writer = lock
        with self.run_lock:
            self._load()  # the reader's table is freed once no search holds it
        log.info("now the writer of %s (the previous writer is gone)", self.folder)
        return True

    # ---- the embedder is loaded on first need: lexical search never waits for it ------------
    @property
    def embedder(self) -> CachedEmbedder:
        """The (shared, cached) embedding model; loaded once per process."""
        return self.embedding.embedder

    @property
    def minilm_tier(self) -> bool:
        """Whether this index builds vectors with the configured model (`embed.tiers`)."""
        return self.embedding.minilm_tier

    @property
    def embedder_loaded(self) -> bool:
        """Whether the model is in memory: the editor searches lexically until it is (~1 s)."""
        return self.embedding.embedder_loaded

    # ---- runs ----------------------------------------------------------------------------------
    def refresh(
        self,
        *,
        progress: ProgressFn | None = None,
        cancel: CancelToken | None = None,
        embed: bool = True,
        history: bool | None = None,
    ) -> IndexReport:
        """Bring the index up to date with the folder; safe to call again at any time."""
        from codeask.core.indexer.full_pass import full_pass  # chunking, git: writers only

        return full_pass(self, progress=progress, cancel=cancel, embed=embed, history_on=history)

    def prioritize(self, rels: Iterable[str]) -> None:
        """Files the user is looking at: their chunks are embedded before the backlog."""
        self.embedding.prioritize(rels)

    def model_pending(self) -> list[int]:
        """The chunks the embedding backlog still has to embed (see `VectorTiers.model_pending`)."""
        return self.embedding.model_pending()

    def embed_pending(
        self, *, progress: ProgressFn | None = None, cancel: CancelToken | None = None
    ) -> IndexReport:
        """Embed whatever has no vector yet (after lexical-only runs); update_paths may run
        concurrently (the editor's saves do not wait for the backlog)."""
        return self.embedding.fill_backlog(progress or no_progress, cancel or CancelToken())

    def update_paths(self, rels: Iterable[str], *, embed: bool = True) -> IndexReport:
        """Re-check named files (changed, created or deleted); their chunks embed first."""
        from codeask.core.indexer import updates  # chunking: writers only

        return updates.update_paths(self, rels, embed=embed)

    def rebuild(self, **kwargs: object) -> IndexReport:
        """Forget everything and index from scratch (vectors still come from the cache);
        every folder is listed again (the walk cache goes too)."""
        with self.run_lock:
            if self.watch is not None:
                self.watch.distrust()
            self.local.clear()
            (self.folder / WALK_CACHE).unlink(missing_ok=True)
        return self.refresh(**kwargs)  # type: ignore[arg-type]

    def refresh_uncommitted(self) -> None:
        """Re-read which files have uncommitted changes (cheap: one git status)."""
        from codeask.core.indexer.history import refresh_uncommitted  # git: writers only

        refresh_uncommitted(self)

    # ---- persistence and status --------------------------------------------------------------
    def checkpoint(self) -> None:
        """Save a consistent snapshot if anything changed; never by a reader."""
        if not self.read_only:
            self.storage.save()

    def embedded_counts(self) -> tuple[int, int]:
        """(chunks with a vector, all chunks)."""
        counts = self.storage.counts()
        return counts.embedded, counts.chunks

    def status(self) -> IndexStatus:
        """A snapshot of the counts for humans and status bars."""
        return status_of(self)

    def relative(self, path: Path) -> str | None:
        """`path` as a POSIX path inside this folder, or None when it is outside."""
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None

    def close(self) -> None:
        """Save and release files, then the writer lock (last: nothing is written after it)."""
        try:
            self.checkpoint()
        finally:
            self.abandon()

    def abandon(self) -> None:
        """Release files and the lock without saving (the workspace folder is gone)."""
        if self.watch is not None:
            self.watch.close()
        self.storage.close()
        if self.writer is not None:
            self.writer.release()
