"""Issue 42, DISK: a segment file's postings are packed (row steps and counts in a byte or two),
and read back exactly: the same rows, the same frequencies, the same scores (format tests with
codeask's own segment writer; the first pass through `codeask index` and `codeask search`)."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from codeask.core.storage.lexical import segment_file
from codeask.core.storage.lexical.bm25 import (
    CHUNK_WEIGHTS,
    LiveTable,
    Postings,
    Segment,
    merge_segments,
)
from codeask.core.storage.lexical.packed import PackedFreqs, PackedRows
from codeask.core.storage.lexical.segment_file import (
    MAGIC,
    MAGIC_PLAIN,
    SegmentFileError,
    open_segment,
    write_segment,
)
from support.search_cli import search_hits

WORDS = [f"w{i}" for i in range(400)] + ["parse", "cookie", "session"]


def rows_of(count: int, seed: int) -> list[tuple[object, ...]]:
    """Chunk rows (id, body, symbol, path): common and rare words, long bodies (counts past a
    byte), ids with wide gaps (row steps past 254 and 65,534 within one term)."""
    rng = random.Random(seed)
    rows: list[tuple[object, ...]] = []
    for i in range(count):
        body = " ".join(rng.choices(WORDS, k=rng.randint(1, 40)))
        if i % 97 == 0:
            body += " parse" * 300  # a count of 300 (and 300 x 1.0 weight): past a uint8
        if i in (5, count - 3):
            body += " rare_pair"  # two rows far apart: one step past any narrow cell
        rows.append((i * 7 + 1, body, rng.choice(WORDS), f"pkg/{rng.choice(WORDS)}.py"))
    return rows


def written(tmp_path: Path, postings: Postings, name: str = "seg.lex") -> Postings:
    path = tmp_path / name
    write_segment(path, Segment(postings, np.asarray(postings.keys, dtype=np.int64)))
    mapped, _ = open_segment(path)
    return mapped


@pytest.mark.parametrize("count", [1, 300, 70_000])
def test_packed_postings_read_back_exactly(tmp_path: Path, count: int) -> None:
    built = Postings.build(rows_of(count, seed=count), CHUNK_WEIGHTS)
    mapped = written(tmp_path, built)
    assert isinstance(mapped.rows, PackedRows) and isinstance(mapped.freqs, PackedFreqs)
    starts = np.asarray(built.slices.starts)
    for term in range(len(starts) - 1):  # every term's slice, as a query reads it
        lo, hi = int(starts[term]), int(starts[term + 1])
        assert np.array_equal(mapped.rows[lo:hi], built.rows[lo:hi])
        assert np.array_equal(mapped.freqs[lo:hi], built.freqs[lo:hi])
        assert mapped.freqs[lo:hi].dtype == np.asarray(built.freqs).dtype
    assert np.array_equal(np.asarray(mapped.rows), built.rows)  # whole (a merge reads them so)
    assert np.array_equal(np.asarray(mapped.freqs), built.freqs)
    rng = random.Random(count)
    for _ in range(50):  # any slice, across term boundaries too
        lo = rng.randrange(len(built.rows))
        hi = rng.randrange(lo, len(built.rows) + 1)
        assert np.array_equal(mapped.rows[lo:hi], built.rows[lo:hi]), (lo, hi)
    on_disk = (tmp_path / "seg.lex").stat().st_size
    if count == 70_000:
        assert on_disk < 4 * len(built.rows), "was 8 bytes a posting (int32 row, float32 tf)"


def test_a_packed_segment_scores_bit_for_bit_as_the_rows_in_memory(tmp_path: Path) -> None:
    rows = rows_of(5_000, seed=11)
    built = Postings.build(rows, CHUNK_WEIGHTS)
    memory = LiveTable(built, CHUNK_WEIGHTS, tie_by_key=True)
    disk = LiveTable(written(tmp_path, built), CHUNK_WEIGHTS, tie_by_key=True)
    for query in (["parse"], ["rare_pair"], ["w3", "w17", "cookie"], ["w399", "session", "nope"]):
        assert disk.search(query, 50) == memory.search(query, 50), query
    removed = [row[0] for row in rows[::13]]
    for table in (memory, disk):  # masks and a later write over the packed segment
        table.apply([(9_999_999, "parse cookie w3", "parse", "pkg/x.py")], removed)
    assert disk.search(["parse", "w3"], 80) == memory.search(["parse", "w3"], 80)


def test_a_segment_file_from_before_packing_reads_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CQLEXS1 file (int32 rows, float32 tf: every index had them) is read as written."""
    built = Postings.build(rows_of(800, seed=5), CHUNK_WEIGHTS)
    monkeypatch.setattr(segment_file, "MAGIC", MAGIC_PLAIN)
    monkeypatch.setattr(segment_file, "pack_rows", lambda rows, _: {"rows": rows})
    monkeypatch.setattr(segment_file, "pack_freqs", lambda freqs: {"freqs": freqs})
    path = tmp_path / "seg.lex"
    write_segment(path, Segment(built, np.asarray(built.keys, dtype=np.int64)))
    monkeypatch.undo()
    assert path.read_bytes()[: len(MAGIC_PLAIN)] == MAGIC_PLAIN
    old, _ = open_segment(path)
    assert isinstance(old.rows, np.ndarray) and np.array_equal(old.rows, built.rows)
    assert np.array_equal(old.freqs, built.freqs)
    table = LiveTable(old, CHUNK_WEIGHTS, tie_by_key=True)
    assert table.search(["parse"], 20) == LiveTable(built, CHUNK_WEIGHTS).search(["parse"], 20)
    # an upgraded index: an old base and a new packed segment folded into one by a merge
    later = Postings.build(rows_of(300, seed=6), CHUNK_WEIGHTS)
    packed = written(tmp_path, later, "later.lex")
    both = LiveTable(None, CHUNK_WEIGHTS, tie_by_key=True)
    memory = LiveTable(None, CHUNK_WEIGHTS, tie_by_key=True)
    for table, parts in ((both, (old, packed)), (memory, (built, later))):
        table.segments = [Segment(p, np.asarray(p.keys, dtype=np.int64)) for p in parts]
        table.merge(list(table.segments))
    merged, expected = both.segments[0].postings, memory.segments[0].postings
    assert np.array_equal(merged.rows, expected.rows)
    assert np.array_equal(merged.freqs, expected.freqs)
    assert both.search(["parse", "w7"], 40) == memory.search(["parse", "w7"], 40)
    path.write_bytes(b"CQLEXS9\n" + path.read_bytes()[8:])
    with pytest.raises(SegmentFileError):
        open_segment(path)


