"""Both lexical tables on disk: segment files, memory-mapped, named by a small manifest.

The folder `lexical/` beside the store's generations holds immutable segment files
(segment_file.py), one mask file per segment with removed rows (the positions, uint32) and
`manifest.json`: the schema, the store generation the tables match (their stamp), the chunk
rows, and each table's segments with their masks. A save writes only what changed since the
last one (the rows of the writes as one small segment, the masks they touched), then the
manifest (temp file, fsync, rename), then removes the files no manifest names. A first pass
writes a segment whenever SEGMENT_CHARS of row text are pending, so its memory does not grow
with the tree; the small segments of later saves are folded into one past MAX_SMALL (the base
segments are left as they are). A crash leaves the previous manifest and its files: the store
then loads a generation the stamp does not match and the indexer rebuilds the tables.

Readers map the files the manifest names; a writer never changes a file, only removes it, and
a mapped file stays readable after that, so a reader never sees torn rows.
"""

from __future__ import annotations

import io
import json
import logging
import os
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codeask.core.runtime import private_files
from codeask.core.storage.lexical.bm25 import CHUNK_WEIGHTS, FILE_WEIGHTS, LiveTable, Segment
from codeask.core.storage.lexical.file_postings import build_pair
from codeask.core.storage.lexical.segment_file import SegmentFileError, open_segment, write_segment

log = logging.getLogger(__name__)

SCHEMA = "4"
MANIFEST = "manifest.json"
#: Row text pending in a writer's table before it becomes a segment file (a first pass).
SEGMENT_CHARS = 4_000_000
#: Base segments folded at once when a pass has written that many of about one size ...
MERGE_FACTOR = 4
#: ... while the result holds at most this many postings (a merge's memory: ~24 B each).
MAX_MERGE_POSTINGS = 8_000_000
#: Small segments on disk (one per save) before a save folds them into one.
MAX_SMALL = 8
TABLES = ("chunks", "files")


class LexicalLoadError(OSError):
    """The manifest names files that are gone or damaged (the writer rebuilds)."""


@dataclass(frozen=True)
class TableWrite:
    """One write to both tables (what `DiskTables.write` applies)."""

    chunk_rows: tuple[tuple[object, ...], ...] = ()
    """Chunk rows added or replaced: (id, body, symbol, path)."""
    chunk_removed: tuple[int, ...] = ()
    """Chunk ids dropped."""
    file: str | None = None
    """The file whose whole-file row was replaced (or dropped when `file_row` is None)."""
    file_row: tuple[str, str] | None = None
    file_from_chunks: bool = False
    """`file_row`'s body is `chunk_rows`' bodies joined: its postings come from theirs."""


