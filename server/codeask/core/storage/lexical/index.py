"""BM25 over chunks: code-aware tokens, query planning, and the index that answers top-k.

Tokens are code-aware: `parseHttpRequest` and `parse_http_request` both index as `parse`,
`http`, `request` and the whole identifier (`parsehttprequest`), so a query may name either the
identifier or its words. We tokenize in Python and hand FTS5 plain `[a-z0-9]+` words, which keeps
its own tokenizer out of the way. The tables live in SQLite FTS5 (fts.py); the same tables in
memory (bm25.py, storage/lexical/memory.py) answer repeated queries with the same scores, much
faster.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from codeask.core.records import HISTORY_KINDS, Chunk
from codeask.core.storage.lexical.bm25 import LiveTable
from codeask.core.storage.lexical.fts import CHUNK_WEIGHTS, FILE_WEIGHTS, FtsTables
from codeask.core.storage.lexical.fts import SCHEMA as SCHEMA  # moved there
from codeask.core.storage.lexical.memory import MemoryCopy

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
#: ... but a term in at most this many chunks is always kept (small folders need no trimming).
MIN_DF_CEILING = 500
#: A plain prose word of a question (not part of an identifier, a path or a call).
PROSE_WORD = re.compile(r"(?<![\w.`'\"/-])[A-Za-z][a-z]{4,}(?![\w`'\"(/-])")
#: Inflection endings and their replacements, longest first (see `stems`).
INFLECTIONS = (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))


def identifier_parts(identifier: str) -> list[str]:
    """`HTTPServer_config2` → ['http', 'server', 'config', '2'] (lower-cased)."""
    parts: list[str] = []
    for piece in identifier.split("_"):
        parts.extend(p.lower() for p in CAMEL_PART.findall(piece))
    return parts


def code_tokens(text: str) -> list[str]:
    """Whole identifiers (underscores dropped) plus their snake/Camel parts, lower-cased."""
    tokens: list[str] = []
    for word in IDENTIFIER.findall(text):
        tokens.extend(_word_tokens(word))
    return tokens


@functools.lru_cache(maxsize=1 << 16)
def _word_tokens(word: str) -> tuple[str, ...]:
    """One identifier's tokens. Cached: code repeats its identifiers, and splitting each
    occurrence again was over half of a first pass's time (sphinx-sized folders)."""
    whole = word.replace("_", "").lower()
    if not whole:
        return ()
    parts = identifier_parts(word)
    return (whole, *parts) if len(parts) > 1 else (whole,)


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


def doc_columns(chunk: Chunk) -> tuple[str, str, str]:
    """(body, symbol, path) as the FTS columns index them; shared by every lexical table
    (local, overlay re-scoring, the published tsvector) so all tokenize alike."""
    body = chunk.text if chunk.docstring in chunk.text else f"{chunk.docstring}\n{chunk.text}"
    symbol = f"{chunk.parent} {chunk.symbol}"
    return (
        " ".join(code_tokens(body)),
        " ".join(code_tokens(symbol)),
        " ".join(code_tokens(chunk.path)),
    )


def table_rows(
    chunks: Iterable[Chunk],
) -> tuple[list[tuple[int, str, str, str]], list[tuple[str, str, str]]]:
    """The rows of both lexical tables for these chunks: (id, body, symbol, path) per chunk
    and (path, body, path tokens) per file of code chunks (history chunks have no file row),
    files in the order of their first chunk."""
    chunk_rows: list[tuple[int, str, str, str]] = []
    by_file: dict[str, list[tuple[str, str, str]]] = {}
    for chunk in chunks:
        columns = doc_columns(chunk)
        chunk_rows.append((chunk.id, *columns))
        if chunk.kind not in HISTORY_KINDS:
            by_file.setdefault(chunk.path, []).append(columns)
    file_rows = []
    for path, file_columns in by_file.items():
        row = file_row(path, file_columns)
        if row is not None:
            file_rows.append((path, *row))
    return chunk_rows, file_rows


def file_row(path: str, columns: list[tuple[str, str, str]]) -> tuple[str, str] | None:
    """A file's whole-file row (body, path tokens) from its chunks' columns; None: no chunks."""
    if not columns:
        return None
    return " ".join(c[0] for c in columns), " ".join(code_tokens(path))


def informative_terms(terms: list[str], table: LiveTable) -> list[str]:
    """`terms` worth a lookup in `table` (see `LexicalIndex._informative`)."""
    found = ((t, table.doc_frequency(t)) for t in terms)
    return _rarest(terms, {t: n for t, n in found if n}, table.row_count())


def _rarest(terms: list[str], freq: dict[str, int], rows: int) -> list[str]:
    present = sorted((t for t in terms if t in freq), key=lambda t: freq[t])
    ceiling = max(MAX_DF_SHARE * rows, MIN_DF_CEILING)
    kept = [t for t in present if freq[t] <= ceiling] or present[:1]
    return kept[:MAX_QUERY_TERMS]


