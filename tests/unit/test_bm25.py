"""The lexical tables (postings in memory or memory-mapped segment files, with the writes made
since) rank exactly as SQLite FTS5's BM25 did over the same rows; FTS5 is only the reference."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import numpy as np
from tests.unit.test_lexical import make_chunk

from codeask.core.records import Chunk
from codeask.core.storage.lexical import bm25, disk
from codeask.core.storage.lexical.asked import askable
from codeask.core.storage.lexical.bm25 import (
    CHUNK_WEIGHTS,
    FILE_WEIGHTS,
    LiveTable,
    Postings,
    StringColumn,
    TermSlices,
)
from codeask.core.storage.lexical.file_postings import build_pair
from codeask.core.storage.lexical.index import (
    LexicalIndex,
    doc_columns,
    file_row,
    informative_terms,
    table_rows,
)

WORDS = [f"w{i}" for i in range(60)] + ["parse", "request", "cookie", "session", "embed"]
_TOP_K = {
    "fts": "SELECT rowid, -bm25(fts, 1.0, 4.0, 2.0) FROM fts WHERE fts MATCH ? "
    "ORDER BY bm25(fts, 1.0, 4.0, 2.0) LIMIT ?",
    "files_fts": "SELECT file, -bm25(files_fts, 1.0, 2.0) FROM files_fts WHERE files_fts MATCH ? "
    "ORDER BY bm25(files_fts, 1.0, 2.0) LIMIT ?",
}


def corpus(count: int, seed: int = 3) -> list[Chunk]:
    rng = random.Random(seed)
    chunks = []
    for i in range(1, count + 1):
        body = " ".join(rng.choices(WORDS, k=rng.randint(3, 60)))
        symbol = rng.choice(WORDS) + "_" + rng.choice(WORDS)
        path = f"pkg/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"
        chunks.append(make_chunk(i, path, symbol, f"def {symbol}():\n    {body}\n"))
    return chunks


def fts5(chunk_rows: list, file_rows: list) -> sqlite3.Connection:  # type: ignore[type-arg]
    """The tables as lexical.sqlite held them (FTS5, rows already tokenized), in memory."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE fts USING fts5(body, symbol, path)")
    db.execute("CREATE VIRTUAL TABLE files_fts USING fts5(file UNINDEXED, body, path)")
    db.executemany("INSERT INTO fts (rowid, body, symbol, path) VALUES (?, ?, ?, ?)", chunk_rows)
    db.executemany("INSERT INTO files_fts (file, body, path) VALUES (?, ?, ?)", file_rows)
    return db


def same_ranking(mine: list, fts: list) -> None:  # type: ignore[type-arg]
    assert [k for k, _ in mine] == [k for k, _ in fts]
    assert all(abs(a - b) < 1e-9 for (_, a), (_, b) in zip(mine, fts, strict=True))


def check_against_fts5(index: LexicalIndex, chunk_rows: list, file_rows: list, seed: int) -> None:  # type: ignore[type-arg]
    """Random OR-queries: both tables of `index` rank as FTS5 over the same rows."""
    db = fts5(chunk_rows, file_rows)
    rng = random.Random(seed)
    for _ in range(25):
        query = " ".join(rng.sample(WORDS, rng.randint(1, 8)))
        terms = informative_terms(query.split(), index.tables.chunks)
        match = " OR ".join(f'"{t}"' for t in terms)
        same_ranking(index.search(query, 40), db.execute(_TOP_K["fts"], (match, 40)).fetchall())
        files = db.execute(_TOP_K["files_fts"], (match, 40)).fetchall()
        same_ranking(index.search_files(query, 40), files)


def test_postings_rank_exactly_as_fts5() -> None:
    """Same rows, same order, same scores for random OR-queries (ties broken by row order)."""
    chunk_rows, file_rows = table_rows(corpus(400))
    index = LexicalIndex(None)
    index.rebuild(corpus(400))
    check_against_fts5(index, chunk_rows, file_rows, seed=9)