def read_manifest(folder: Path) -> dict[str, object] | None:
    """The manifest as saved, or None (missing, unreadable, another schema)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_bytes())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("schema") == SCHEMA else None


def _named(manifest: dict[str, object]) -> set[str]:
    """The segment and mask files a manifest names."""
    named: set[str] = set()
    for table in manifest["tables"].values():  # type: ignore[attr-defined]
        for file, mask, _ in table["segments"]:
            named.update(n for n in (file, mask) if n)
    return named


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class DiskTables:
    """The chunk and whole-file tables (`LiveTable`s over mapped segments) and their stamp.
    `folder` None: in memory only. Every public method takes `lock`."""

    def __init__(self, folder: Path | None, *, readonly: bool = False) -> None:
        self.folder = folder
        self.readonly = readonly
        self.lock = threading.RLock()
        self.chunks = LiveTable(None, CHUNK_WEIGHTS, tie_by_key=True)
        self.files = LiveTable(None, FILE_WEIGHTS)
        #: The store generation the tables match; -1 once changed since.
        self.stamped = -1
        #: The files the manifest on disk names (a reader may map them).
        self._published: set[str] = set()
        #: Pending whole-file rows made of pending chunk rows: path -> those rows.
        self._derived: dict[str, tuple[tuple[object, ...], ...]] = {}

    @classmethod
    def open(cls, folder: Path | None) -> DiskTables:
        """The writer's tables as last saved (empty, stamped -1, when none can be read)."""
        tables = cls(folder)
        if folder is None:
            return tables
        private_files.make_dir(folder)
        manifest = read_manifest(folder)
        if manifest is not None:
            try:
                tables._load(manifest)
            except (LexicalLoadError, SegmentFileError) as exc:
                log.warning("lexical index %s unreadable (%s); rebuilding it", folder, exc)
                tables = cls(folder)
        return tables

    @classmethod
    def open_snapshot(cls, folder: Path, generation: int, rows: int) -> DiskTables | None:
        """A reader's tables stamped for `generation` with `rows` chunk rows, or None."""
        for _ in range(5):  # the writer removed a file between our manifest read and its open
            manifest = read_manifest(folder)
            if manifest is None or (manifest.get("generation"), manifest.get("rows")) != (
                generation,
                rows,
            ):
                return None
            tables = cls(folder, readonly=True)
            try:
                tables._load(manifest)
            except LexicalLoadError:
                continue
            except SegmentFileError:
                return None
            return tables
        return None

    def _load(self, manifest: dict[str, object]) -> None:
        assert self.folder is not None
        saved = manifest["tables"]
        assert isinstance(saved, dict)
        for name, table in (("chunks", self.chunks), ("files", self.files)):
            entry = saved[name]
            for file, mask, small in entry["segments"]:
                table.segments.append(self._segment(file, mask, small))
            table.next_order = int(entry["next_order"])
        self.stamped = int(manifest["generation"])  # type: ignore[call-overload]
        self._published = _named(manifest)

    def _segment(self, file: str, mask: str | None, small: bool) -> Segment:
        assert self.folder is not None
        try:
            postings, order = open_segment(self.folder / file)
            segment = Segment(postings, order, small=small, name=file, mask_name=mask)
            if mask is not None:
                segment.set_mask(np.load(self.folder / mask).astype(np.int64))
        except FileNotFoundError as exc:
            raise LexicalLoadError(f"{exc.filename} is missing") from exc
        except (OSError, ValueError, IndexError) as exc:
            raise SegmentFileError(f"{file}: {exc}") from exc
        return segment

    # ---- writes ----------------------------------------------------------------------------
    def write(self, write: TableWrite) -> None:
        """Apply one write to both tables; a writer's full pending table becomes a file."""
        with self.lock:
            self.stamped = -1
            if write.chunk_rows or write.chunk_removed:
                self.chunks.apply(write.chunk_rows, write.chunk_removed)
            if write.file is not None:
                row = [] if write.file_row is None else [(write.file, *write.file_row)]
                self.files.apply(row, [write.file])
                self._derived.pop(write.file, None)
                if write.file_from_chunks and row:
                    self._derived[write.file] = write.chunk_rows
            full = max(self.chunks.pending_chars, self.files.pending_chars) >= SEGMENT_CHARS
            if self.folder is not None and full:
                self._settle_pair()
                for table in (self.chunks, self.files):
                    self._spill(table)

    def _settle_pair(self) -> None:
        """Both tables' pending rows indexed in one build: a whole-file row made of pending
        chunk rows (the very rows written with it) gets its postings from theirs."""
        derived, self._derived = self._derived, {}
        chunks, files = self.chunks, self.files
        if not chunks.pending or not files.pending:
            chunks.settle()
            files.settle()
            return
        position = {key: at for at, key in enumerate(chunks.pending)}
        parts: list[list[int] | None] = []
        for path in files.pending:
            rows = derived.get(str(path), ())
            ok = bool(rows) and all(chunks.pending.get(r[0]) is r for r in rows)
            parts.append([position[r[0]] for r in rows] if ok else None)
        built = build_pair(list(chunks.pending.values()), list(files.pending.values()), parts)
        chunks.add_built(built[0])
        files.add_built(built[1])

    def clear(self) -> None:
        """Empty both tables (their files go at the next save)."""
        with self.lock:
            self.chunks = LiveTable(None, CHUNK_WEIGHTS, tie_by_key=True)
            self.files = LiveTable(None, FILE_WEIGHTS)
            self._derived = {}
            self.stamped = -1

    def _spill(self, table: LiveTable) -> None:
        """Pending rows and unsaved small segments → one base segment file (a first pass)."""
        table.settle()
        unsaved = [s for s in table.segments if s.name is None]
        if unsaved:
            merged = table.merge(unsaved, small=False) if len(unsaved) > 1 else unsaved[0]
            merged.small = False
            self._persist(table, merged)
        self._fold_tier(table)

    def _fold_tier(self, table: LiveTable) -> None:
        """The MERGE_FACTOR smallest base segments become one while they are small enough: a
        pass of n rows keeps ~log(n) segments (each costs a query a dictionary probe per term),
        and merging costs ~n log n overall, never more than MAX_MERGE_POSTINGS at once."""
        while True:
            size = MAX_MERGE_POSTINGS // MERGE_FACTOR
            base = [s for s in table.segments if not s.small and len(s.postings.rows) < size]
            if len(base) < MERGE_FACTOR:
                return
            base.sort(key=lambda s: len(s.postings.rows))
            self._persist(table, table.merge(base[:MERGE_FACTOR], small=False))
            self._remove_unpublished(base[:MERGE_FACTOR])

    def _remove_unpublished(self, parts: list[Segment]) -> None:
        """Files of folded segments no manifest names (no reader maps them): gone at once, so a
        first pass's merges leave no copies behind until its save."""
        assert self.folder is not None
        for part in parts:
            if part.name is not None and part.name not in self._published:
                (self.folder / part.name).unlink(missing_ok=True)

    def _persist(self, table: LiveTable, segment: Segment) -> None:
        """Write `segment` to a new file and read it back mapped, in its place."""
        assert self.folder is not None
        name = f"seg-{uuid.uuid4().hex[:16]}.lex"
        write_segment(self.folder / name, segment)
        postings, order = open_segment(self.folder / name)
        mapped = Segment(postings, order, small=segment.small, name=name)
        if segment.masked is not None:
            mapped.set_mask(np.flatnonzero(segment.masked))
            mapped.mask_dirty = True
        table.segments[table.segments.index(segment)] = mapped

    # ---- the stamp and the save ------------------------------------------------------------
    def generation(self) -> int:
        with self.lock:
            return self.stamped

    def stamp(self, generation: int) -> None:
        """Save what changed and record that the tables match store `generation`."""
        with self.lock:
            if self.folder is not None and not self.readonly:
                self._settle_pair()
                for table in (self.chunks, self.files):
                    self._save_table(table)
                self._publish(generation)
            self.stamped = generation

    def _save_table(self, table: LiveTable) -> None:
        table.settle()
        unsaved = [s for s in table.segments if s.name is None]
        if len(unsaved) > 1:
            unsaved = [table.merge(unsaved)]
        for segment in unsaved:
            self._persist(table, segment)
        small = [s for s in table.segments if s.small]
        if len(small) > MAX_SMALL:
            self._persist(table, table.merge(small))
        table.segments = [s for s in table.segments if s.live()]
        for segment in [s for s in table.segments if s.masked_count * 2 > len(s.postings.keys)]:
            self._persist(table, table.merge([segment], small=segment.small))  # mostly dead
        for segment in table.segments:
            if segment.mask_dirty and segment.masked is not None:
                self._save_mask(segment)

    def _save_mask(self, segment: Segment) -> None:
        assert self.folder is not None and segment.masked is not None
        name = f"mask-{uuid.uuid4().hex[:16]}.npy"
        buffer = io.BytesIO()
        np.save(buffer, np.flatnonzero(segment.masked).astype(np.uint32))
        private_files.write_bytes(self.folder / name, buffer.getvalue(), fsync=True)
        segment.mask_name, segment.mask_dirty = name, False

    def _publish(self, generation: int) -> None:
        """The manifest naming every file of the tables now, then the files it does not name go."""
        assert self.folder is not None
        tables = {
            name: {
                "segments": [[s.name, s.mask_name, s.small] for s in table.segments],
                "next_order": table.next_order,
            }
            for name, table in (("chunks", self.chunks), ("files", self.files))
        }
        manifest = {
            "schema": SCHEMA,
            "generation": generation,
            "rows": self.chunks.row_count(),
            "tables": tables,
        }
        _fsync_dir(self.folder)  # the files it names are on disk before it is
        temporary = self.folder / f"{MANIFEST}.tmp"
        private_files.write_bytes(temporary, json.dumps(manifest).encode(), fsync=True)
        os.replace(temporary, self.folder / MANIFEST)
        _fsync_dir(self.folder)
        self._published = _named(manifest)
        for entry in self.folder.iterdir():
            if entry.name not in self._published and entry.name != MANIFEST:
                entry.unlink(missing_ok=True)

    # ---- reads -----------------------------------------------------------------------------
    def count(self) -> int:
        """Chunk rows."""
        with self.lock:
            return self.chunks.row_count()

    def settle(self) -> None:
        """Index pending rows now (a server after a pass: the next query does not pay)."""
        with self.lock:
            self._settle_pair()
