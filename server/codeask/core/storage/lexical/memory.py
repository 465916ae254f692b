"""When the lexical tables are answered from memory, and how the copy follows their writes.

The copy (bm25.LiveTable for each table) is built once from the tables' rows, then every
committed write is replayed onto it (the tables tell us through `FtsTables.on_write`): a save
costs milliseconds, not a rebuild of the whole table. A full rebuild re-reads the tables when the
writes since the build grow large (a big reindex), or after a write that cannot be replayed.
Rebuilding once per save held the GIL for a second on a 15k-chunk folder and doubled hover's
p95 while a folder was being saved and embedded (benchmarks/README.md, issue 14's check).
"""

from __future__ import annotations

import logging
import sqlite3

from codeask.core.runtime import background, heap
from codeask.core.storage.lexical.bm25 import LiveTable, Postings
from codeask.core.storage.lexical.fts import CHUNK_WEIGHTS, FILE_WEIGHTS, FtsTables, TableWrite

log = logging.getLogger(__name__)

#: FTS5 queries at one table version before the in-memory copy is built.
MEMORY_AFTER_QUERIES = 3
#: Rows written since the build that a copy absorbs before a rebuild (or this share of its rows).
REPLAY_MIN_ROWS = 2000
REPLAY_SHARE = 0.25

Copy = tuple[int, LiveTable, LiveTable]
"""(table version, chunks, files)."""


class MemoryCopy:
    """Both lexical tables in memory, used only at the table version they match.

    After MEMORY_AFTER_QUERIES FTS5 queries at one version a background build starts (a one-shot
    CLI search never pays for it; a server does once), or `warm_up` builds it at once. Writes
    are replayed onto the copy, including the ones that land while it is being built.
    """

    def __init__(self, tables: FtsTables) -> None:
        self.tables = tables
        self.built: Copy | None = None
        #: (table version, FTS5 queries answered at it): counts toward a background build.
        self.fts_queries = (-1, 0)
        self.building = False
        #: Writes committed while a build runs, replayed onto it when it finishes.
        self._pending: list[tuple[int, TableWrite]] = []
        tables.on_write = self._on_write

    def current(self) -> Copy | None:
        """The copy if it matches the tables as they are now, else None."""
        built = self.built
        return built if built is not None and built[0] == self.tables.version else None

    def for_query(self) -> Copy | None:
        """The current copy; else None (FTS5 answers), counting toward a background build.
        Caller holds the tables' lock."""
        built = self.current()
        if built is not None:
            return built
        version, queries = self.fts_queries
        queries = queries + 1 if version == self.tables.version else 1
        self.fts_queries = (self.tables.version, queries)
        if queries >= MEMORY_AFTER_QUERIES and not self.building:
            self._start_build()
            background.start(self.build, name="lexical-memory")
        return None

    def warm_up(self) -> None:
        """Build the copy now, in this thread, unless it is current or being built."""
        with self.tables.lock:
            if self.current() is not None or self.building:
                return
            self._start_build()
        self.build()

    def _start_build(self) -> None:
        self.building = True
        self._pending = []

    def _on_write(self, version: int, write: TableWrite) -> None:
        """A committed write (under the tables' lock): replay it onto the copy if the copy was
        current just before it; a copy that cannot follow is dropped (rebuilt on demand)."""
        if self.building:
            self._pending.append((version, write))
        built = self.built
        if built is None or built[0] != version - 1:
            return
        self.built = (version, built[1], built[2]) if _replay(built, write) else None

    def build(self) -> None:
        """Read both tables at one version, index them, replay the writes that landed meanwhile.
        The caller has set `building` (`_start_build`)."""
        heap.give_back_freed()  # what the pass before freed (zig std: 95 MB) stays no floor
        try:
            with self.tables.snapshot_rows() as (version, chunk_rows, file_rows):
                chunks = LiveTable(
                    Postings.build(chunk_rows, CHUNK_WEIGHTS), CHUNK_WEIGHTS, tie_by_key=True
                )
                files = LiveTable(Postings.build(file_rows, FILE_WEIGHTS), FILE_WEIGHTS)
            with self.tables.lock:
                built: Copy | None = (version, chunks, files)
                for later, write in self._pending:
                    if built is None or later <= built[0]:
                        continue
                    ok = later == built[0] + 1 and _replay(built, write)
                    built = (later, chunks, files) if ok else None
                if built is not None and built[0] == self.tables.version:
                    self.built = built
        except (sqlite3.Error, ValueError) as exc:  # closed meanwhile, or a torn read
            log.debug("lexical index %s: no in-memory copy: %s", self.tables.path, exc)
        finally:
            with self.tables.lock:
                self.building = False
                self._pending = []
            heap.give_back_freed()


def _replay(copy: Copy, write: TableWrite) -> bool:
    """Apply one write to the copy; False (copy unusable) if it empties the tables or would
    grow the copy past what a rebuild costs."""
    _, chunks, files = copy
    if write.cleared:
        return False
    added = len(write.chunk_rows) + (write.file_row is not None)
    if max(chunks.added, files.added) + added > max(
        REPLAY_MIN_ROWS, REPLAY_SHARE * chunks.row_count()
    ):
        return False
    if write.chunk_rows or write.chunk_removed:
        chunks.apply(write.chunk_rows, write.chunk_removed)
    if write.file is not None:
        row = [] if write.file_row is None else [(write.file, *write.file_row)]
        files.apply(row, [write.file])
    return True
