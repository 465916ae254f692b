"""BM25 over chunks, on SQLite FTS5 (standard library, incremental, crash-safe transactions).

Tokens are code-aware: `parseHttpRequest` and `parse_http_request` both index as `parse`,
`http`, `request` and the whole identifier (`parsehttprequest`), so a query may name either the
identifier or its words. We tokenize in Python and hand FTS5 plain `[a-z0-9]+` words, which keeps
its own tokenizer out of the way.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, cast

from codeask.core.bm25 import Postings
from codeask.core.records import Chunk

log = logging.getLogger(__name__)

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
STOPWORDS = frozenset(
    """
    a an and are as at be but by can do does for from has have how i if in into is it its of
    on or so that the then there these this to was we what when where which while who why
    will with would you your not no yes all any some my me our us they them their he she his
    her been being were should could may might must also just only very more most other such
    than too using use used get got
    """.split()  # noqa: SIM905
)
MAX_QUERY_TERMS = 48
#: A term in more than this share of the chunks is left out of a query (see `_informative`).
MAX_DF_SHARE = 0.2
#: FTS5 queries at one table version before the in-memory copy is built (see `_in_memory`).
MEMORY_AFTER_QUERIES = 3
#: ... but a term in at most this many chunks is always kept (small folders need no trimming).
MIN_DF_CEILING = 500
#: A plain prose word of a question (not part of an identifier, a path or a call).
PROSE_WORD = re.compile(r"(?<![\w.`'\"/-])[A-Za-z][a-z]{4,}(?![\w`'\"(/-])")
#: Inflection endings and their replacements, longest first (see `stems`).
INFLECTIONS = (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))
SCHEMA = "2"


def identifier_parts(identifier: str) -> list[str]:
    """`HTTPServer_config2` → ['http', 'server', 'config', '2'] (lower-cased)."""
    parts: list[str] = []
    for piece in identifier.split("_"):
        parts.extend(p.lower() for p in CAMEL_PART.findall(piece))
    return parts


def code_tokens(text: str) -> list[str]:
    """Whole identifiers (underscores dropped) plus their snake/Camel parts, lower-cased."""
    tokens: list[str] = []
    for match in IDENTIFIER.finditer(text):
        word = match.group()
        whole = word.replace("_", "").lower()
        if not whole:
            continue
        parts = identifier_parts(word)
        tokens.append(whole)
        if len(parts) > 1:
            tokens.extend(parts)
    return tokens


def query_terms(text: str) -> list[str]:
    """Distinct informative tokens of a query, in order of first appearance."""
    seen: dict[str, None] = {}
    for token in code_tokens(text):
        if len(token) > 1 and token not in STOPWORDS and not token.isdigit():
            seen.setdefault(token, None)
    return list(seen)


def expand_query(question: str) -> str:
    """The question plus the stems of its inflected prose words.

    Questions are prose ("how are chunks embedded?", "where is parsing done?") while code says
    `embed`, `parse`, `chunk`; the lexical index matches whole tokens without stemming, so
    the stems are appended as extra (OR-ed) terms. Identifiers are left as they are.
    """
    words = {m.group().lower() for m in PROSE_WORD.finditer(question)}
    extra: list[str] = []
    for word in sorted(words):
        extra.extend(s for s in stems(word) if s not in words and s not in extra)
    return f"{question}\n{' '.join(extra)}" if extra else question


def stems(word: str) -> list[str]:
    """Likely base forms of an English inflection: embedded → embed, cached → cache,
    queries → query, classes → class, files → file. Spurious forms cost nothing: a term
    no chunk contains matches nothing."""
    if word in STOPWORDS or word.endswith(("ss", "us", "is", "eed")):
        return []
    suffix, repl = next(((s, r) for s, r in INFLECTIONS if word.endswith(s)), ("", ""))
    stem = word[: len(word) - len(suffix)]
    if not suffix or len(stem) < (4 if suffix == "ing" else 3):  # not "string" → "str"
        return []
    forms = [stem + repl]
    if suffix in ("ing", "ed"):
        if stem[-1] == stem[-2] and stem[-1] not in "lsz":
            forms.append(stem[:-1])  # embedded → embed, running → run (not install, pass)
        forms.append(stem + "e")  # cached → cache, parsing → parse
    elif suffix == "es":
        forms.append(word[:-1])  # files → file, caches → cache
    return [form for form in forms if len(form) >= 3]


def _doc_columns(chunk: Chunk) -> tuple[str, str, str]:
    body = chunk.text if chunk.docstring in chunk.text else f"{chunk.docstring}\n{chunk.text}"
    symbol = f"{chunk.parent} {chunk.symbol}"
    return (
        " ".join(code_tokens(body)),
        " ".join(code_tokens(symbol)),
        " ".join(code_tokens(chunk.path)),
    )


def _file_id(path: Path | None) -> tuple[int, int, int] | None:
    """(inode, size, mtime): what changes when a writer replaces or checkpoints into the file."""
    try:
        info = os.stat(path) if path is not None else None
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns) if info else None


class LexicalIndex:
    """FTS5 table keyed by chunk id, plus a generation stamp that says which snapshot it matches."""

    #: bm25 column weights: body, symbol (name + parent), path.
    WEIGHTS = (1.0, 4.0, 2.0)
    #: The whole-file table's weights as FTS5 applies `bm25(files_fts, 1.0, 2.0)`: the first
    #: weight goes to the unindexed `file` column, so body counts 2.0 and path the default 1.0.
    FILE_WEIGHTS = (2.0, 1.0)

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.RLock()
        target = ":memory:" if path is None else str(path)
        self._db = sqlite3.connect(target, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._drop_if_old_schema()
        self._db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5("
            "body, symbol, path, tokenize='unicode61 remove_diacritics 0')"
        )
        self._db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS vocab USING fts5vocab(fts, 'row')")
        self._db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS files_fts USING fts5("
            "file UNINDEXED, body, path, tokenize='unicode61 remove_diacritics 0')"
        )
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None or row[0] != SCHEMA:  # written once: opening an index writes nothing
            self._db.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA,)
            )
        self._db.commit()
        self._init_state()

    def _init_state(self) -> None:
        self.readonly = False
        self._dirty = False
        self._version = 0
        self._rows: tuple[int, int] = (-1, 0)
        #: The tables in memory (version, chunks, files), once built for the current version.
        self._memory: tuple[int, Postings, Postings] | None = None
        self._fts_queries = (-1, 0)
        self._building = False
        #: An immutable view's file identity at open, and where to turn when it changes.
        self._file_id: tuple[int, int, int] | None = None
        self._fallback: Callable[[], LexicalIndex] | None = None

    @classmethod
    def open_snapshot(
        cls,
        path: Path,
        generation: int,
        rows: int,
        *,
        short_lived: bool = True,
        fallback: Callable[[], LexicalIndex] | None = None,
    ) -> LexicalIndex | None:
        """A read-only view of the table as stamped for `generation`, or None if it differs.

        For readers (`search`, `status`, a server that does not own the folder): the check and
        every later query run in one read transaction, so a writer committing meanwhile is
        never seen and snapshot N is never paired with rows of N+1. A short-lived reader (a CLI
        run) creates no file: without a live writer (no -wal file) it opens the database
        immutable. A long-lived one (a read-only server) opens it plain read-only, which may
        create the -wal/-shm files but stays correct when a writer starts later.

        SQLite trusts an immutable file not to change; a writer that starts and checkpoints
        during the read would hand it torn pages. So every read re-checks the file's identity
        (inode, size, mtime) and, when it moved or SQLite fails, the view switches to
        `fallback()` (the reader's own snapshot, rebuilt in memory) and reads again.
        """
        no_writer = not Path(f"{path}-wal").exists()
        mode = "ro&immutable=1" if short_lived and no_writer else "ro"
        if not path.is_file():
            return None
        try:
            db = sqlite3.connect(
                f"{path.as_uri()}?mode={mode}",
                uri=True,
                check_same_thread=False,
                isolation_level=None,
                timeout=5,
            )
        except sqlite3.Error:
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
        view = cls.__new__(cls)
        view.path, view._lock, view._db = path, threading.RLock(), db
        view._init_state()
        view.readonly = True
        if "immutable" in mode:
            view._file_id, view._fallback = _file_id(path), fallback
        return view

    def _read(self, sql: str, args: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        """One read; an immutable view whose file changed under it answers from its fallback."""
        try:
            rows: list[tuple[Any, ...]] | None = self._db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError:
            if self._file_id is None:
                raise
            rows = None
        if rows is None or (self._file_id is not None and _file_id(self.path) != self._file_id):
            self._leave_file()
            return self._db.execute(sql, args).fetchall()
        return rows

    def _leave_file(self) -> None:
        """Swap the moved file for the fallback's table (or an error if there is none)."""
        log.info("lexical index %s changed under a reader; answering from its snapshot", self.path)
        self._file_id = None
        if self._fallback is None:
            raise sqlite3.DatabaseError(f"{self.path} changed while it was read")
        replacement = self._fallback()
        old, self._db = self._db, replacement._db
        self._version += 1  # the cached document frequencies belong to the old table
        old.close()

    def _drop_if_old_schema(self) -> None:
        """Tables of an older layout are dropped; the indexer then rebuilds them from the store."""
        query = "SELECT name FROM sqlite_master WHERE type='table'"
        tables = {r[0] for r in self._db.execute(query)}
        if "meta" not in tables:
            return
        row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row and row[0] == SCHEMA:
            return
        for name in ("vocab", "fts", "files_fts", "meta"):
            self._db.execute(f"DROP TABLE IF EXISTS {name}")
        self._db.commit()

    def generation(self) -> int:
        """The snapshot generation this table was stamped with; -1 when it has unsaved changes."""
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return int(row[0]) if row else -1

    def stamp(self, generation: int) -> None:
        """Record that the table now matches snapshot `generation`."""
        with self._lock:
            self._set_generation(generation)
            self._db.commit()
            self._dirty = False

    def _set_generation(self, generation: int) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?)", (str(generation),)
        )

    def _mark_dirty(self) -> None:
        self._version += 1
        if not self._dirty:
            self._set_generation(-1)
            self._dirty = True

    def upsert(self, chunks: Iterable[Chunk]) -> None:
        """Add or replace chunks (by id) in one transaction."""
        rows = [(c.id, *_doc_columns(c)) for c in chunks]
        if not rows:
            return
        with self._lock:
            self._mark_dirty()
            self._db.executemany("DELETE FROM fts WHERE rowid = ?", [(r[0],) for r in rows])
            self._db.executemany(
                "INSERT INTO fts (rowid, body, symbol, path) VALUES (?, ?, ?, ?)", rows
            )
            self._db.commit()

    def upsert_file(self, path: str, chunks: Iterable[Chunk]) -> None:
        """Whole-file row: long questions match files whose terms are spread over many chunks."""
        columns = [_doc_columns(c) for c in chunks]
        with self._lock:
            self._mark_dirty()
            self._db.execute("DELETE FROM files_fts WHERE file = ?", (path,))
            if columns:
                body = " ".join(c[0] for c in columns)
                self._db.execute(
                    "INSERT INTO files_fts (file, body, path) VALUES (?, ?, ?)",
                    (path, body, " ".join(code_tokens(path))),
                )
            self._db.commit()

    def remove_file(self, path: str) -> None:
        """Drop a whole-file row."""
        with self._lock:
            self._mark_dirty()
            self._db.execute("DELETE FROM files_fts WHERE file = ?", (path,))
            self._db.commit()

    def search_files(self, query: str, limit: int = 100) -> list[tuple[str, float]]:
        """(path, score) best first, whole-file BM25."""
        terms = query_terms(query)
        with self._lock:
            terms = self._informative(terms)
            if not terms:
                return []
            memory = self._in_memory()
            if memory is not None:
                return [(str(f), s) for f, s in memory[2].search(terms, limit)]
            match = " OR ".join(f'"{t}"' for t in terms)
            sql = (
                "SELECT file, -bm25(files_fts, 1.0, 2.0) FROM files_fts WHERE files_fts MATCH ? "
                "ORDER BY bm25(files_fts, 1.0, 2.0) LIMIT ?"
            )
            return [(str(f), float(s)) for f, s in self._read(sql, (match, limit))]

    def remove(self, ids: Iterable[int]) -> None:
        """Drop chunks by id."""
        keys = [(i,) for i in ids]
        if not keys:
            return
        with self._lock:
            self._mark_dirty()
            self._db.executemany("DELETE FROM fts WHERE rowid = ?", keys)
            self._db.commit()

    def clear(self) -> None:
        """Empty the table (before a rebuild)."""
        with self._lock:
            self._mark_dirty()
            self._db.execute("DELETE FROM fts")
            self._db.execute("DELETE FROM files_fts")
            self._db.commit()

    def rebuild(self, chunks: Iterable[Chunk]) -> None:
        """Refill both tables from the store's chunks (after a crash or a damaged file)."""
        by_file: dict[str, list[Chunk]] = {}
        with self._lock:
            self.clear()
            code = []
            for chunk in chunks:
                code.append(chunk)
                if chunk.kind not in ("commit", "hunk"):
                    by_file.setdefault(chunk.path, []).append(chunk)
            self.upsert(code)
            for path, file_chunks in by_file.items():
                self.upsert_file(path, file_chunks)

    def count(self) -> int:
        """Rows in the table."""
        with self._lock:
            return int(self._read("SELECT count(*) FROM fts")[0][0])

    def _informative(self, terms: list[str]) -> list[str]:
        """Terms worth a lookup: none found in more than MAX_DF_SHARE of the chunks of a big
        folder (their idf is near zero, and each costs FTS5 a scan of its long posting list;
        dropping them left the dev set's R@5 unchanged), at most the
        rarest MAX_QUERY_TERMS (long issue texts stay fast); the rarest one if all are common."""
        memory = self._current_memory()
        if memory is not None:
            found = ((t, memory[1].doc_frequency(t)) for t in terms)
            freq = {t: n for t, n in found if n}
            rows = len(memory[1].keys)
        else:
            freq, rows = self._doc_frequencies(terms), self._row_count()
        present = sorted((t for t in terms if t in freq), key=lambda t: freq[t])
        ceiling = max(MAX_DF_SHARE * rows, MIN_DF_CEILING)
        kept = [t for t in present if freq[t] <= ceiling] or present[:1]
        return kept[:MAX_QUERY_TERMS]

    def _doc_frequencies(self, terms: list[str]) -> dict[str, int]:
        """term → chunks containing it, for these terms only (an indexed lookup, ~0.5 ms)."""
        if not terms:
            return {}
        marks = ",".join("?" * len(terms))
        sql = f"SELECT term, doc FROM vocab WHERE term IN ({marks})"
        return {str(t): int(d) for t, d in self._read(sql, tuple(terms))}

    def _row_count(self) -> int:
        """Chunks in the table, counted once per change (a count costs ~13 ms on 15k rows)."""
        version, rows = self._rows
        if version != self._version:
            rows = int(self._read("SELECT count(*) FROM fts")[0][0])
            self._rows = (self._version, rows)
        return rows

    def search(self, query: str, limit: int = 100) -> list[tuple[int, float]]:
        """(chunk id, score) best first; score is -bm25, so higher is better."""
        terms = query_terms(query)
        if not terms:
            return []
        with self._lock:
            terms = self._informative(terms)
            if not terms:
                return []
            memory = self._in_memory()
            if memory is not None:
                return [(int(cast(int, r)), s) for r, s in memory[1].search(terms, limit)]
            match = " OR ".join(f'"{t}"' for t in terms)
            weights = ", ".join(str(w) for w in self.WEIGHTS)
            sql = (
                f"SELECT rowid, -bm25(fts, {weights}) AS s FROM fts WHERE fts MATCH ? "
                "ORDER BY bm25(fts, " + weights + ") LIMIT ?"
            )
            return [(int(r), float(s)) for r, s in self._read(sql, (match, limit))]

    def _current_memory(self) -> tuple[int, Postings, Postings] | None:
        """The in-memory copy if it was built from the table as it is now, else None."""
        memory = self._memory
        return memory if memory is not None and memory[0] == self._version else None

    def _in_memory(self) -> tuple[int, Postings, Postings] | None:
        """The tables in memory if they match the current version; else None, and after a few
        FTS5 queries at one version a background build starts (a one-shot CLI search never
        pays for it; a server or benchmark does once per change). Caller holds the lock."""
        memory = self._current_memory()
        if memory is not None:
            return memory
        version, queries = self._fts_queries
        queries = queries + 1 if version == self._version else 1
        self._fts_queries = (self._version, queries)
        if queries >= MEMORY_AFTER_QUERIES and not self._building:
            self._building = True
            threading.Thread(target=self._build_memory, name="lexical-memory", daemon=True).start()
        return None

    def warm_up(self) -> None:
        """Build the in-memory copy now, in this thread, unless it is current or being built
        (a server's indexing thread calls this when a run ends, so the next search is fast)."""
        with self._lock:
            if self._current_memory() is not None or self._building:
                return
            self._building = True
        self._build_memory()

    def _build_memory(self) -> None:
        """Read both tables at one version and index them in memory; dropped if a write
        lands meanwhile (the next queries start another build)."""
        try:
            with self._lock:
                version = self._version
                chunk_rows = self._read("SELECT rowid, body, symbol, path FROM fts")
                file_rows = self._read("SELECT file, body, path FROM files_fts")
            chunks = Postings.build(chunk_rows, self.WEIGHTS)
            files = Postings.build(file_rows, self.FILE_WEIGHTS)
            with self._lock:
                if self._version == version:
                    self._memory = (version, chunks, files)
        except (sqlite3.Error, ValueError) as exc:  # closed meanwhile, or a torn read
            log.debug("lexical index %s: no in-memory copy: %s", self.path, exc)
        finally:
            self._building = False

    def close(self) -> None:
        """Release the database."""
        with self._lock:
            self._memory = None
            self._db.close()
