"""The one orchestrator of indexing: discover → chunk → (lexical at once) → embed → store.

Incremental by construction: size+mtime, then the content hash, decide whether a file changed;
chunk vectors come from the content-hash cache when the text was seen before. Lexical search
works as soon as a file is chunked; dense results fill in as embeddings land. Long runs report
progress, can be cancelled between batches, and checkpoint a consistent snapshot.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import msgspec
import numpy as np

from codeask.config import Settings, cache_dir, load_settings
from codeask.core import writer_lock
from codeask.core.chunk import chunk_file
from codeask.core.discover import (
    SkippedFile,
    SourceFile,
    check_file,
    discover,
    load_source,
)
from codeask.core.embed import CachedEmbedder, load_embedder, model_dim
from codeask.core.git.repo import uncommitted_paths
from codeask.core.git.sync import sync_history
from codeask.core.lexical import LexicalIndex
from codeask.core.names import display_path, is_utf8, scrub
from codeask.core.records import Chunk, FileRecord
from codeask.core.static_embed import STATIC_DIM, STATIC_MODEL_NAME, load_static_embedder
from codeask.core.store import IndexStore, current_name
from codeask.core.writer_lock import LockInfo, WriterLock

log = logging.getLogger(__name__)

#: Chunks embedded between cancellation checks: one model batch, so a cancel (or an editor
#: save preempting the backlog) waits ~1-2 s at most, not a whole 256-chunk step.
EMBED_STEP = 32
#: The message of the `embed` progress event sent while the embedding model loads.
LOADING = "loading the embedding model"
#: Chunks per static-tier batch: ~0.2 s of work, so a cancel is honoured quickly.
STATIC_STEP = 1024


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


@dataclass
class IndexReport:
    """What one indexing run did."""

    files_seen: int = 0
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


@dataclass
class IndexStatus:
    """What `codeask status` and the editor's status bar show."""

    root: str
    index_dir: str
    files: int
    chunks: int
    embedded: int
    model: str
    disk_bytes: int
    last_indexed: float
    state: str
    history_commits: int
    static_embedded: int = 0
    """Chunks with a static-tier vector."""
    tiers: list[str] = field(default_factory=list)
    """The vector tiers this index builds (`embed.tiers`)."""

    @property
    def embedded_percent(self) -> float:
        """Share of chunks with a vector."""
        return 100.0 * self.embedded / self.chunks if self.chunks else 100.0

    def tier_summary(self) -> str:
        """`static 812/812 complete, minilm 40/812 (4.9%)`: which dense tier answers now."""
        counts = {"static": self.static_embedded, "minilm": self.embedded}
        parts = []
        for tier in self.tiers:
            done = counts.get(tier, 0)
            state = "complete" if done >= self.chunks else f"({100.0 * done / self.chunks:.1f}%)"
            parts.append(f"{tier} {done}/{self.chunks} {state}")
        return ", ".join(parts) or "none"


def _storable(chunk: Chunk) -> Chunk:
    """A history chunk as the store can encode it: git paths and messages need not be UTF-8
    (one such name used to make every save fail); the rare bad one is escaped."""
    try:
        msgspec.msgpack.encode(chunk)
        return chunk
    except UnicodeEncodeError:
        names = ("path", "text", "symbol", "parent", "docstring")
        texts = {name: scrub(getattr(chunk, name)) for name in names}
        meta = {scrub(k): scrub(v) for k, v in chunk.meta.items()}
        calls = [scrub(call) for call in chunk.calls]
        return msgspec.structs.replace(chunk, **texts, calls=calls, meta=meta)


def index_dir_for(root: Path, settings: Settings) -> Path:
    """Where a folder's index lives: `<root>/.codeask`, the user cache, or a configured path."""
    location = settings.index.location
    tag = f"{root.name or 'root'}-{hashlib.blake2b(os.fsencode(root), digest_size=4).hexdigest()}"
    if not location:
        return root / ".codeask"
    if location == "cache":
        return cache_dir(settings) / "indexes" / tag
    path = Path(location).expanduser()
    return path / tag if path.is_absolute() else root / path