def test_a_first_pass_writes_packed_segments_and_search_reads_them(tmp_path: Path) -> None:
    files = {"billing/refund.py": ""}
    for body in rows_of(40, seed=2):  # modules of the generated rows' words
        files[f"billing/{body[3]}"] = f"def {body[2]}_{body[0]}(invoice):\n    # {body[1]}\n"
    files["billing/refund.py"] = "def refund_voucher(invoice):\n    return invoice.voucher\n"
    hits = search_hits(tmp_path, files, "refund voucher")  # `codeask index`, then a search
    assert hits and hits[0]["relative_path"] == "billing/refund.py"
    segments = list((tmp_path / "repo" / ".codeask" / "lexical").glob("seg-*.lex"))
    assert segments and all(s.read_bytes()[: len(MAGIC)] == MAGIC for s in segments)
    for path in segments:
        data = path.read_bytes()
        (length,) = struct.unpack("<Q", data[8:16])
        assert "row_cells" in json.loads(data[16 : 16 + length])["arrays"]


def test_a_whole_decode_gives_every_slices_rows(tmp_path: Path) -> None:
    """PackedRows.whole (a merge's read of a part) is the general slice read of every row, on
    segments with empty terms, far steps (rows > 254 apart) and one posting a term."""
    rng = random.Random(23)
    for trial in range(12):
        count = rng.choice((1, 3, 40, 900))
        words = WORDS[: rng.choice((2, 30, 400))]
        rows = [
            (key, " ".join(rng.choices(words, k=rng.randint(0, 9))), "", "") for key in range(count)
        ]
        segment = Segment(Postings.build(rows, CHUNK_WEIGHTS), np.arange(count))
        for position in range(count):
            if trial % 2 and rng.random() < 0.5:  # merged without them: terms left empty
                segment.mask(position)
        if segment.masked is not None:
            segment = Segment(*merge_segments([segment]))
        path = tmp_path / f"w{trial}.lex"
        write_segment(path, segment)
        packed = open_segment(path)[0].rows
        assert isinstance(packed, PackedRows)
        whole = packed.whole()
        assert whole.dtype == np.int32
        assert whole.tolist() == packed[0 : len(packed)].tolist()
