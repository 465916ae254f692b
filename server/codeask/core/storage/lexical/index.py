"""BM25 over chunks: code-aware tokens, query planning, and the index that answers top-k.

Tokens are code-aware: `parseHttpRequest` and `parse_http_request` both index as `parse`,
`http`, `request` and the whole identifier (`parsehttprequest`), so a query may name either the
identifier or its words. Rows are tokenized by tokens.py into plain `[a-z0-9]+` words; the tables
are BM25 postings (bm25.py, FTS5's formula) in segment files read through memory maps (disk.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from codeask.core.records import HISTORY_KINDS, Chunk
from codeask.core.storage.lexical.asked import STOPWORDS as STOPWORDS  # moved there
from codeask.core.storage.lexical.asked import askable
from codeask.core.storage.lexical.bm25 import CHUNK_WEIGHTS, FILE_WEIGHTS, LiveTable
from codeask.core.storage.lexical.disk import SCHEMA as SCHEMA  # moved there
from codeask.core.storage.lexical.disk import DiskTables, TableWrite
from codeask.core.storage.lexical.tokens import code_tokens as code_tokens
from codeask.core.storage.lexical.tokens import identifier_parts as identifier_parts
from codeask.core.storage.lexical.tokens import token_text

MAX_QUERY_TERMS = 48
#: Chunk rows per write of a rebuild (a first pass writes one file's rows at a time).
REBUILD_ROWS = 2000
#: A term in more than this share of the chunks is left out of a query (see `_informative`).
MAX_DF_SHARE = 0.2
#: ... but a term in at most this many chunks is always kept (small folders need no trimming).
MIN_DF_CEILING = 500
#: A plain prose word of a question (not part of an identifier, a path or a call).
PROSE_WORD = re.compile(r"(?<![\w.`'\"/-])[A-Za-z][a-z]{4,}(?![\w`'\"(/-])")
#: Inflection endings and their replacements, longest first (see `stems`).
INFLECTIONS = (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))


def query_terms(text: str) -> list[str]:
    """Distinct informative tokens of a query, in order of first appearance."""
    seen: dict[str, None] = {}
    for token in code_tokens(text):
        if askable(token):  # the rule the postings follow (asked.py)
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


def doc_columns(chunk: Chunk, path_tokens: str | None = None) -> tuple[str, str, str]:
    """(body, symbol, path) as the FTS columns index them; shared by every lexical table
    (local, overlay re-scoring, the published tsvector) so all tokenize alike. `path_tokens`:
    the path column when the caller has it already (`token_text(chunk.path)`)."""
    body = chunk.text if chunk.docstring in chunk.text else f"{chunk.docstring}\n{chunk.text}"
    symbol = f"{chunk.parent} {chunk.symbol}"
    return (
        token_text(body),
        token_text(symbol),
        token_text(chunk.path) if path_tokens is None else path_tokens,
    )


def chunks_columns(chunks: Iterable[Chunk]) -> list[tuple[str, str, str]]:
    """`doc_columns` of each chunk, each distinct path tokenized once (a chunk worker's file:
    all its chunks share one path)."""
    paths: dict[str, str] = {}
    out = []
    for chunk in chunks:
        path = paths.get(chunk.path)
        if path is None:
            path = paths[chunk.path] = token_text(chunk.path)
        out.append(doc_columns(chunk, path))
    return out


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
    return " ".join(c[0] for c in columns), token_text(path)


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
    """Chunk and whole-file BM25 of one folder: segment files memory-mapped from `path` (a
    folder; None: in memory), stamped with the store generation they match (disk.py)."""

    #: bm25 column weights: body, symbol (name + parent), path.
    WEIGHTS = CHUNK_WEIGHTS
    #: The whole-file table's weights (see bm25.FILE_WEIGHTS).
    FILE_WEIGHTS = FILE_WEIGHTS

    def __init__(self, path: Path | None) -> None:
        self.tables = DiskTables.open(path)

    @classmethod
    def open_snapshot(cls, path: Path, generation: int, rows: int) -> LexicalIndex | None:
        """A read-only view of the tables as stamped for `generation` with `rows` chunk rows,
        or None if they differ. The segment files it maps are never changed by a writer (only
        removed, which leaves a mapping readable), so a view never pairs snapshot N with rows
        of N+1 and creates no file."""
        tables = DiskTables.open_snapshot(path, generation, rows)
        if tables is None:
            return None
        view = cls.__new__(cls)
        view.tables = tables
        return view

    @property
    def path(self) -> Path | None:
        """The tables' folder (None: in memory)."""
        return self.tables.folder

    @property
    def readonly(self) -> bool:
        """A reader's view (`open_snapshot`): never written."""
        return self.tables.readonly

    def generation(self) -> int:
        """The snapshot generation this table was stamped with; -1 when it has unsaved changes."""
        return self.tables.generation()

    def stamp(self, generation: int) -> None:
        """Save the changes and record that the table now matches snapshot `generation`."""
        self.tables.stamp(generation)

    def upsert(self, chunks: Iterable[Chunk]) -> None:
        """Add or replace chunks (by id)."""
        rows = tuple((c.id, *doc_columns(c)) for c in chunks)
        if rows:
            self.tables.write(TableWrite(chunk_rows=rows))

    def replace_file(
        self,
        path: str,
        removed: Iterable[int],
        chunks: Sequence[Chunk],
        columns: Sequence[tuple[str, str, str]] | None = None,
    ) -> None:
        """A file's chunks replaced (`removed` dropped) and its whole-file row rebuilt, each
        chunk's columns tokenized once (`columns`: already, by the caller)."""
        if columns is None:
            columns = [doc_columns(c) for c in chunks]
        rows = tuple((c.id, *cols) for c, cols in zip(chunks, columns, strict=True))
        row = file_row(path, [tuple(cols) for cols in columns])  # type: ignore[misc]
        write = TableWrite(rows, tuple(removed), path, row, file_from_chunks=True)
        self.tables.write(write)

    def upsert_file(self, path: str, chunks: Iterable[Chunk]) -> None:
        """Whole-file row: long questions match files whose terms are spread over many chunks."""
        row = file_row(path, [doc_columns(c) for c in chunks])
        self.tables.write(TableWrite(file=path, file_row=row))

    def remove_file(self, path: str) -> None:
        """Drop a whole-file row."""
        self.tables.write(TableWrite(file=path))

    def remove(self, ids: Iterable[int]) -> None:
        """Drop chunks by id."""
        removed = tuple(ids)
        if removed:
            self.tables.write(TableWrite(chunk_removed=removed))

    def clear(self) -> None:
        """Empty the table (before a rebuild)."""
        self.tables.clear()

    def rebuild(self, chunks: Iterable[Chunk]) -> None:
        """Refill both tables from the store's chunks (after a crash or a damaged file)."""
        chunk_rows, file_rows = table_rows(chunks)
        with self.tables.lock:
            self.clear()
            for start in range(0, len(chunk_rows), REBUILD_ROWS):
                self.tables.write(TableWrite(tuple(chunk_rows[start : start + REBUILD_ROWS])))
            for path, body, path_tokens in file_rows:
                self.tables.write(TableWrite(file=path, file_row=(body, path_tokens)))

    def count(self) -> int:
        """Rows in the table."""
        return self.tables.count()

    def search(self, query: str, limit: int = 100) -> list[tuple[int, float]]:
        """(chunk id, score) best first; score is -bm25, so higher is better."""
        return [(int(cast(int, key)), float(s)) for key, s in self._top_k(query, True, limit)]

    def search_files(self, query: str, limit: int = 100) -> list[tuple[str, float]]:
        """(path, score) best first, whole-file BM25."""
        return [(str(key), float(s)) for key, s in self._top_k(query, False, limit)]

    def _top_k(self, query: str, chunks: bool, limit: int) -> list[tuple[Any, Any]]:
        """(key, score) of a table for the query's informative terms (see `informative_terms`:
        none found in more than MAX_DF_SHARE of the chunks of a big folder, at most the rarest
        MAX_QUERY_TERMS, the rarest one if all are common)."""
        terms = query_terms(query)
        if not terms:
            return []
        tables = self.tables
        with tables.lock:
            terms = informative_terms(terms, tables.chunks)
            if not terms:
                return []
            return (tables.chunks if chunks else tables.files).search(terms, limit)

    def warm_up(self) -> None:
        """Index the rows written since the last read now (a server when a run ends), so the
        next search does not pay for them."""
        self.tables.settle()

    def close(self) -> None:
        """Nothing to release but the maps, which go with the tables."""