def test_tokens_no_query_asks_for_get_no_postings_and_every_score_is_fts5s() -> None:
    """Stopwords, one-character tokens and numbers (`query_terms` drops them) are left out of
    the postings and the term dictionary, not out of the rows' lengths: FTS5, which indexes
    them, ranks the same rows with the same scores (issue 42: a fifth of a pass's postings)."""
    unasked = ["the", "if", "i", "x", "0", "42", "0x1f", "for"]
    rng = random.Random(5)
    chunks = [
        make_chunk(
            i,
            f"pkg/{rng.choice(WORDS)}.py",
            rng.choice(WORDS),
            " ".join(rng.choices(WORDS + unasked * 6, k=rng.randint(3, 60))),
        )
        for i in range(1, 300)
    ]
    chunk_rows, file_rows = table_rows(chunks)
    index = LexicalIndex(None)
    index.rebuild(chunks)
    for table in (index.tables.chunks, index.tables.files):
        for token in ("the", "if", "i", "x", "0", "42", "1", "f", "for"):
            assert table.doc_frequency(token) == 0
        assert table.doc_frequency("w1") > 0
    check_against_fts5(index, chunk_rows, file_rows, seed=6)


def test_saved_segments_and_edits_rank_exactly_as_fts5(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A first pass written as several segment files, then random saves (chunks replaced, added,
    removed; file rows replaced and dropped) each written as a small delta and masks, folded past
    MAX_SMALL: the writer, and a reader mapping the files, rank exactly as FTS5 over the rows."""
    monkeypatch.setattr(disk, "SEGMENT_CHARS", 20_000)  # a few base segments ...
    monkeypatch.setattr(disk, "MAX_MERGE_POSTINGS", 20_000)  # ... some of them folded
    folder = tmp_path / "lexical"
    index = LexicalIndex(folder)
    chunks = {c.id: c for c in corpus(300)}
    files: dict[str, None] = {}
    for path in sorted({c.path for c in chunks.values()}):
        mine = [c for c in chunks.values() if c.path == path]
        index.replace_file(path, [], mine)
        files[path] = None
    assert len(list(folder.glob("seg-*"))) > 2, "the first pass wrote segments as it went"
    index.stamp(1)
    rng = random.Random(5)
    fresh = iter(range(1000, 2000))
    for step in range(2, 30):
        touched = chunks[rng.choice(sorted(chunks))].path
        old = [c.id for c in chunks.values() if c.path == touched]
        new = [chunks.pop(i) for i in old[1:]]
        for template in corpus(4, seed=step)[: rng.randint(0, 3)]:
            new.append(make_chunk(next(fresh), touched, template.symbol, template.text))
        chunks.update({c.id: c for c in new})
        del chunks[old[0]]
        index.replace_file(touched, old, new)
        files.pop(touched)
        if new:
            files[touched] = None
        index.stamp(step)
    for table in (index.tables.chunks, index.tables.files):  # the deltas were folded
        assert 0 < sum(s.small for s in table.segments) <= disk.MAX_SMALL
    current = {c.id: c for c in chunks.values()}
    chunk_rows, _ = table_rows(sorted(current.values(), key=lambda c: c.id))
    by_path = {p: [c for c in current.values() if c.path == p] for p in files}
    file_rows = [row for p in files for row in table_rows(by_path[p])[1]]
    check_against_fts5(index, chunk_rows, file_rows, seed=1)
    reader = LexicalIndex.open_snapshot(folder, 29, len(current))
    assert reader is not None and reader.readonly
    check_against_fts5(reader, chunk_rows, file_rows, seed=2)
    reopened = LexicalIndex(folder)
    assert reopened.generation() == 29 and reopened.count() == len(current)
    check_against_fts5(reopened, chunk_rows, file_rows, seed=3)


def test_an_edit_writes_a_small_delta_and_leaves_the_base_file(tmp_path: Path) -> None:
    """After a full pass, a one-file save writes a segment of that file's rows and a mask: the
    base segment files stay as they are (same name, same bytes on disk)."""
    folder = tmp_path / "lexical"
    index = LexicalIndex(folder)
    chunks = corpus(400)
    index.rebuild(chunks)
    index.stamp(1)
    base = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.glob("seg-*")}
    edited = make_chunk(5000, chunks[7].path, "freshword", "def freshword():\n    pass\n")
    index.replace_file(chunks[7].path, [chunks[7].id], [edited])
    index.stamp(2)
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.glob("seg-*")}
    assert base.items() <= after.items()
    added = [folder / n for n in after.keys() - base.keys()]
    assert len(added) == 2  # the chunk table's delta and the whole-file table's
    base_bytes = sum((folder / n).stat().st_size for n in base)
    assert sum(p.stat().st_size for p in added) < base_bytes / 20
    assert index.search("freshword", 3)[0][0] == 5000
    reader = LexicalIndex.open_snapshot(folder, 2, 400)
    assert reader is not None and reader.search("freshword", 3)[0][0] == 5000


def test_a_stamp_names_one_generation_and_anything_else_is_rebuilt(tmp_path: Path) -> None:
    """Writes after a stamp claim no snapshot until the next; a reader asks for the generation
    and row count it loaded and gets nothing for any other; a damaged file leaves empty tables
    (stamped -1: the writer rebuilds them)."""
    folder = tmp_path / "lexical"
    index = LexicalIndex(folder)
    index.rebuild(corpus(50))
    index.stamp(4)
    index.upsert([make_chunk(77, "a.py", "f", "def f(): pass")])
    assert index.generation() == -1
    assert LexicalIndex(folder).generation() == 4, "unsaved writes are not on disk"
    assert LexicalIndex.open_snapshot(folder, 4, 50) is not None
    assert LexicalIndex.open_snapshot(folder, 5, 50) is None
    assert LexicalIndex.open_snapshot(folder, 4, 49) is None
    for segment in folder.glob("seg-*"):
        segment.write_bytes(segment.read_bytes()[:100])
    damaged = LexicalIndex(folder)
    assert damaged.generation() == -1 and damaged.count() == 0
    assert LexicalIndex.open_snapshot(folder, 4, 50) is None


def test_a_build_in_small_batches_holds_the_same_postings(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Rows are read in batches bounded by count and by text (whole files are ~100x a chunk),
    each batch's counts summed at once: every term's rows and weighted frequencies, the row
    lengths and every search are those of a build in one batch."""
    rows, _ = table_rows(corpus(300))
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
    """term → {row position: weighted tf}, counted one token at a time, of the terms a query
    can ask for (asked.py: the others get no postings)."""
    found: dict[str, dict[int, float]] = {}
    for position, row in enumerate(rows):
        for column, weight in enumerate(weights, start=1):
            for token in str(row[column] or "").split():
                if not askable(token):
                    continue
                per_row = found.setdefault(token, {})
                per_row[position] = per_row.get(position, 0.0) + weight
    return found


def test_weighted_frequencies_are_summed_in_column_order_bit_for_bit() -> None:
    """Weights that do not add exactly (0.1 + 0.1 + 0.7 is not 0.7 + 0.1 + 0.1): each row's
    frequency of a term is the sum a pass token by token, column by column, gives, to the last
    bit, in batches or not; and non-ASCII terms sort as Python sorts them."""
    rng = random.Random(11)
    words = [*WORDS[:12], "é", "ßa", "z", "zz", "\u4e2d\u6587", "\U0001d518x", "the", "42"]
    rows = [
        (i, *(" ".join(rng.choices(words, k=rng.randint(0, 25))) for _ in range(3)))
        for i in range(1, 200)
    ]
    weights = (0.1, 0.7, 0.3)
    expected = naive_postings(rows, weights)
    for batch in (7, 10_000):
        postings = Postings.build(rows, weights, batch=batch)
        assert list(postings.slices.terms()) == sorted(expected)
        for term, per_row in expected.items():
            a, b = postings.slices.get(term)
            assert postings.rows[a:b].tolist() == sorted(per_row), term
            assert postings.freqs[a:b].tolist() == [per_row[r] for r in sorted(per_row)], term


def test_merged_segments_hold_the_postings_of_a_build_of_their_live_rows() -> None:
    """Segments folded into one (disk.py's merges during a first pass) give exactly the
    postings, frequencies and lengths of one build over the rows still live, in their order,
    the terms sorted as Python sorts them."""
    from codeask.core.storage.lexical.bm25 import Segment, merge_segments

    rows, _ = table_rows(corpus(240))
    rows = [(key, f"{body} é \u4e2d{key % 3}", symbol, path) for key, body, symbol, path in rows]
    parts, live = [], []
    for n in range(4):
        part = rows[n * 60 : (n + 1) * 60]
        segment = Segment(Postings.build(part, CHUNK_WEIGHTS), np.arange(60) + n * 60)
        for position in range(n, 60, 5):
            segment.mask(position)
        parts.append(segment)
        live.extend(row for i, row in enumerate(part) if (i - n) % 5 or i < n)
    merged, order = merge_segments(parts)
    whole = Postings.build(live, CHUNK_WEIGHTS)
    assert merged.key_list() == whole.key_list() == [row[0] for row in live]
    terms = list(merged.slices.terms())  # a term only masked rows held keeps an empty slice
    assert terms == sorted(terms) and set(terms) >= set(whole.slices.terms())
    assert [t for t in terms if merged.doc_frequency(t)] == list(whole.slices.terms())
    assert (merged.rows == whole.rows).all() and (merged.freqs == whole.freqs).all()
    assert (merged.lengths == whole.lengths).all() and merged.average == whole.average
    assert order.tolist() == [row[0] - 1 for row in live]


def test_the_compact_copy_holds_every_terms_postings_and_plain_keys() -> None:
    """The vocabulary, postings and keys, whatever their layout: every term's rows and weighted
    frequencies are those counted token by token, an unknown term (before, between or after
    every known one) has none, and searches hand back plain int / str keys."""
    chunk_rows, file_rows = table_rows(corpus(250))
    for rows, weights, kind in ((chunk_rows, CHUNK_WEIGHTS, int), (file_rows, FILE_WEIGHTS, str)):
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


def test_a_first_pass_never_holds_more_than_a_segment_of_rows(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Rows written by a pass wait in memory only until SEGMENT_CHARS of their text: then they
    are a segment file, mapped (so a pass's memory does not grow with the tree)."""
    monkeypatch.setattr(disk, "SEGMENT_CHARS", 30_000)
    index = LexicalIndex(tmp_path / "lexical")
    monkeypatch.setattr(disk, "MAX_MERGE_POSTINGS", 40_000)
    chunks = corpus(1200)
    written = 0
    for chunk in chunks:
        index.replace_file(chunk.path + str(chunk.id), [], [chunk])
        for table in (index.tables.chunks, index.tables.files):
            assert table.pending_chars < disk.SEGMENT_CHARS
            assert sum(s.name is None for s in table.segments) <= disk.MAX_SMALL + 1
        names = {s.name for t in (index.tables.chunks, index.tables.files) for s in t.segments}
        on_disk = {p.name for p in (tmp_path / "lexical").glob("seg-*")}
        assert on_disk == names - {None}, "a folded segment's file was left behind"
        written = max(written, len(on_disk))
    assert written >= 4 and index.count() == 1200
    for table in (index.tables.chunks, index.tables.files):  # folded: ~log(rows) segments
        assert len(table.segments) <= 2 * disk.MERGE_FACTOR
    same = LexicalIndex(None)
    same.rebuild(chunks)
    for query in ("parse request", "w3 w17 cookie", "session embed w40"):
        assert index.search(query, 30) == same.search(query, 30)


def same_postings(mine: Postings, built: Postings) -> None:
    """Bit for bit: keys, term dictionary, postings, weighted tf (and dtypes), lengths."""
    assert mine.key_list() == built.key_list()
    assert list(mine.slices.terms()) == list(built.slices.terms())
    assert np.array_equal(mine.slices.starts, built.slices.starts)
    for field in ("rows", "freqs", "lengths"):
        ours, theirs = getattr(mine, field), getattr(built, field)
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), field
    assert (mine.average, mine.total) == (built.average, built.total)


def test_file_postings_derived_from_the_chunk_build_are_the_file_build_bit_for_bit(
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """The whole-file table summed from the chunk build's body groups (files of many chunks,
    batches cut inside a file, one file tokenized as usual, one file-only term) is exactly what
    tokenizing the joined file rows builds; the chunk table is unchanged."""
    monkeypatch.setattr(bm25, "BUILD_CHARS", 900)  # a few rows per batch, files cut across
    chunks = corpus(300)
    by_path: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_path.setdefault(chunk.path, []).append(chunk)
    chunk_rows: list[tuple[object, ...]] = []
    file_rows: list[tuple[object, ...]] = []
    parts: list[list[int] | None] = []
    for path, mine in by_path.items():
        columns = [doc_columns(c) for c in mine]
        parts.append(list(range(len(chunk_rows), len(chunk_rows) + len(mine))))
        chunk_rows.extend((c.id, *cols) for c, cols in zip(mine, columns, strict=True))
        row = file_row(path, columns)
        assert row is not None
        file_rows.append((path, *row))
    parts[1] = None
    file_rows[1] = (file_rows[1][0], file_rows[1][1] + " onlyinafile", file_rows[1][2])
    derived_chunks, derived_files = build_pair(chunk_rows, file_rows, parts)
    same_postings(derived_chunks, Postings.build(chunk_rows, CHUNK_WEIGHTS))
    same_postings(derived_files, Postings.build(file_rows, FILE_WEIGHTS))
    assert derived_files.doc_frequency("onlyinafile") == 1


def test_a_first_pass_with_searches_and_rewrites_between_its_files_ranks_as_fts5(
    tmp_path: Path,
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    """A first pass's file rows take their postings from their chunk rows' build, unless those
    rows were indexed already (a search in between) or written again since: then the file
    row's own text is tokenized. Either way both tables rank as FTS5 over the rows written."""
    monkeypatch.setattr(disk, "SEGMENT_CHARS", 15_000)
    index = LexicalIndex(tmp_path / "lexical")
    chunks = corpus(240, seed=11)
    by_path: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_path.setdefault(chunk.path, []).append(chunk)
    written: dict[str, tuple[object, ...]] = {}
    current: dict[int, Chunk] = {}
    for n, (path, mine) in enumerate(by_path.items()):
        index.replace_file(path, [], mine)
        current.update({c.id: c for c in mine})
        written[path] = table_rows(mine)[1][0]
        if n % 5 == 2:
            index.search("parse request", 5)  # the chunk rows are indexed on their own
        if n % 7 == 3:  # a chunk of this file written again: the file row keeps its text
            again = make_chunk(mine[0].id, path, "again_name", "def again_name():\n    cookie\n")
            index.upsert([again])
            current[again.id] = again
    index.stamp(1)
    chunk_rows, _ = table_rows(sorted(current.values(), key=lambda c: c.id))
    check_against_fts5(index, chunk_rows, list(written.values()), seed=4)


def test_new_ids_skip_the_segment_lookup_and_old_ids_are_still_replaced(tmp_path: Path) -> None:
    """A write of ids above every segment's largest key looks none of them up (a first pass's
    writes), while a write of an id a segment holds still masks that row."""
    index = LexicalIndex(tmp_path / "lexical")
    chunks = corpus(40)
    index.upsert(chunks[:20])
    index.stamp(1)
    table = index.tables.chunks
    assert [s.postings.highest_key() for s in table.segments] == [20]
    index.upsert(chunks[20:])  # ids 21..40: above 20, nothing to mask
    assert all(s.masked_count == 0 for s in table.segments)
    replaced = make_chunk(7, "pkg/new.py", "fresh_name", "def fresh_name():\n    cookie\n")
    index.upsert([replaced])
    assert table.segments[0].masked_count == 1 and table.row_count() == 40
    same = LexicalIndex(None)
    same.rebuild([*chunks[:6], replaced, *chunks[7:]])
    for query in ("parse request", "cookie fresh name", "w3 w17 session"):
        assert index.search(query, 30) == same.search(query, 30)


def test_a_segment_mostly_replaced_is_rewritten_and_an_empty_one_dropped(tmp_path: Path) -> None:
    """Masks never outgrow their segment: past half its rows dead, a save rewrites it with the
    live ones; a segment with none left is dropped (and its file removed)."""
    folder = tmp_path / "lexical"
    index = LexicalIndex(folder)
    chunks = corpus(100)
    index.rebuild(chunks)
    index.stamp(1)
    (base,) = [s.name for s in index.tables.chunks.segments]
    index.remove([c.id for c in chunks[:60]])
    index.stamp(2)
    (rewritten,) = index.tables.chunks.segments
    assert rewritten.name != base and rewritten.masked is None and rewritten.live() == 40
    assert not (folder / str(base)).exists()
    index.remove([c.id for c in chunks[60:]])
    index.stamp(3)
    assert index.tables.chunks.segments == [] and index.count() == 0
    assert index.search("parse request", 5) == []
    reader = LexicalIndex.open_snapshot(folder, 3, 0)
    assert reader is not None and reader.search("parse request", 5) == []


class _CountingColumn(StringColumn):
    """A term dictionary that counts the term bytes read (each bisection step reads one)."""

    reads = 0

    def raw(self, index: int) -> bytes:
        _CountingColumn.reads += 1
        return super().raw(index)


def test_a_segment_bisects_for_a_term_once_then_remembers_it() -> None:
    """One query asks every segment about the same terms three times (document frequency,
    chunk scores, file scores), and a big tree has dozens of segments: the second lookup of a
    term, present or not, reads no term bytes, and answers as the first did."""
    terms = sorted(WORDS)
    plain = StringColumn.of(terms)
    names = _CountingColumn(plain.blob(), plain.bounds())
    slices = TermSlices(names, np.arange(len(terms) + 1, dtype=np.int64) * 3)
    first = [slices.get(t) for t in ("parse", "w7", "absent")]
    read = _CountingColumn.reads
    assert read > 0 and first == [
        (3 * terms.index("parse"), 3 * terms.index("parse") + 3),
        (3 * terms.index("w7"), 3 * terms.index("w7") + 3),
        (0, 0),
    ]
    assert [slices.get(t) for t in ("parse", "w7", "absent")] == first
    assert _CountingColumn.reads == read


def test_keys_at_reads_the_plain_key_of_each_row_asked() -> None:
    """A search's answer reads its rows' keys a segment at a time (`keys_at`, issue 44 LAT):
    the keys `key` reads one by one, plain int / str, in the order asked, repeats kept."""
    chunk_rows, file_rows = table_rows(corpus(60))
    for rows, weights in ((chunk_rows, CHUNK_WEIGHTS), (file_rows, FILE_WEIGHTS)):
        postings = Postings.build(rows, weights)
        picked = [5, 0, 59, 5, 17]
        keys = postings.keys_at(picked)
        assert keys == [postings.key(r) for r in picked] == [rows[r][0] for r in picked]
        assert {type(k) for k in keys} == {type(rows[0][0])}
        assert postings.keys_at([]) == []


def _dict_answer(keys: list[str], value: str) -> int | None:
    """What a dict of the UTF-8 keys answers (the last of equal keys)."""
    index = {key.encode("utf-8", "surrogatepass"): i for i, key in enumerate(keys)}
    return index.get(value.encode("utf-8", "surrogatepass"))


def test_a_column_finds_a_key_or_two_without_a_dict_of_every_key() -> None:
    """A one-file edit looks up a key or two in the whole-file keys: the column searches its
    bytes and builds no dict of every key (the kernel's 78k stayed in the held writer); keys
    inside longer keys, repeated keys and absent ones answer as the dict answers, and after
    `SCAN_LOOKUPS` lookups the dict is built and answers the same."""
    from codeask.core.storage.lexical.bm25 import SCAN_LOOKUPS, StringColumn

    keys = ["a/b.c", "b.c", "x/a/b.c", "", "b.c", "é/ü.py", "b", "a/b.cc", "c"]
    column = StringColumn.of(keys)
    probes = [*keys, "a/b", "b.cc", "x", "zz", "ü.py", "/b.c"]
    for probe in probes:
        if probe:
            assert column.find(probe) == _dict_answer(keys, probe), probe
    assert column._index is None, "no dict of every key for a few lookups"
    for _ in range(SCAN_LOOKUPS):
        column.find("b.c")
    assert column._index is not None
    assert [column.find(p) for p in probes] == [_dict_answer(keys, p) for p in probes]


def test_a_mapped_columns_search_agrees_with_the_dict(tmp_path: Path) -> None:
    """Random keys from small alphabets (many keys inside others), read from a mapped file at an
    offset as a segment file holds them: every lookup answers as the dict does."""
    import mmap

    from codeask.core.storage.lexical.bm25 import StringColumn

    rng = random.Random(42)
    for trial in range(300):
        alphabet = rng.choice(["ab", "ab/", "abc./", "é/a"])
        keys = ["".join(rng.choices(alphabet, k=rng.randint(0, 6))) for _ in range(30)]
        encoded = [key.encode() for key in keys]
        pad = b"XYZ" * rng.randint(0, 3)
        path = tmp_path / f"blob{trial}"
        path.write_bytes(pad + b"".join(encoded) + b"tail")
        with path.open("rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        bounds = np.concatenate(([0], np.cumsum([len(raw) for raw in encoded])))
        column = StringColumn(mapped, bounds, len(pad))
        probes = keys + ["".join(rng.choices(alphabet, k=rng.randint(0, 6))) for _ in range(10)]
        assert [column.find(p) for p in probes] == [_dict_answer(keys, p) for p in probes]
        mapped.close()
