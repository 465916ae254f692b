"""The SQLite FTS5 tables of the lexical index: schema, writes, generation stamp, guarded reads.

Tables: `fts` (one row per chunk, rowid = chunk id; columns body, symbol, path), `files_fts`
(one row per file, rowid = its key in `file_keys`), `file_keys` (path → that rowid: FTS5 cannot
index its unindexed `file` column, and finding a file's row by it read the whole table once per
file written), `vocab` (fts5vocab over `fts`: document frequencies) and `meta` (schema,
generation). Rows arrive already tokenized (space-separated `[a-z0-9]+` words, see
storage/lexical/index.py), so FTS5's own tokenizer stays out of the way. The standard library's
sqlite3 gives incremental, crash-safe transactions; the generation stamp says which store snapshot
the rows match.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeask.core.runtime import private_files

log = logging.getLogger(__name__)

SCHEMA = "3"
#: bm25 column weights of `fts`: body, symbol (name + parent), path.
CHUNK_WEIGHTS = (1.0, 4.0, 2.0)
#: The whole-file table's weights as FTS5 applies `bm25(files_fts, 1.0, 2.0)`: the first
#: weight goes to the unindexed `file` column, so body counts 2.0 and path the default 1.0.
FILE_WEIGHTS = (2.0, 1.0)
_CHUNK_RANK = "bm25(fts, " + ", ".join(str(w) for w in CHUNK_WEIGHTS) + ")"
#: The top-k query of each table: (key, -bm25) best first for an OR of quoted terms.
_TOP_K = {
    "fts": f"SELECT rowid, -{_CHUNK_RANK} AS s FROM fts WHERE fts MATCH ? "
    f"ORDER BY {_CHUNK_RANK} LIMIT ?",
    "files_fts": "SELECT file, -bm25(files_fts, 1.0, 2.0) FROM files_fts WHERE files_fts MATCH ? "
    "ORDER BY bm25(files_fts, 1.0, 2.0) LIMIT ?",
}
#: How long writes share one transaction before it is committed (see `FtsTables._commit`).
COMMIT_SECONDS = 1.0
Rows = list[tuple[Any, ...]]
_CHUNK_ROWS = "SELECT rowid, body, symbol, path FROM fts"
_FILE_ROWS = "SELECT file, body, path FROM files_fts"
#: Where an immutable view turns when its file changes: the reader's own tables, in memory.
Fallback = Callable[[], "FtsTables"]


@dataclass(frozen=True)
class TableWrite:
    """One committed write, as a copy in memory replays it (lexical_memory.MemoryCopy)."""

    chunk_rows: tuple[tuple[Any, ...], ...] = ()
    """Chunk rows added or replaced: (id, body, symbol, path)."""
    chunk_removed: tuple[int, ...] = ()
    """Chunk ids dropped."""
    file: str | None = None
    """The file whose whole-file row was replaced (or dropped when `file_row` is None)."""
    file_row: tuple[str, str] | None = None
    cleared: bool = False
    """Both tables emptied."""


def _file_id(path: Path | None) -> tuple[int, int, int] | None:
    """(inode, size, mtime): what changes when a writer replaces or checkpoints into the file."""
    try:
        info = os.stat(path) if path is not None else None
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns) if info else None


def _open_writer(path: Path | None) -> sqlite3.Connection:
    """The writer's database (created owner-only with the current schema; `None`: in memory)."""
    if path is not None:
        private_files.sqlite_file(path)  # its -wal and -shm get the same mode
    target = ":memory:" if path is None else str(path)
    db = sqlite3.connect(target, check_same_thread=False, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    _drop_if_old_schema(db)
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5("
        "body, symbol, path, tokenize='unicode61 remove_diacritics 0')"
    )
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS vocab USING fts5vocab(fts, 'row')")
    db.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS files_fts USING fts5("
        "file UNINDEXED, body, path, tokenize='unicode61 remove_diacritics 0')"
    )
    db.execute("CREATE TABLE IF NOT EXISTS file_keys (id INTEGER PRIMARY KEY, path TEXT UNIQUE)")
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
    row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    if row is None or row[0] != SCHEMA:  # written once: opening an index writes nothing
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA,))
    db.commit()
    return db


