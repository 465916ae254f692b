"""The per-file bound on tree-sitter (core/source/parse_bound.py): a deeply nested file becomes
line windows with a reason, in bounded time, in this process and in chunk workers; ordinary
nesting keeps its definitions; Ctrl-C during a long parse is a KeyboardInterrupt, not a crash."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest
from tree_sitter import Parser
from tree_sitter_language_pack import get_language

from codeask.config import ChunkSettings, IndexSettings
from codeask.core.indexer import chunk_pool
from codeask.core.source import parse_bound
from codeask.core.source.chunk import chunk_file
from codeask.core.source.discover import discover
from codeask.core.source.parse_bound import CHUNK_CPU_SECONDS, MAX_DEPTH

#: The issue's files: 200 KB nested 100k deep. Zig stalled in the definitions query (>90 s),
#: Scala in the parse (24 s and more).
DEPTH = 100_000


def deep_zig(depth: int = DEPTH) -> str:
    return "const x = " + "(" * depth + "1" + ")" * depth + ";\n"


def deep_scala(depth: int = DEPTH) -> str:
    return "object A { def f = " + "{" * depth + "}" * depth + " }\n"


def test_a_100k_deep_zig_file_is_windows_with_the_depth_reason() -> None:
    started = time.monotonic()
    result = chunk_file("deep.zig", deep_zig(), ChunkSettings())
    assert time.monotonic() - started < 30  # 0.4 s measured; main's query ran for minutes
    assert f"nested more than {MAX_DEPTH} levels deep" in result.fallback_reason
    assert result.chunks and {c.kind for c in result.chunks} == {"window"}


def test_a_100k_deep_scala_file_is_windows_once_its_parse_budget_is_spent() -> None:
    started = time.process_time()
    result = chunk_file("deep.scala", deep_scala(), ChunkSettings())
    assert time.process_time() - started < CHUNK_CPU_SECONDS + 10
    assert f"parsing took more than {CHUNK_CPU_SECONDS:g} s of CPU" in result.fallback_reason
    assert result.chunks and {c.kind for c in result.chunks} == {"window"}
    # the stopped parse was reset: the next file of the language is parsed afresh, not resumed
    text = "object Shop {\n  def total(x: Int): Int = x + 1\n}\n"
    result = chunk_file("ok.scala", text, ChunkSettings())
    assert result.fallback_reason == ""
    assert [(c.kind, c.symbol) for c in result.chunks] == [("class", "Shop"), ("method", "total")]


@pytest.mark.parametrize("depth", [100, 600])
def test_nesting_below_the_bound_keeps_the_definitions(depth: int) -> None:
    """Levels are the tree's (a Zig parenthesis is two); the deepest ordinary file seen, redis's
    redismodule.h, is 692 levels deep."""
    text = "fn outer() u32 {\n    return " + "(" * depth + "1" + ")" * depth + ";\n}\n"
    result = chunk_file("ok.zig", text, ChunkSettings())
    assert result.fallback_reason == ""
    assert [c.symbol for c in result.chunks] == ["outer"]


class _CountedReads:
    """The real parser; counts the reads it makes through the callable it is given."""

    def __init__(self, parser: Parser) -> None:
        self.parser, self.reads = parser, 0

    def parse(self, read: Any, **options: Any) -> Any:
        def counted(offset: int, point: object) -> bytes:
            self.reads += 1
            return cast(bytes, read(offset, point))

        return self.parser.parse(counted, **options)

    def reset(self) -> None:
        self.parser.reset()


def test_a_parse_reads_the_file_in_one_piece() -> None:
    """Every read is a Python call and a bytes object py-tree-sitter 0.26 never frees: the whole
    file goes in the first read, so 100 KB of C is two reads (it was one per 256 bytes, ~400),
    and the tree is the one a parse of the bytes gives."""
    data = "".join(f"static int f{n}(int x) {{ return g(x) + {n}; }}\n" for n in range(2500))
    source = data.encode()
    assert len(source) > 100_000
    spy = _CountedReads(Parser(get_language("c")))
    tree = parse_bound.parse(cast(Parser, spy), source, parse_bound.Budget())
    assert spy.reads <= 2
    assert str(tree.root_node) == str(Parser(get_language("c")).parse(source).root_node)


def test_a_parse_keeps_no_reference_to_the_file() -> None:
    """py-tree-sitter 0.26.1 keeps a reference to every object its read callable returns
    during a parse: handed the file's bytes, it kept each parsed file alive (a worker grew by
    what it parsed). The file's bytes are free again once its tree is, parse after parse,
    including a parse stopped by its budget; a node's text (read after the parse) is the
    file's, from its first byte on."""
    parser = Parser(get_language("c"))
    source = "".join(f"int v{n} = {n};\n" for n in range(2000)).encode()
    before = sys.getrefcount(source)
    for _ in range(20):
        tree = parse_bound.parse(parser, source, parse_bound.Budget())
        assert tree.root_node.child(0).text == b"int v0 = 0;"
        del tree
    spent = parse_bound.Budget()
    spent.deadline = 0.0
    with pytest.raises(parse_bound.OverBudget):
        parse_bound.parse(parser, deep_scala(20_000).encode(), spent)
    assert sys.getrefcount(source) == before


