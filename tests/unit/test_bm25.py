"""The in-memory BM25 answers exactly as FTS5 does, and never from a stale table."""

from __future__ import annotations

import random
from pathlib import Path

from tests.unit.test_lexical import make_chunk

from codeask.core.storage.lexical.bm25 import LiveTable, Postings
from codeask.core.storage.lexical.index import LexicalIndex

WORDS = [f"w{i}" for i in range(60)] + ["parse", "request", "cookie", "session", "embed"]


def corpus(count: int, seed: int = 3) -> list:  # type: ignore[type-arg]
    rng = random.Random(seed)
    chunks = []
    for i in range(1, count + 1):
        body = " ".join(rng.choices(WORDS, k=rng.randint(3, 60)))
        symbol = rng.choice(WORDS) + "_" + rng.choice(WORDS)
        path = f"pkg/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        chunks.append(make_chunk(i, path, symbol, f"def {symbol}():\n    {body}\n"))
    return chunks


def test_postings_rank_exactly_as_fts5(tmp_path: Path) -> None:
    """Same rows, same order, same scores for random OR-queries (ties broken by row order)."""
    index = LexicalIndex(tmp_path / "lexical.sqlite")
    index.upsert(corpus(400))
    rows = index.tables.read("SELECT rowid, body, symbol, path FROM fts")
    memory = Postings.build(rows, LexicalIndex.WEIGHTS)
    rng = random.Random(9)
    for _ in range(60):
        query = " ".join(rng.sample(WORDS, rng.randint(1, 8)))
        terms = index._informative(query.split())
        fts = index.search(query, 50)  # three queries or fewer: FTS5 answers
        assert index.memory.built is None
        mine = [(int(str(k)), s) for k, s in memory.search(terms, 50)]
        assert [i for i, _ in mine] == [i for i, _ in fts], query
        assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(mine, fts, strict=True))
        index.memory.fts_queries = (-1, 0)  # keep the background build out of this comparison
    index.close()


def test_search_uses_memory_only_for_the_version_it_was_built_from(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "lexical.sqlite")
    index.upsert(corpus(200))
    before = index.search("parse request cookie", 20)
    index.warm_up()
    assert index.memory.built is not None and index.memory.built[0] == index.tables.version
    after = index.search("parse request cookie", 20)
    assert [i for i, _ in after] == [i for i, _ in before]
    assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(after, before, strict=True))
    fresh = make_chunk(999, "pkg/new.py", "uniqueword", "def uniqueword():\n    pass\n")
    index.upsert([fresh])  # a write: the copy in memory is stale from here on
    assert index.search("uniqueword", 5)[0][0] == 999
    index.remove([999])
    assert index.search("uniqueword", 5) == []
    index.close()


def test_a_write_during_a_build_is_replayed_onto_it(tmp_path: Path) -> None:
    """The build reads at version N; a write makes N+1 meanwhile; the copy catches up to N+1."""
    index = LexicalIndex(tmp_path / "lexical.sqlite")
    index.upsert(corpus(100))
    original = Postings.build
    late = make_chunk(500, "pkg/late.py", "lateword", "def lateword():\n    x\n")

    def slow_build(rows: object, weights: object) -> Postings:
        if not index.search("lateword", 5):
            index.upsert([late])
        return original(rows, weights)  # type: ignore[arg-type]

    Postings.build = slow_build  # type: ignore[method-assign, assignment]
    try:
        index.warm_up()
    finally:
        Postings.build = original  # type: ignore[method-assign]
    assert index.memory.current() is not None
    assert index.search("lateword", 5)[0][0] == 500
    index.close()


def fts5_and_memory(index: LexicalIndex, query: str, table: str) -> tuple[list, list]:  # type: ignore[type-arg]
    """The same query answered by FTS5 and by the copy in memory (same informative terms)."""
    terms = index._informative(query.split())
    memory = index.memory.current()
    assert memory is not None
    live = memory[1] if table == "fts" else memory[2]
    return index.tables.top_k(table, terms, 40), live.search(terms, 40)