def _drop_if_old_schema(db: sqlite3.Connection) -> None:
    """Tables of an older layout are dropped; the indexer then rebuilds them from the store."""
    query = "SELECT name FROM sqlite_master WHERE type='table'"
    tables = {r[0] for r in db.execute(query)}
    if "meta" not in tables:
        return
    row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    if row and row[0] == SCHEMA:
        return
    for name in ("vocab", "fts", "files_fts", "file_keys", "meta"):
        db.execute(f"DROP TABLE IF EXISTS {name}")
    db.commit()


def _connect_read_only(path: Path, mode: str) -> sqlite3.Connection | None:
    """A connection for reads only (`mode`: "ro", or "ro&immutable=1"), transactions begun by
    hand; None if SQLite refuses it."""
    try:
        return sqlite3.connect(
            f"{path.as_uri()}?mode={mode}",
            uri=True,
            check_same_thread=False,
            isolation_level=None,
            timeout=5,
        )
    except sqlite3.Error:
        return None


def _open_reader(
    path: Path, generation: int, rows: int, short_lived: bool
) -> tuple[sqlite3.Connection, bool] | None:
    """(database in an open read transaction, opened immutable) if the file is stamped for
    `generation` with `rows` chunks, else None. Immutable: short-lived and no live writer (no
    -wal file), so nothing is created; else plain read-only (may create -wal/-shm)."""
    no_writer = not Path(f"{path}-wal").exists()
    mode = "ro&immutable=1" if short_lived and no_writer else "ro"
    if not path.is_file():
        return None
    db = _connect_read_only(path, mode)
    if db is None:
        return None
    try:
        db.execute("BEGIN")
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        count = int(db.execute("SELECT count(*) FROM fts").fetchone()[0])
        matches = (meta.get("schema"), meta.get("generation"), count) == (
            SCHEMA,
            str(generation),
            rows,
        )
    except sqlite3.Error:
        matches = False
    if not matches:
        db.close()
        return None
    return db, "immutable" in mode


def _put_file_row(db: sqlite3.Connection, path: str, row: tuple[str, str] | None) -> None:
    """Replace (or, with None, drop) a file's whole-file row, found by its key (no scan)."""
    found = db.execute("SELECT id FROM file_keys WHERE path = ?", (path,)).fetchone()
    if found is not None:
        db.execute("DELETE FROM files_fts WHERE rowid = ?", found)
    if row is None:
        db.execute("DELETE FROM file_keys WHERE path = ?", (path,))
        return
    key = (
        found[0]
        if found
        else db.execute("INSERT INTO file_keys (path) VALUES (?)", (path,)).lastrowid
    )
    db.execute(
        "INSERT INTO files_fts (rowid, file, body, path) VALUES (?, ?, ?, ?)", (key, path, *row)
    )


