"""BM25 over chunks with code-aware tokens."""

from __future__ import annotations

from pathlib import Path

from codeask.core.records import Chunk
from codeask.core.storage.lexical.index import LexicalIndex, code_tokens, query_terms


def make_chunk(chunk_id: int, path: str, symbol: str, text: str) -> Chunk:
    lines = text.count("\n") + 1
    return Chunk(
        id=chunk_id,
        path=path,
        language="python",
        kind="function",
        start_line=1,
        end_line=lines,
        text=text,
        symbol=symbol,
    )


def test_identifiers_keep_whole_and_parts() -> None:
    tokens = code_tokens("parseHttpRequest(max_retry_count) HTTPServer")
    assert "parsehttprequest" in tokens
    assert {"parse", "http", "request"} <= set(tokens)
    assert {"maxretrycount", "max", "retry", "count"} <= set(tokens)
    assert {"httpserver", "server"} <= set(tokens)


def test_query_terms_drop_stopwords_and_duplicates() -> None:
    assert query_terms("How does the retry of the Retry logic work?") == ["retry", "logic", "work"]


def test_search_finds_snake_and_camel_forms(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "lexical")
    index.upsert(
        [
            make_chunk(
                1, "net/http.py", "parse_http_request", "def parse_http_request(raw):\n    ..."
            ),
            make_chunk(2, "db/pool.py", "open_pool", "def open_pool(size):\n    ..."),
        ]
    )
    assert index.search("parseHttpRequest")[0][0] == 1
    assert index.search("http request parsing")[0][0] == 1
    assert index.search("connection pool")[0][0] == 2
    assert index.search("the of and") == []


def test_incremental_update_and_remove(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "lexical")
    index.upsert([make_chunk(1, "a.py", "alpha", "def alpha(): pass")])
    index.upsert([make_chunk(1, "a.py", "beta", "def beta(): pass")])
    assert index.count() == 1
    assert index.search("alpha") == []
    assert index.search("beta")[0][0] == 1
    index.remove([1])
    assert index.count() == 0


def test_generation_stamp_marks_unsaved_changes(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "lexical")
    index.stamp(3)
    assert index.generation() == 3
    index.upsert([make_chunk(7, "a.py", "f", "def f(): pass")])
    assert index.generation() == -1, "a change after a stamp must not claim to match the snapshot"
    index.close()
    reopened = LexicalIndex(tmp_path / "lexical")
    assert (reopened.generation(), reopened.count()) == (3, 0), "the last save, as stamped"


def test_long_queries_keep_the_rarest_terms(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "lexical")
    common = " ".join(f"word{i}" for i in range(80))
    chunks = [make_chunk(i, f"f{i}.py", f"f{i}", f"{common}\nfiller") for i in range(1, 30)]
    chunks.append(make_chunk(99, "special.py", "needle", f"{common}\nzanzibar_needle"))
    index.upsert(chunks)
    hits = index.search(common + " zanzibar_needle")
    assert hits[0][0] == 99
