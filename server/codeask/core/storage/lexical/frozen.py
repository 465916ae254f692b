"""Both lexical tables of a fixed set of chunks in memory: a published revision's BM25.

A published revision never changes, so its chunk and whole-file tables are built once from its
rows (the same tokens, rows and column weights as the local tables: `lexical.table_rows`)
and answered by `bm25.LiveTable` with FTS5's BM25 and the local term selection
(`lexical.informative_terms`). Lexical search over the team backend then ranks exactly as the
local backend does over the same chunks, in the local backend's time: PostgreSQL's `ts_rank`
has no idf and took 90-300 ms on long issue texts (benchmarks/README.md, "Team backend").

`LazyLexical` decides when: the first MEMORY_AFTER_QUERIES queries go to the caller's fallback
(the SQL path), then a background thread reads every row once and builds the tables; a server
can build at once (`warm_up`). A one-shot CLI search never pays for the build.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import cast

from codeask.core.records import Chunk
from codeask.core.runtime import background
from codeask.core.storage.lexical.bm25 import CHUNK_WEIGHTS, FILE_WEIGHTS, LiveTable, Postings
from codeask.core.storage.lexical.index import informative_terms, query_terms, table_rows

log = logging.getLogger(__name__)

#: Queries the caller's fallback answers before the tables are built in the background.
MEMORY_AFTER_QUERIES = 3


class FrozenLexical:
    """The chunk and whole-file BM25 tables of a fixed set of chunks."""

    def __init__(self, chunks: LiveTable, files: LiveTable) -> None:
        self.chunks = chunks
        self.files = files

    @classmethod
    def build(cls, chunks: Iterable[Chunk]) -> FrozenLexical:
        chunk_rows, file_rows = table_rows(chunks)
        return cls(
            LiveTable(Postings.build(chunk_rows, CHUNK_WEIGHTS), CHUNK_WEIGHTS, tie_by_key=True),
            LiveTable(Postings.build(file_rows, FILE_WEIGHTS), FILE_WEIGHTS),
        )

    def _terms(self, query: str) -> list[str]:
        terms = query_terms(query)
        return informative_terms(terms, self.chunks) if terms else []

    def search(self, query: str, limit: int) -> list[tuple[int, float]]:
        """(chunk id, BM25) best first, as `LexicalIndex.search`."""
        terms = self._terms(query)
        if not terms or limit <= 0:
            return []
        return [(int(cast(int, key)), score) for key, score in self.chunks.search(terms, limit)]

    def search_files(self, query: str, limit: int) -> list[tuple[str, float]]:
        """(path, BM25 of the whole-file row) best first, as `LexicalIndex.search_files`."""
        terms = self._terms(query)
        if not terms or limit <= 0:
            return []
        return [(str(key), score) for key, score in self.files.search(terms, limit)]


class LazyLexical:
    """A `FrozenLexical` of `load()`'s chunks, built in the background once it is worth it."""

    def __init__(
        self,
        load: Callable[[], Iterable[Chunk]],
        name: str,
        after: int | None = MEMORY_AFTER_QUERIES,
    ) -> None:
        """`after`: queries answered by the fallback before the background build starts
        (None: only `warm_up` builds)."""
        self._load = load
        self._name = name
        self._after = after
        self._lock = threading.Lock()
        self._queries = 0
        self._building = False
        self.built: FrozenLexical | None = None
        self.build_seconds = 0.0

    def for_query(self) -> FrozenLexical | None:
        """The tables if built; else None (the caller answers), counting toward a build."""
        if self.built is not None:
            return self.built
        with self._lock:
            self._queries += 1
            start = self._after is not None and self._queries >= self._after and not self._building
            if start:
                self._building = True
        if start:
            background.start(self._build, name="team-bm25")
        return None

    def warm_up(self) -> None:
        """Build now, in this thread, unless built or being built."""
        with self._lock:
            if self.built is not None or self._building:
                return
            self._building = True
        self._build()

    def _build(self) -> None:
        started = time.perf_counter()
        try:
            self.built = FrozenLexical.build(self._load())
            self.build_seconds = time.perf_counter() - started
            log.info("%s: lexical tables in memory (%.2f s)", self._name, self.build_seconds)
        except Exception as exc:  # the database went away meanwhile: the fallback keeps answering
            log.warning("%s: lexical tables not built (%s); will try again", self._name, exc)
            with self._lock:
                self._queries = 0
        finally:
            with self._lock:
                self._building = False