#: Who may write an index folder: "write" takes the writer lock (IndexBusy if another process
#: has it), "read" creates and writes nothing, "auto" writes when the lock is free, else reads.
Mode = Literal["write", "read", "auto"]

#: Set to 1 to allow indexing `$HOME` or `/` as a workspace root (CLI: --allow-broad-root).
ALLOW_BROAD_ROOT_ENV = "CODEASK_ALLOW_BROAD_ROOT"


class IndexBusy(Exception):
    """Another process is the writer of this index folder."""

    def __init__(self, folder: Path, holder: LockInfo | None) -> None:
        self.folder = folder
        self.holder = holder
        who = holder.describe() if holder else "another process"
        super().__init__(f"index at {folder} is being written by {who}")


class RootRefused(Exception):
    """A root too broad to index (the home folder or `/`) without an explicit opt-in."""


def check_root(root: Path, *, allow_broad: bool = False) -> None:
    """Refuse `$HOME` and `/` as roots: indexing them reads every file the user owns."""
    if allow_broad or os.environ.get(ALLOW_BROAD_ROOT_ENV) == "1":
        return
    broad = {Path("/").resolve(), Path.home().resolve()}
    if root.resolve() in broad:
        raise RootRefused(
            f"refusing to index {root}: it is your home folder or the file-system root. Open a "
            f"project folder instead, or opt in with --allow-broad-root ({ALLOW_BROAD_ROOT_ENV}=1)"
        )


def has_index(root: Path, settings: Settings) -> bool:
    """Whether `root` has a saved index (a CURRENT pointer); checks without creating anything."""
    return (index_dir_for(root.resolve(), settings) / "CURRENT").is_file()