class FtsTables:
    """One connection to the tables; `version` counts changes (anything cached per version,
    like the in-memory copy, is stale once it moves). Every public method takes `lock`."""

    def __init__(
        self,
        path: Path | None,
        db: sqlite3.Connection,
        *,
        readonly: bool = False,
        immutable: bool = False,
        fallback: Fallback | None = None,
    ) -> None:
        self.path = path
        self.db = db
        self.lock = threading.RLock()
        self.readonly = readonly
        self._dirty = False
        self.version = 0
        self._rows: tuple[int, int] = (-1, 0)
        #: An immutable view's file identity at open, and where to turn when it changes.
        self._file_id = _file_id(path) if immutable else None
        self._fallback = fallback if immutable else None
        #: When the open write transaction began (None: nothing uncommitted).
        self._open_since: float | None = None
        #: Told of every committed write, under `lock`, with the version it made.
        self.on_write: Callable[[int, TableWrite], None] | None = None

    @classmethod
    def open(cls, path: Path | None) -> FtsTables:
        """The writer's tables (created if missing); `None` keeps them in memory."""
        return cls(path, _open_writer(path))

    @classmethod
    def open_snapshot(
        cls, path: Path, stamp: tuple[int, int], short_lived: bool, fallback: Fallback | None
    ) -> FtsTables | None:
        """A read-only view whose (generation, chunk rows) are `stamp`, or None if they differ.

        The check and every later query run in one read transaction, so a writer committing
        meanwhile is never seen. An immutable view's reads re-check the file's identity and
        turn to `fallback()` when it moved (see `LexicalIndex.open_snapshot`).
        """
        opened = _open_reader(path, *stamp, short_lived)
        if opened is None:
            return None
        db, immutable = opened
        return cls(path, db, readonly=True, immutable=immutable, fallback=fallback)

    def read(self, sql: str, args: tuple[object, ...] = ()) -> Rows:
        """One read; an immutable view whose file changed under it answers from its fallback."""
        try:
            rows: Rows | None = self.db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError:
            if self._file_id is None:
                raise
            rows = None
        if rows is None or (self._file_id is not None and _file_id(self.path) != self._file_id):
            self._leave_file()
            return self.db.execute(sql, args).fetchall()
        return rows

    def _leave_file(self) -> None:
        """Swap the moved file for the fallback's table (or an error if there is none)."""
        log.info("lexical index %s changed under a reader; answering from its snapshot", self.path)
        self._file_id = None
        if self._fallback is None:
            raise sqlite3.DatabaseError(f"{self.path} changed while it was read")
        replacement = self._fallback()
        old, self.db = self.db, replacement.db
        self.version += 1  # the cached document frequencies belong to the old table
        old.close()

    # ---- the generation stamp ------------------------------------------------------------
    def generation(self) -> int:
        """The snapshot generation the tables were stamped with; -1 with unsaved changes."""
        with self.lock:
            row = self.db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return int(row[0]) if row else -1

    def stamp(self, generation: int) -> None:
        """Record that the tables now match snapshot `generation` (committing every write)."""
        with self.lock:
            self._set_generation(generation)
            self.db.commit()
            self._open_since = None
            self._dirty = False

    def _commit(self) -> None:
        """End a write: writes share one transaction for COMMIT_SECONDS (a first pass writes
        ~1,800 files: one commit each cost FTS5 a segment and a merge per file, ~half of its
        write time). Nothing is lost by waiting: until `stamp` commits them with the snapshot
        they belong to, the tables claim no snapshot, and a reopened index rebuilds them."""
        now = time.monotonic()
        if self._open_since is None:
            self._open_since = now
        if now - self._open_since >= COMMIT_SECONDS:
            self.db.commit()
            self._open_since = None

    def _set_generation(self, generation: int) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?)", (str(generation),)
        )

    def _written(self, write: TableWrite) -> None:
        if self.on_write is not None:
            self.on_write(self.version, write)

    def _mark_dirty(self) -> None:
        """A change: a new version, and the stamp no longer claims any snapshot."""
        self.version += 1
        if not self._dirty:
            self._set_generation(-1)
            self._dirty = True

    # ---- writes, each one transaction ----------------------------------------------------
    def upsert(self, rows: list[tuple[int, str, str, str]]) -> None:
        """Add or replace chunk rows (id, body, symbol, path)."""
        with self.lock:
            self._mark_dirty()
            self.db.executemany("DELETE FROM fts WHERE rowid = ?", [(r[0],) for r in rows])
            self.db.executemany(
                "INSERT INTO fts (rowid, body, symbol, path) VALUES (?, ?, ?, ?)", rows
            )
            self._commit()
            self._written(TableWrite(chunk_rows=tuple(rows)))

    def replace_file_chunks(
        self,
        removed: list[int],
        rows: list[tuple[int, str, str, str]],
        path: str,
        file_row: tuple[str, str] | None,
    ) -> None:
        """A file's new chunks and whole-file row, its old chunks dropped: one transaction and
        one write to replay (three commits per file were a quarter of a first pass's FTS time)."""
        with self.lock:
            self._mark_dirty()
            db = self.db
            db.executemany("DELETE FROM fts WHERE rowid = ?", [(i,) for i in removed])
            db.executemany("DELETE FROM fts WHERE rowid = ?", [(r[0],) for r in rows])
            db.executemany("INSERT INTO fts (rowid, body, symbol, path) VALUES (?, ?, ?, ?)", rows)
            _put_file_row(db, path, file_row)
            self._commit()
            self._written(
                TableWrite(
                    chunk_rows=tuple(rows),
                    chunk_removed=tuple(removed),
                    file=path,
                    file_row=file_row,
                )
            )

    def replace_file(self, path: str, row: tuple[str, str] | None) -> None:
        """Set a file's whole-file row (body, path tokens); None just drops it."""
        with self.lock:
            self._mark_dirty()
            _put_file_row(self.db, path, row)
            self._commit()
            self._written(TableWrite(file=path, file_row=row))

    def remove(self, keys: list[tuple[int]]) -> None:
        """Drop chunk rows by id."""
        with self.lock:
            self._mark_dirty()
            self.db.executemany("DELETE FROM fts WHERE rowid = ?", keys)
            self._commit()
            self._written(TableWrite(chunk_removed=tuple(k[0] for k in keys)))

    def clear(self) -> None:
        """Empty both tables."""
        with self.lock:
            self._mark_dirty()
            self.db.execute("DELETE FROM fts")
            self.db.execute("DELETE FROM files_fts")
            self.db.execute("DELETE FROM file_keys")
            self.db.commit()
            self._open_since = None
            self._written(TableWrite(cleared=True))

    # ---- reads ---------------------------------------------------------------------------
    def count(self) -> int:
        """Chunk rows."""
        with self.lock:
            return int(self.read("SELECT count(*) FROM fts")[0][0])

    def top_k(self, table: str, terms: Iterable[str], limit: int) -> Rows:
        """(key, score) best first from `table` ("fts" or "files_fts"); score is -bm25."""
        match = " OR ".join(f'"{t}"' for t in terms)
        with self.lock:
            return self.read(_TOP_K[table], (match, limit))

    def doc_frequencies(self, terms: list[str]) -> dict[str, int]:
        """term → chunks containing it, for these terms only (an indexed lookup, ~0.5 ms)."""
        if not terms:
            return {}
        marks = ",".join("?" * len(terms))
        sql = f"SELECT term, doc FROM vocab WHERE term IN ({marks})"
        with self.lock:
            return {str(t): int(d) for t, d in self.read(sql, tuple(terms))}

    def row_count(self) -> int:
        """Chunks in the table, counted once per change (a count costs ~13 ms on 15k rows)."""
        with self.lock:
            version, rows = self._rows
            if version != self.version:
                rows = int(self.read("SELECT count(*) FROM fts")[0][0])
                self._rows = (self.version, rows)
            return rows

    @contextmanager
    def snapshot_rows(
        self,
    ) -> Iterator[tuple[int, Iterable[tuple[Any, ...]], Iterable[tuple[Any, ...]]]]:
        """(version, chunk rows, file rows), all at one version (for the in-memory copy).

        A writer's tables on disk are streamed from a second connection whose read transaction
        is pinned, under the lock, at `version` (WAL: later commits stay unseen), so the build
        never holds every row at once (zig's std: ~+95 MB of row text at the peak) and writers
        and queries go on meanwhile. Tables in memory and read-only views are read whole, under
        the lock, as before (a second connection would see other rows than their snapshot)."""
        with self.lock:
            version = self.version  # a fallback switch during the reads makes these stale
            reader = self._pinned_reader()
            if reader is None:
                chunk_rows = self.read(_CHUNK_ROWS)
                file_rows = self.read(_FILE_ROWS)
        if reader is None:
            yield version, chunk_rows, file_rows
            return
        try:
            yield version, reader.execute(_CHUNK_ROWS), reader.execute(_FILE_ROWS)
        finally:
            reader.close()

    def _pinned_reader(self) -> sqlite3.Connection | None:
        """A read-only connection in a read transaction holding every write made so far
        (committed first); None for tables in memory and read-only views. Caller holds `lock`."""
        if self.path is None or self.readonly:
            return None
        if self._open_since is not None:  # a reader sees only committed rows
            self.db.commit()
            self._open_since = None
        reader = _connect_read_only(self.path, "ro")
        if reader is None:
            return None
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM meta").fetchone()  # the snapshot starts here
        except sqlite3.Error:
            reader.close()
            return None
        return reader

    def close(self) -> None:
        """Release the database (a writer's last writes committed first)."""
        with self.lock:
            if self._open_since is not None:
                self.db.commit()
            self.db.close()