def test_writes_replayed_in_memory_rank_exactly_as_fts5(tmp_path: Path) -> None:
    """Random saves (chunks replaced, added, removed; file rows replaced and dropped) replayed
    onto the copy: after each one both tables rank exactly as FTS5 does, with no rebuild."""
    index = LexicalIndex(tmp_path / "lexical.sqlite")
    chunks = {c.id: c for c in corpus(300)}
    index.upsert(chunks.values())
    for path in sorted({c.path for c in chunks.values()}):
        index.upsert_file(path, [c for c in chunks.values() if c.path == path])
    index.warm_up()
    copy = index.memory.built
    assert copy is not None
    rng = random.Random(5)
    fresh = iter(range(1000, 2000))
    for step in range(40):
        replaced = rng.sample(sorted(chunks), 3)
        gone = rng.choice(sorted(chunks))
        new = [next(fresh) for _ in range(rng.randint(0, 3))]
        written = [c for c in corpus(1000, seed=step) if c.id <= 4]
        for cid, template in zip([*replaced, *new], written * 2, strict=False):
            path = chunks[cid].path if cid in chunks else template.path
            chunks[cid] = make_chunk(cid, path, template.symbol, template.text)
        index.upsert([chunks[c] for c in [*replaced, *new]])
        index.remove([gone])
        touched = chunks.pop(gone).path
        index.upsert_file(touched, [c for c in chunks.values() if c.path == touched])
        assert index.memory.built is not None and index.memory.built[1] is copy[1], "rebuilt"
        for table in ("fts", "files_fts"):
            query = " ".join(rng.sample(WORDS, rng.randint(1, 6)))
            fts, mine = fts5_and_memory(index, query, table)
            assert [k for k, _ in mine] == [k for k, _ in fts], (step, table, query)
            assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(mine, fts, strict=True))
    assert len(copy[1].segments) <= 9  # small segments merged as they accumulate
    index.close()


def test_a_large_write_drops_the_copy_and_clear_too(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "lexical.sqlite")
    index.upsert(corpus(100))
    index.warm_up()
    assert index.memory.current() is not None
    index.upsert(
        [make_chunk(5000 + i, "pkg/big.py", f"s{i}", "def f():\n    x\n") for i in range(2100)]
    )
    assert index.memory.built is None  # rebuilt from the tables on demand, not replayed
    assert index.search("s7", 5)[0][0] == 5007
    index.warm_up()
    index.clear()
    assert index.memory.built is None and index.search("s7", 5) == []
    index.close()


def test_files_table_in_memory_matches_fts5(tmp_path: Path) -> None:
    index = LexicalIndex(tmp_path / "lexical.sqlite")
    chunks = corpus(120)
    index.upsert(chunks)  # the query's terms are picked by their frequency in the chunk table
    for path in sorted({c.path for c in chunks}):
        index.upsert_file(path, [c for c in chunks if c.path == path])
    fts = index.search_files("parse session embed w3", 30)
    index.warm_up()
    memory = index.search_files("parse session embed w3", 30)
    assert index.memory.built is not None
    assert [p for p, _ in memory] == [p for p, _ in fts] and len(fts) > 5
    assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(memory, fts, strict=True))
    index.close()


