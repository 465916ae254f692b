"""A one-shot search keeps few index pages mapped: what it read is given back step by step.

Each case runs in a process of its own (the one-shot switch is process-wide, and RSS is the
process's): it writes an index file bigger than the bound, reads it the way a search does, and
prints the Rss of that file's mapping from /proc/self/smaps (runtime/resident.py, issue 42).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/smaps").exists(), reason="needs /proc/self/smaps (Linux)"
)

MB = 1 << 20

#: Rss (bytes) of the mappings of the file named in argv[2], read from /proc/self/smaps.
_RSS_OF = """
def rss_of(name):
    total, mine = 0, False
    for line in open("/proc/self/smaps"):
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and head[0][0] in "0123456789abcdef":
            mine = len(head) > 5 and head[-1].endswith(name)
        elif mine and head[0] == "Rss:":
            total += int(head[1]) * 1024
    return total
"""


def _run(tmp_path: Path, body: str, file: str, *, one_shot: bool) -> int:
    """Run `body` (which reads `path`, the file `file` in `tmp_path`) in a fresh process; the
    Rss of that file's mapping at the end (or what `body` measured), in bytes."""
    script = "\n".join(
        [
            "import sys",
            "from pathlib import Path",
            "from codeask.core.runtime import resident",
            _RSS_OF,
            "folder = Path(sys.argv[1])",
            "name = sys.argv[3]",
            "path = folder / name",
            "if sys.argv[2] == '1':",
            "    resident.answer_once()",
            textwrap.dedent(body),
            "print(globals().get('measured', rss_of(name)))",
        ]
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), "1" if one_shot else "0", file],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return int(done.stdout.split()[-1])


def _both(tmp_path: Path, body: str, file: str, bigger_than: int) -> tuple[int, int]:
    """(Rss in a long-lived process, Rss in a one-shot one) of the same reads of `file`, once
    it is checked to be bigger than `bigger_than` bytes."""
    kept = _run(tmp_path, body, file, one_shot=False)
    assert (tmp_path / file).stat().st_size > bigger_than
    return kept, _run(tmp_path, body, file, one_shot=True)


_VECTORS = """
import numpy as np
from codeask.core.storage.vectors import VectorIndex
if not path.exists():
    rows = np.random.default_rng(1).normal(size=(64_000, 256)).astype(np.float32)
    built = VectorIndex(256, quantized=True)
    built.add(list(range(1, len(rows) + 1)), rows)
    built.write_base(path)
tier = VectorIndex.load(path, 256, 0, np.arange(1, 64_001), quantized=True)
assert tier.mapped
for seed in range(3):
    tier.query(np.random.default_rng(seed).normal(size=256).astype(np.float32), 10)
"""


_CHUNKS = """
import random
from codeask.core.records import Chunk
from codeask.core.storage.chunk_file import ChunkFile, ChunkFileWriter
if not path.exists():
    words = random.Random(2)
    with path.open("wb") as handle:
        writer = ChunkFileWriter(handle)
        for n in range(1, 3001):
            text = " ".join(f"{words.getrandbits(64):x}" for _ in range(700))
            writer.add(Chunk(path=f"f{n}.py", language="python", kind="function", start_line=1,
                             end_line=40, text=text, symbol=f"fn_{n}", id=n))
        writer.finish()
chunks = ChunkFile(path)
assert all(chunks.get(n).symbol == f"fn_{n}" for n in range(1, 3001))
"""


_SEGMENT = """
import random
import numpy as np
from codeask.core.storage.lexical.bm25 import CHUNK_WEIGHTS, LiveTable, Postings, Segment
from codeask.core.storage.lexical.segment_file import open_segment, write_segment
if not path.exists():
    pick = random.Random(3)
    rows = [
        (n, "common " + " ".join(f"w{pick.randrange(400_000)}" for _ in range(12)), "", "")
        for n in range(1, 200_001)
    ]
    built = Postings.build(rows, CHUNK_WEIGHTS)
    write_segment(path, Segment(built, np.asarray(built.keys, dtype=np.int64)))
postings, _ = open_segment(path)
table = LiveTable(postings, CHUNK_WEIGHTS, tie_by_key=True)
assert table.search(["common"], 1)
for word in ("w17", "w123", "w4567"):
    table.search(["common", word], 1)
"""


_TABLES = """
from codeask.core.records import Chunk
from codeask.core.storage.chunk_file import ChunkFile, ChunkFileWriter
if not path.exists():
    with path.open("wb") as handle:
        writer = ChunkFileWriter(handle)
        for n in range(1, 300_001):
            writer.add(Chunk(path="a.py", language="python", kind="function", start_line=n,
                             end_line=n, text="x", symbol=f"f{n}", id=n))
        writer.finish()
chunks = ChunkFile(path)
measured = rss_of(name)
assert [chunks.get(n).start_line for n in (7, 150_000, 299_999)] == [7, 150_000, 299_999]
"""


CASES = [
    # A 16 MB base (64k int8 rows, scanned whole): a long-lived process keeps what it scanned
    # (released once idle), a one-shot one gives each block of 4096 rows back after scoring it.
    pytest.param(_VECTORS, "static.npz", 16 * MB, 12 * MB, 4 * MB, id="vector-scan"),
    # Every record of a 20 MB chunk file decoded: a long-lived process slices them from the map
    # (its pages stay), a one-shot one reads each with pread, so none of them is mapped.
    pytest.param(_CHUNKS, "chunks.rec", 20 * MB, 16 * MB, 1 * MB, id="chunk-records"),
    # A term in every one of 200k rows reads its whole postings and every row's length: a
    # one-shot process gives them back after each term (what stays: the rows that made the cut).
    pytest.param(_SEGMENT, "seg-1.lex", 16 * MB, 8 * MB, 4 * MB, id="lexical-terms"),
    # The open checks the id tables' crc32 (12 MB for 300k chunks): a one-shot process gives
    # them back at once (a lookup then faults in the pages its bisection reads).
    pytest.param(_TABLES, "tables.rec", 10 * MB, 10 * MB, 1 * MB, id="chunk-id-tables"),
]


@pytest.mark.parametrize(("body", "file", "size", "kept_above", "given_back_below"), CASES)
def test_a_one_shot_process_keeps_few_pages_of_a_bigger_index_file_mapped(
    tmp_path: Path, body: str, file: str, size: int, kept_above: int, given_back_below: int
) -> None:
    """The same reads of a file bigger than the bound, in a long-lived process (pages kept:
    the next query reads them for free) and in a one-shot one (given back step by step)."""
    kept, given_back = _both(tmp_path, body, file, size)
    assert kept > kept_above
    assert given_back < given_back_below