def test_parses_in_two_threads_read_their_own_files() -> None:
    """The reusable buffer is per thread: two threads parsing at once each get their file's tree."""
    files = [
        "".join(f"int {name}{n}(void) {{ return {n}; }}\n" for n in range(3000)).encode()
        for name in ("left", "right")
    ]
    expected = [str(Parser(get_language("c")).parse(source).root_node) for source in files]
    got: list[list[str]] = [[], []]

    def work(side: int) -> None:
        parser = Parser(get_language("c"))
        for _ in range(15):
            tree = parse_bound.parse(parser, files[side], parse_bound.Budget())
            got[side].append(str(tree.root_node))

    threads = [threading.Thread(target=work, args=(side,)) for side in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got == [[expected[0]] * 15, [expected[1]] * 15]


def test_deep_files_in_chunk_workers(tmp_path: Path) -> None:
    """A pass over 1 MB goes to worker processes: the same bound holds there."""
    (tmp_path / "deep.zig").write_text(deep_zig())
    (tmp_path / "deep.scala").write_text(deep_scala())
    body = "".join(f"def helper_{n}(value):\n    return value * {n}\n\n\n" for n in range(4000))
    for n in range(12):
        (tmp_path / f"mod_{n}.py").write_text(body)
    index = IndexSettings()
    files = discover(tmp_path, index).files
    jobs = [chunk_pool.Job.of(f, "") for f in files]
    assert sum(job.size for job in jobs) >= chunk_pool.POOL_FROM_BYTES
    if chunk_pool.worker_count(2) == 0:
        pytest.skip("one core: passes never start workers")
    with chunk_pool.prepared_files(jobs, index, ChunkSettings(), 2) as prepared:
        by_rel = {p.rel: p for p in prepared}
    assert "nested more than" in by_rel["deep.zig"].fallback_reason
    assert "parsing took more than" in by_rel["deep.scala"].fallback_reason
    assert len(by_rel["mod_0.py"].chunks) == 4000


def test_ctrl_c_during_a_long_parse_is_a_keyboard_interrupt(tmp_path: Path) -> None:
    """The progress callback runs Python on the main thread, where signal handlers run; the
    binding crashes on an exception raised there, so Ctrl-C waits for the parse to return."""
    source = tmp_path / "deep.scala"
    source.write_text(deep_scala())
    code = (
        "import sys\n"
        "from codeask.config import ChunkSettings\n"
        "from codeask.core.source.chunk import chunk_file\n"
        "print('parsing', flush=True)\n"
        "chunk_file('deep.scala', open(sys.argv[1]).read(), ChunkSettings())\n"
        "print('not interrupted', flush=True)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "parsing"
    time.sleep(1.0)  # inside the parse (5 s of CPU), or past it: either way no crash
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode != -signal.SIGSEGV, err
    assert "KeyboardInterrupt" in err or "not interrupted" in out, (proc.returncode, err)