class FolderIndex:
    """Index of one workspace folder: store + lexical table + (lazily) the embedder.

    A writer holds the folder's writer lock for its lifetime; a reader (mode "read", or "auto"
    when another process writes) creates nothing, writes nothing and loads the snapshot
    CURRENT names, with a lexical table that provably matches it (see `_open_lexical`).
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
    ) -> None:
        self.root = root.resolve()
        if not is_utf8(str(self.root)):  # nothing could store, search or send its paths
            shown = display_path(str(self.root))
            raise RootRefused(f"refusing to index {shown}: its path is not valid UTF-8; rename it")
        self.settings = settings
        self.warnings = list(warnings)
        self.folder = index_dir_for(self.root, settings)
        self.kind = kind
        self.writer: WriterLock | None = None
        if mode != "read":
            check_root(self.root, allow_broad=allow_broad_root)
            self.writer = WriterLock.try_acquire(self.folder, kind)
            if self.writer is None and mode == "write":
                raise IndexBusy(self.folder, writer_lock.holder(self.folder))
        if self.writer is not None:
            self._write_gitignore()
        self._embedder = embedder
        self._embedder_lock = threading.Lock()
        self._run_lock = threading.Lock()
        #: embed_pending() takes only this lock: single-file updates (editor saves) can run
        #: while a long backlog embeds; both sides tolerate the other's removed chunks.
        self._embed_lock = threading.Lock()
        self._priority: set[str] = set()
        #: Files that differ from HEAD (git status); hits in them are flagged `uncommitted`.
        self.uncommitted: frozenset[str] = frozenset()
        self.state = "loading"
        self.damage = ""
        self._load()

    def _write_gitignore(self) -> None:
        ignore = self.folder / ".gitignore"
        if not ignore.exists():  # keep the index out of `git status` without touching the repo
            ignore.write_text("# created by codeask: the index is local and rebuildable\n*\n")

    @property
    def read_only(self) -> bool:
        """True when another process writes this folder: nothing here is indexed or saved."""
        return self.writer is None

    def _load(self) -> None:
        """Open the store and the lexical table (writer: repairing them; reader: as they are)."""
        self.store, reason = self._open_store()
        if reason:
            self.damage = reason
            action = "kept the rest" if self.store.recovered else "starting empty"
            if self.read_only:
                action += "; the writer rebuilds what is missing"
            log.warning("index at %s: %s (%s)", self.folder, reason, action)
        self.lexical = self._open_lexical()
        self.state = "ready" if self.store.files else "empty"

    def _open_store(self) -> tuple[IndexStore, str]:
        """Load the snapshot; a reader retries when the writer replaced it mid-load."""
        model = self.settings.embed.model
        static = (STATIC_MODEL_NAME, STATIC_DIM) if self.static_tier else ("", 0)
        for _ in range(5):
            before = current_name(self.folder)
            store, reason = IndexStore.open(self.folder, self.root, model, model_dim(model), static)
            if not (self.read_only and reason) or store.live_name() == before:
                break
        return store, reason

    @classmethod
    def open(
        cls,
        root: Path,
        editor: dict[str, object] | None = None,
        *,
        mode: Mode = "write",
        kind: str = "index",
        allow_broad_root: bool = False,
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
        )

    def _open_lexical(self) -> LexicalIndex:
        if self.read_only:
            return self._read_lexical()
        path = self.folder / "lexical.sqlite"
        try:
            lexical = LexicalIndex(path)
            stamped = lexical.generation()
        except Exception as exc:  # sqlite3.DatabaseError and friends: a damaged file
            log.warning("lexical index %s unreadable (%s); rebuilding it", path, exc)
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            lexical = LexicalIndex(path)
            stamped = -2
        if stamped != self.store.generation or lexical.count() != len(self.store.chunks):
            if self.store.chunks:
                log.info(
                    "lexical index does not match snapshot %d; rebuilding it", self.store.generation
                )
            lexical.rebuild(self.store.chunks.values())
            lexical.stamp(self.store.generation)
        return lexical

    def _read_lexical(self) -> LexicalIndex:
        """The on-disk table when it is stamped for exactly the loaded snapshot, else a private
        in-memory copy built from the snapshot's chunks (never touching the writer's file)."""
        path = self.folder / "lexical.sqlite"
        clean = not self.store.recovered
        rows, short = len(self.store.chunks), self.kind != "serve"
        view = (
            LexicalIndex.open_snapshot(
                path, self.store.generation, rows, short_lived=short, fallback=self._memory_lexical
            )
            if clean
            else None
        )
        return view if view is not None else self._memory_lexical()

    def _memory_lexical(self) -> LexicalIndex:
        """The loaded snapshot's chunks as an in-memory table: a reader's own, consistent copy."""
        memory = LexicalIndex(None)
        memory.rebuild(self.store.chunks.values())
        memory.stamp(self.store.generation)
        return memory

    # ---- readers follow the writer; a reader becomes the writer when the lock frees -----------
    def reload_if_changed(self) -> bool:
        """Reader: load the newest snapshot if CURRENT moved since the last load."""
        if not self.read_only or self.store.live_name() == self.store.loaded_from:
            return False
        self._load()  # the old table is not closed here: a search may still be reading it
        return True

    def try_promote(self) -> bool:
        """Reader: become the writer if the lock is free (reloading what is on disk now)."""
        if not self.read_only:
            return True
        check_root(self.root)
        lock = WriterLock.try_acquire(self.folder, self.kind)
        if lock is None:
            return False
        self.writer = lock
        self._write_gitignore()
        with self._run_lock:
            self._load()  # the reader's table is freed once no search holds it
        log.info("now the writer of %s (the previous writer is gone)", self.folder)
        return True

    # ---- the embedder is loaded on first need: lexical search never waits for it ------------
    @property
    def embedder(self) -> CachedEmbedder:
        """The (shared, cached) embedding model; loaded once per process."""
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = load_embedder(self.settings)
            return self._embedder

    @property
    def static_tier(self) -> bool:
        """Whether this index builds static-tier vectors (`embed.tiers`)."""
        return "static" in self.settings.embed.tiers

    @property
    def minilm_tier(self) -> bool:
        """Whether this index builds vectors with the configured model (`embed.tiers`)."""
        return "minilm" in self.settings.embed.tiers

    @property
    def embedder_loaded(self) -> bool:
        """Whether the model is in memory: the editor searches lexically until it is (~1 s)."""
        return self._embedder is not None

    # ---- full / incremental pass -----------------------------------------------------------
    def refresh(
        self,
        *,
        progress: ProgressFn | None = None,
        cancel: CancelToken | None = None,
        embed: bool = True,
        history: bool | None = None,
    ) -> IndexReport:
        """Bring the index up to date with the folder; safe to call again at any time."""
        report = IndexReport()
        started = time.perf_counter()
        emit = progress or (lambda _p: None)
        token = cancel or CancelToken()
        with self._run_lock:
            self.state = "indexing"
            try:
                self._scan_and_chunk(report, emit, token)
                self._embed_static(self.store.static_pending_ids(), report, emit, token)
                report.seconds_lexical = time.perf_counter() - started
                self.checkpoint()
                if self.settings.history.enabled if history is None else history:
                    self._sync_history(report, emit, token)
                    self._embed_static(self.store.static_pending_ids(), report, emit, token)
                self.refresh_uncommitted()
                if embed and self.minilm_tier:
                    self._embed_pending(report, emit, token)
            except Cancelled:
                report.cancelled = True
            finally:
                self.checkpoint()
                self.state = "ready"
        report.seconds_total = time.perf_counter() - started
        emit(Progress("done", report.files_seen, report.files_seen, *self.embedded_counts()))
        return report

    def _scan_and_chunk(self, report: IndexReport, emit: ProgressFn, token: CancelToken) -> None:
        emit(Progress("scan", message="discovering files"))
        found = discover(
            self.root,
            self.settings.index,
            ignored_dirs=[self.folder],
            on_found=lambda n: emit(Progress("scan", files_done=n, message="discovering files")),
        )
        report.skipped.extend(found.skipped)
        for skipped in found.skipped:
            log.info("skipped %s: %s", display_path(skipped.rel), skipped.reason)
        report.files_seen = len(found.files)
        present = {f.rel for f in found.files}
        for rel in [r for r in self.store.files if r not in present]:
            self._remove(rel, report)
        emit(Progress("chunk", 0, len(found.files)))
        for done, source in enumerate(found.files, 1):
            token.check()
            self._index_file(source, report)
            if done % 50 == 0 or done == len(found.files):
                emit(Progress("chunk", done, len(found.files), message=source.rel))

    def _index_file(
        self, source: SourceFile, report: IndexReport, *, static_now: bool = False
    ) -> None:
        """Chunk one file if it changed; keeps the old chunks when it did not.

        `static_now` (single-file updates): the chunks get their static vectors before they
        become searchable, so the snapshot saved right after includes them. A full pass
        batches the static tier after chunking instead (fewer, larger calls).
        """
        known = self.store.files.get(source.rel)
        if known and known.size == source.size and known.mtime_ns == source.mtime_ns:
            report.files_unchanged += 1
            return
        loaded = load_source(source, self.settings.index)
        if isinstance(loaded, SkippedFile):
            log.info("skipped %s: %s", display_path(loaded.rel), loaded.reason)
            report.skipped.append(loaded)
            self._remove(source.rel, report)
            record = FileRecord(
                path=source.rel,
                size=source.size,
                mtime_ns=source.mtime_ns,
                sha256="",
                skipped=loaded.reason,
            )
            self.store.replace_file(record, [])
            return
        if known and known.sha256 == loaded.sha256 and not known.skipped:
            self.store.touch_file(source.rel, loaded.size, loaded.mtime_ns)
            report.files_unchanged += 1
            return
        result = chunk_file(source.rel, loaded.text, self.settings.chunk)
        if result.fallback_reason:
            log.info("%s: %s", display_path(source.rel), result.fallback_reason)
        ids = self.store.new_ids(len(result.chunks))
        for chunk, chunk_id in zip(result.chunks, ids, strict=True):
            chunk.id = chunk_id
        record = FileRecord(
            path=source.rel,
            size=loaded.size,
            mtime_ns=loaded.mtime_ns,
            sha256=loaded.sha256,
            language=result.language,
        )
        rows = self._static_rows(result.chunks, report) if static_now else None
        with self.store.lock:
            removed = self.store.replace_file(record, result.chunks)
            if rows is not None:
                self.store.add_static_vectors([c.id for c in result.chunks], rows)
            self.lexical.remove(removed)
            self.lexical.upsert(result.chunks)
            self.lexical.upsert_file(source.rel, result.chunks)
        report.files_indexed += 1
        report.chunks_added += len(result.chunks)
        report.chunks_removed += len(removed)

    def _remove(self, rel: str, report: IndexReport) -> None:
        with self.store.lock:
            removed = self.store.remove_file(rel)
            self.lexical.remove(removed)
            self.lexical.remove_file(rel)
        if removed or rel in self.store.files:
            report.files_removed += 1
        report.chunks_removed += len(removed)

    def _sync_history(self, report: IndexReport, emit: ProgressFn, token: CancelToken) -> None:
        known = set(self.store.history.commits)
        delta = sync_history(
            self.root,
            self.settings.history,
            known,
            cancel=lambda: token.cancelled,
            index=self.settings.index,
            progress=lambda done, total: emit(
                Progress("history", commits_done=done, commits_total=total)
            ),
        )
        for note in delta.notes:
            log.info("history: %s", note)
        with self.store.lock:
            removed = self.store.remove_history(delta.removed)
            self.lexical.remove(removed)
            for sha, found in delta.added.items():
                chunks = [_storable(chunk) for chunk in found]
                for chunk, chunk_id in zip(chunks, self.store.new_ids(len(chunks)), strict=True):
                    chunk.id = chunk_id
                self.store.add_history(sha, chunks)
                self.lexical.upsert(chunks)
            self.store.set_head(delta.head)
        report.commits_added += len(delta.added)
        report.commits_removed += len(delta.removed)

    def refresh_uncommitted(self) -> None:
        """Re-read which files have uncommitted changes (cheap: one git status)."""
        if self.settings.history.enabled:
            self.uncommitted = frozenset(uncommitted_paths(self.root))

    # ---- embedding ---------------------------------------------------------------------------
    def _embed_static(
        self, ids: list[int], report: IndexReport, emit: ProgressFn, token: CancelToken
    ) -> None:
        """The static tier, during the first pass: every chunk in seconds (cached by hash)."""
        if not self.static_tier or not ids:
            return
        total = len(self.store.chunks)
        done = total - len(ids)
        for start in range(0, len(ids), STATIC_STEP):
            token.check()
            found = (self.store.chunks.get(i) for i in ids[start : start + STATIC_STEP])
            chunks = [c for c in found if c is not None]
            rows = self._static_rows(chunks, report)
            if rows is not None:
                self.store.add_static_vectors([c.id for c in chunks], rows)
            done += len(chunks)
            emit(Progress("static", chunks_embedded=done, chunks_total=total))

    def _static_rows(self, chunks: list[Chunk], report: IndexReport) -> np.ndarray | None:
        """Static-tier vectors of `chunks` (content-hash cached); None when the tier is off."""
        if not self.static_tier or not chunks:
            return None
        embedder = load_static_embedder(self.settings)
        before = embedder.computed
        rows = embedder.embed_keyed(
            [c.content_hash() for c in chunks], [c.embed_text() for c in chunks]
        )
        report.static_computed += embedder.computed - before
        return rows

    def prioritize(self, rels: Iterable[str]) -> None:
        """Files the user is looking at: their chunks are embedded before the backlog."""
        self._priority.update(rels)

    def _pending_in_order(self) -> list[int]:
        pending = self.store.pending_ids()
        chunks = self.store.chunks

        def rank(chunk_id: int) -> tuple[int, int]:
            chunk = chunks.get(chunk_id)
            if chunk is None:
                return (3, 0)
            if chunk.path in self._priority and chunk.kind not in ("commit", "hunk"):
                return (0, 0)
            return (2 if chunk.kind in ("commit", "hunk") else 1, len(chunk.text))

        return sorted(pending, key=rank)

    def _embed_pending(self, report: IndexReport, emit: ProgressFn, token: CancelToken) -> None:
        if not self.minilm_tier:
            return
        pending = self._pending_in_order()
        total = len(self.store.chunks)
        embedded = total - len(pending)
        if not pending:
            return
        if not self.embedder_loaded:  # the model loads first (seconds; a download the first time)
            emit(Progress("embed", chunks_embedded=embedded, chunks_total=total, message=LOADING))
        embedder = self.embedder
        self._fill_from_cache(pending, embedder)
        pending = [i for i in pending if i not in self.store.vectors.live]
        embedded = total - len(pending)
        emit(Progress("embed", chunks_embedded=embedded, chunks_total=total))
        last_save = time.monotonic()
        for start in range(0, len(pending), EMBED_STEP):
            token.check()
            step = [i for i in pending[start : start + EMBED_STEP] if i in self.store.chunks]
            embedded += self._embed_ids(step, embedder, report)
            emit(Progress("embed", chunks_embedded=embedded, chunks_total=total))
            if time.monotonic() - last_save > self.settings.index.checkpoint_seconds:
                self.checkpoint()
                last_save = time.monotonic()

    def _fill_from_cache(self, ids: list[int], embedder: CachedEmbedder) -> None:
        """Warm runs: everything the cache knows lands at once, without touching the model."""
        chunks = [c for c in (self.store.chunks.get(i) for i in ids) if c is not None]
        keys = [c.content_hash() for c in chunks]
        cached = embedder.cache.get_many(keys)
        hits = [(c.id, cached[k]) for c, k in zip(chunks, keys, strict=True) if k in cached]
        if hits:
            rows = np.stack([v for _, v in hits])
            self.store.add_vectors([i for i, _ in hits], rows)
            embedder.reused += len(hits)

    def _embed_ids(self, ids: list[int], embedder: CachedEmbedder, report: IndexReport) -> int:
        found = (self.store.chunks.get(i) for i in ids)
        chunks = [c for c in found if c is not None]  # an update may have just removed some
        if not chunks:
            return 0
        before = embedder.computed
        rows = embedder.embed_keyed(
            [c.content_hash() for c in chunks], [c.embed_text() for c in chunks]
        )
        self.store.add_vectors([c.id for c in chunks], rows)
        report.vectors_computed += embedder.computed - before
        report.chunks_embedded += len(chunks)
        return len(chunks)

    def embed_pending(
        self, *, progress: ProgressFn | None = None, cancel: CancelToken | None = None
    ) -> IndexReport:
        """Embed whatever has no vector yet (after lexical-only runs); update_paths may run
        concurrently (the editor's saves do not wait for the backlog)."""
        report = IndexReport()
        with self._embed_lock:
            try:
                self._embed_pending(report, progress or (lambda _p: None), cancel or CancelToken())
            except Cancelled:
                report.cancelled = True
            finally:
                self.checkpoint()
        return report

    # ---- single files (editor saves, watcher events) --------------------------------------
    def update_paths(self, rels: Iterable[str], *, embed: bool = True) -> IndexReport:
        """Re-check named files (changed, created or deleted); their chunks embed first."""
        report = IndexReport()
        started = time.perf_counter()
        rels = list(dict.fromkeys(rels))
        with self._run_lock:
            for rel in rels:
                found = check_file(self.root, rel, self.settings.index)
                if isinstance(found, SourceFile):
                    self._index_file(found, report, static_now=True)
                else:
                    if isinstance(found, SkippedFile):
                        report.skipped.append(found)
                    self._remove(rel, report)
            report.seconds_lexical = time.perf_counter() - started
            self.refresh_uncommitted()
            missing_static = self._without_vector(rels, self.store.static_vectors.live)
            self._embed_static(missing_static, report, lambda _p: None, CancelToken())
            if embed and self.minilm_tier:
                fresh = self._without_vector(rels, self.store.vectors.live)
                if fresh:
                    self._embed_ids(fresh, self.embedder, report)
            self.checkpoint()
        report.seconds_total = time.perf_counter() - started
        return report

    def _without_vector(self, rels: Iterable[str], live: set[int]) -> list[int]:
        """Chunk ids of these files that have no vector in a tier (`live` is its id set)."""
        files = self.store.files
        return [
            cid for rel in rels if rel in files for cid in files[rel].chunk_ids if cid not in live
        ]

    def rebuild(self, **kwargs: object) -> IndexReport:
        """Forget everything and index from scratch (vectors still come from the cache)."""
        with self._run_lock, self.store.lock:
            self.store.clear()
            self.lexical.clear()
        return self.refresh(**kwargs)  # type: ignore[arg-type]

    # ---- persistence and status --------------------------------------------------------------
    def checkpoint(self) -> None:
        """Save a consistent snapshot if anything changed (lexical stamped first, see store).

        Not when the workspace folder itself is gone: saving would recreate it on disk. Never
        by a reader, and never without changes: a no-change pass writes 0 bytes.
        """
        if self.read_only:
            return
        with self.store.lock:
            if not self.store.dirty and self.lexical.generation() == self.store.generation:
                return
            if not self.root.is_dir():
                log.info("%s no longer exists; its index is not saved", self.root)
                return
            self.lexical.stamp(self.store.generation + 1)
            self.store.save()

    def embedded_counts(self) -> tuple[int, int]:
        """(chunks with a vector, all chunks)."""
        with self.store.lock:
            return len(self.store.vectors.live), len(self.store.chunks)

    def status(self) -> IndexStatus:
        """A snapshot of the counts for humans and status bars."""
        with self.store.lock:
            code_files = sum(1 for f in self.store.files.values() if not f.skipped)
            return IndexStatus(
                root=str(self.root),
                index_dir=str(self.folder),
                files=code_files,
                chunks=len(self.store.chunks),
                embedded=len(self.store.vectors.live),
                static_embedded=len(self.store.static_vectors.live),
                tiers=list(self.settings.embed.tiers),
                model=self.store.model,
                disk_bytes=self.store.disk_bytes(),
                last_indexed=self.store.saved_at,
                state=self.state,
                history_commits=len(self.store.history.commits),
            )

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
        self.lexical.close()
        if self.writer is not None:
            self.writer.release()


class Workspace:
    """All workspace folders of one editor window (multi-root), each with its own index."""

    def __init__(self) -> None:
        self.folders: dict[Path, FolderIndex] = {}
        self._lock = threading.Lock()

    def add(
        self,
        root: Path,
        editor: dict[str, object] | None = None,
        *,
        mode: Mode = "write",
        kind: str = "index",
    ) -> FolderIndex:
        """Open (or return) the index of a folder."""
        root = root.resolve()
        with self._lock:
            if root not in self.folders:
                self.folders[root] = FolderIndex.open(root, editor, mode=mode, kind=kind)
            return self.folders[root]

    def remove(self, root: Path) -> None:
        """Close a folder's index (its files stay on disk)."""
        with self._lock:
            folder = self.folders.pop(root.resolve(), None)
        if folder:
            folder.close()

    def folder_for(self, path: Path) -> FolderIndex | None:
        """The innermost folder containing `path`."""
        best: FolderIndex | None = None
        for folder in list(self.folders.values()):
            if folder.relative(path) is not None and (
                best is None or len(str(folder.root)) > len(str(best.root))
            ):
                best = folder
        return best

    def all(self) -> list[FolderIndex]:
        """Every open folder index."""
        return list(self.folders.values())

    def close(self) -> None:
        """Save and close every folder."""
        for root in list(self.folders):
            self.remove(root)