class LexicalIndex:
    """Chunk and whole-file BM25 of one folder: FTS5 tables (`tables`) stamped with the store
    generation they match, answered from the in-memory copy (`memory`) when it is current."""

    #: bm25 column weights: body, symbol (name + parent), path.
    WEIGHTS = CHUNK_WEIGHTS
    #: The whole-file table's weights (see fts.FILE_WEIGHTS).
    FILE_WEIGHTS = FILE_WEIGHTS

    def __init__(self, path: Path | None) -> None:
        self._attach(FtsTables.open(path))

    def _attach(self, tables: FtsTables) -> None:
        self.tables = tables
        self._lock = tables.lock
        self.memory = MemoryCopy(tables)

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
        tables_of = None if fallback is None else (lambda: fallback().tables)
        tables = FtsTables.open_snapshot(path, (generation, rows), short_lived, tables_of)
        if tables is None:
            return None
        view = cls.__new__(cls)
        view._attach(tables)
        return view

    @property
    def path(self) -> Path | None:
        """The database file (None: in memory)."""
        return self.tables.path

    @property
    def readonly(self) -> bool:
        """A reader's view (`open_snapshot`): never written."""
        return self.tables.readonly

    def generation(self) -> int:
        """The snapshot generation this table was stamped with; -1 when it has unsaved changes."""
        return self.tables.generation()

    def stamp(self, generation: int) -> None:
        """Record that the table now matches snapshot `generation`."""
        self.tables.stamp(generation)

    def upsert(self, chunks: Iterable[Chunk]) -> None:
        """Add or replace chunks (by id) in one transaction."""
        rows = [(c.id, *doc_columns(c)) for c in chunks]
        if rows:
            self.tables.upsert(rows)

    def replace_file(
        self,
        path: str,
        removed: Iterable[int],
        chunks: Sequence[Chunk],
        columns: Sequence[tuple[str, str, str]] | None = None,
    ) -> None:
        """A file's chunks replaced (`removed` dropped) and its whole-file row rebuilt, in one
        transaction, each chunk's columns tokenized once (`columns`: already, by the caller)."""
        if columns is None:
            columns = [doc_columns(c) for c in chunks]
        rows = [(c.id, *cols) for c, cols in zip(chunks, columns, strict=True)]
        file_columns = [(body, symbol, path_tokens) for _, body, symbol, path_tokens in rows]
        self.tables.replace_file_chunks(list(removed), rows, path, file_row(path, file_columns))

    def upsert_file(self, path: str, chunks: Iterable[Chunk]) -> None:
        """Whole-file row: long questions match files whose terms are spread over many chunks."""
        self.tables.replace_file(path, file_row(path, [doc_columns(c) for c in chunks]))

    def remove_file(self, path: str) -> None:
        """Drop a whole-file row."""
        self.tables.replace_file(path, None)

    def remove(self, ids: Iterable[int]) -> None:
        """Drop chunks by id."""
        keys = [(i,) for i in ids]
        if keys:
            self.tables.remove(keys)

    def clear(self) -> None:
        """Empty the table (before a rebuild)."""
        self.tables.clear()

    def rebuild(self, chunks: Iterable[Chunk]) -> None:
        """Refill both tables from the store's chunks (after a crash or a damaged file)."""
        chunk_rows, file_rows = table_rows(chunks)
        with self._lock:
            self.clear()
            if chunk_rows:
                self.tables.upsert(chunk_rows)
            for path, body, path_tokens in file_rows:
                self.tables.replace_file(path, (body, path_tokens))

    def count(self) -> int:
        """Rows in the table."""
        return self.tables.count()

    def search(self, query: str, limit: int = 100) -> list[tuple[int, float]]:
        """(chunk id, score) best first; score is -bm25, so higher is better."""
        return [(int(cast(int, key)), float(s)) for key, s in self._top_k(query, "fts", limit)]

    def search_files(self, query: str, limit: int = 100) -> list[tuple[str, float]]:
        """(path, score) best first, whole-file BM25."""
        return [(str(key), float(s)) for key, s in self._top_k(query, "files_fts", limit)]

    def _top_k(self, query: str, table: str, limit: int) -> list[tuple[Any, Any]]:
        """(key, score) of `table` for the query's informative terms, from memory if current."""
        terms = query_terms(query)
        if not terms:
            return []
        with self._lock:
            terms = self._informative(terms)
            if not terms:
                return []
            memory = self.memory.for_query()
            if memory is not None:
                postings = memory[1] if table == "fts" else memory[2]
                return postings.search(terms, limit)
            return self.tables.top_k(table, terms, limit)

    def _informative(self, terms: list[str]) -> list[str]:
        """Terms worth a lookup: none found in more than MAX_DF_SHARE of the chunks of a big
        folder (their idf is near zero, and each costs FTS5 a scan of its long posting list;
        dropping them left the dev set's R@5 unchanged), at most the
        rarest MAX_QUERY_TERMS (long issue texts stay fast); the rarest one if all are common."""
        memory = self.memory.current()
        if memory is not None:
            return informative_terms(terms, memory[1])
        freq, rows = self.tables.doc_frequencies(terms), self.tables.row_count()
        return _rarest(terms, freq, rows)

    def warm_up(self) -> None:
        """Build the in-memory copy now, in this thread, unless it is current or being built
        (a server's indexing thread calls this when a run ends, so the next search is fast)."""
        self.memory.warm_up()

    def close(self) -> None:
        """Release the database."""
        with self._lock:
            self.memory.built = None
            self.tables.close()