def test_a_build_in_small_batches_holds_the_same_postings(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Rows are read in batches bounded by count and by text (whole files are ~100x a chunk),
    each batch's counts summed at once: every term's rows and weighted frequencies, the row
    lengths and every search are those of a build in one batch."""
    from codeask.core.storage.lexical import bm25

    index = LexicalIndex(tmp_path / "lexical.sqlite")
    index.upsert(corpus(300))
    rows = index.tables.read("SELECT rowid, body, symbol, path FROM fts")
    index.close()
    whole = Postings.build(rows, LexicalIndex.WEIGHTS, batch=10_000)
    monkeypatch.setattr(bm25, "BUILD_CHARS", 500)  # a few rows per batch
    pieces = Postings.build(rows, LexicalIndex.WEIGHTS, batch=7)
    assert pieces.key_list() == whole.key_list() and pieces.average == whole.average
    assert (pieces.lengths == whole.lengths).all()
    assert len(pieces.slices) == len(whole.slices) == len(list(whole.slices.terms()))
    for term in whole.slices.terms():
        a, b = slice(*whole.slices.get(term)), slice(*pieces.slices.get(term))
        assert (whole.rows[a] == pieces.rows[b]).all() and (whole.freqs[a] == pieces.freqs[b]).all()
    rng = random.Random(5)
    for _ in range(30):
        terms = rng.sample(WORDS, rng.randint(1, 6))
        assert pieces.search(terms, 40) == whole.search(terms, 40)
    assert pieces.slices.get("no-such-term") == (0, 0)


def naive_postings(rows: list, weights: tuple) -> dict:  # type: ignore[type-arg]
    """term → {row position: weighted tf}, counted one token at a time."""
    found: dict[str, dict[int, float]] = {}
    for position, row in enumerate(rows):
        for column, weight in enumerate(weights, start=1):
            for token in str(row[column] or "").split():
                per_row = found.setdefault(token, {})
                per_row[position] = per_row.get(position, 0.0) + weight
    return found


def test_the_compact_copy_holds_every_terms_postings_and_plain_keys(tmp_path: Path) -> None:
    """The copy's vocabulary, postings and keys, whatever their layout in memory: every term's
    rows and weighted frequencies are those counted token by token, an unknown term (before,
    between or after every known one) has none, and searches hand back plain int / str keys."""
    index = LexicalIndex(tmp_path / "lexical.sqlite")
    chunks = corpus(250)
    index.upsert(chunks)
    for path in sorted({c.path for c in chunks}):
        index.upsert_file(path, [c for c in chunks if c.path == path])
    chunk_rows = index.tables.read("SELECT rowid, body, symbol, path FROM fts")
    file_rows = index.tables.read("SELECT file, body, path FROM files_fts")
    index.close()
    for rows, weights, kind in ((chunk_rows, (1.0, 4.0, 2.0), int), (file_rows, (2.0, 1.0), str)):
        postings = Postings.build(rows, weights)
        expected = naive_postings(rows, weights)
        assert sorted(postings.slices.terms()) == sorted(expected)
        assert len(postings.slices) == len(expected)
        for term, per_row in expected.items():
            a, b = postings.slices.get(term)
            assert postings.rows[a:b].tolist() == sorted(per_row), term
            assert postings.freqs[a:b].tolist() == [per_row[r] for r in sorted(per_row)], term
            assert postings.doc_frequency(term) == len(per_row)
        for missing in ("", "!", "w0x", "zzzz", "\uffff"):
            assert postings.slices.get(missing) == (0, 0) and postings.doc_frequency(missing) == 0
        assert postings.key_list() == [row[0] for row in rows]
        hits = postings.search(["parse", "w3", "session"], 30)
        assert hits and all(type(key) is kind and type(score) is float for key, score in hits)
        live = LiveTable(postings, weights, tie_by_key=kind is int)
        assert live.search(["parse", "w3", "session"], 30) == hits
        live.apply([], [rows[0][0]])  # a write: its rows are found by their plain keys
        assert rows[0][0] not in {key for key, _ in live.search(["parse", "w3", "session"], 300)}


def test_a_streamed_build_reads_the_tables_as_they_were_at_its_version(tmp_path: Path) -> None:
    """The copy's rows stream from a second connection while writes go on: a chunk added, one
    replaced and one dropped halfway through the read are not in the rows the build sees, and
    once their writes are replayed the copy ranks exactly as FTS5 does."""
    index = LexicalIndex(tmp_path / "lexical.sqlite")
    index.upsert(corpus(300))
    original = Postings.build
    seen: list[list[object]] = []
    changed = make_chunk(7, "pkg/changed.py", "changedword", "def changedword():\n    y\n")

    def build_while_writing(rows: object, weights: object) -> Postings:
        taken = []
        for row in rows:  # type: ignore[attr-defined]
            taken.append(row)
            if len(taken) == 10 and not seen:  # writes land halfway through the first table
                index.upsert([make_chunk(900, "pkg/late.py", "lateword", "def lateword():\n")])
                index.upsert([changed])
                index.remove([250])
        seen.append([row[0] for row in taken])
        return original(taken, weights)  # type: ignore[arg-type]

    Postings.build = build_while_writing  # type: ignore[method-assign, assignment]
    try:
        index.warm_up()
    finally:
        Postings.build = original  # type: ignore[method-assign]
    chunk_keys = [int(str(k)) for k in seen[0]]
    assert 900 not in chunk_keys and 250 in chunk_keys and len(chunk_keys) == 300
    assert index.memory.current() is not None  # the three writes were replayed onto it
    for query in ("lateword", "changedword", "parse request cookie w3 w17", "session embed w40"):
        fts, memory = fts5_and_memory(index, query, "fts")
        assert [int(str(k)) for k, _ in memory] == [k for k, _ in fts], query
    assert [k for k, _ in index.search("lateword changedword", 5)][:2] in ([900, 7], [7, 900])
    index.close()


def test_the_build_never_holds_every_row_at_once(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Python's peak during a build of the copy stays under the tables' text: rows come from a
    cursor batch by batch (read whole, both tables' rows were ~2.8x the chunk text here, and a
    big repository's whole-file rows tens of MB at once)."""
    import tracemalloc

    from codeask.core.storage.lexical import bm25

    index = LexicalIndex(tmp_path / "lexical.sqlite")
    rng = random.Random(11)
    chunks = [
        make_chunk(i, f"pkg/m{i % 50}.py", f"f{i}", " ".join(rng.choices(WORDS, k=3000)))
        for i in range(1, 601)
    ]
    index.upsert(chunks)
    text = sum(len(c.text) for c in chunks)  # ~6 MB of chunk text, as much again in files
    monkeypatch.setattr(bm25, "BUILD_CHARS", 100_000)
    tracemalloc.start()
    try:
        index.warm_up()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert index.memory.current() is not None
    assert peak < text, (peak, text)  # read whole: 20.4 MB for 7.3 MB of text; streamed: 5.0
    index.close()
