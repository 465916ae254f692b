"""A tree-sitter parse with a CPU budget, and a depth check before the definitions query.

Some inputs cost far more than their size: a 200 KB Scala file nested 100k levels deep parses
for minutes, and a Zig one nested as deep parses in 0.05 s but then holds the definitions query
(in C, the GIL held) for minutes. Two bounds keep one such file from stalling a pass or the
process serving searches beside it:

- the parse runs against a budget of this thread's CPU time, checked by tree-sitter's progress
  callback (which also lets other threads take the GIL while a long parse runs);
- a tree nested deeper than `MAX_DEPTH` levels is not queried at all: the query's cost grows
  much faster than depth (one Zig nest: 0.02 s at 16k parentheses, 4.8 s at 32k, minutes at
  100k; 200 KB of 4k-deep nests, 0.08 s), and ordinary code is far shallower (the deepest of
  6,310 files of the eval-search repositories, this repository and /work/shared: 692 levels,
  redis's redismodule.h).

py-tree-sitter 0.26's query `progress_callback` keeps a pointer to a stack variable that has
gone out of scope (it crashed the process on Zig), so the query is bounded by depth, not time.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from tree_sitter import Node, Parser, Tree

#: CPU seconds of one file's parse (and of the Python walk over its definitions) before the
#: file is cut into line windows instead. The slowest of 7,300 ordinary files (eval-search,
#: /work/shared) chunked in 0.65 s of CPU: http4s's MimeDB.scala, 383 KB.
CHUNK_CPU_SECONDS = 5.0
#: Levels of nesting above which a tree is not queried for definitions (see the module doc).
MAX_DEPTH = 2000
#: Bytes per read after the first. The first read (offset 0) hands the parser the whole file,
#: the very bytes object it was given (no copy): the lexer then never leaves its chunk, so a parse
#: makes two Python reads, not one per 256 bytes (a lexer stepping back before its last chunk read
#: again: Scala's 15,700 times in a 383 KB file). Later reads are a node's text read back through
#: the same callable (query predicates): small, so reading one node's text copies little.
READ_BYTES = 256
#: Asks of the budget per reading of the clock: reading thread CPU time is a system call
#: (~1-3 us), and the parser asks every few dozen microseconds.
ASKS_PER_CLOCK = 32


class OverBudget(Exception):
    """The file's CPU budget ran out; the message says where."""


class Budget:
    """One file's CPU budget. CPU time of this thread, so a loaded machine does not turn an
    ordinary file into line windows."""

    def __init__(self, seconds: float = CHUNK_CPU_SECONDS) -> None:
        self.seconds = seconds
        self.deadline = time.thread_time() + seconds
        self.left = ASKS_PER_CLOCK

    def spent(self, *_state: object) -> bool:
        """Whether the budget ran out (the clock read every ASKS_PER_CLOCK asks); never
        raises, as tree-sitter's progress callback must not. A countdown: the parser asks
        ~6,000 times a MB."""
        self.left -= 1
        if self.left:
            return False
        self.left = ASKS_PER_CLOCK
        return time.thread_time() > self.deadline

    def check(self, doing: str) -> None:
        """Raise OverBudget when the budget ran out."""
        if self.spent():
            raise OverBudget(f"{doing} took more than {self.seconds:g} s of CPU")


def parse(parser: Parser, data: bytes, budget: Budget) -> Tree:
    """The file's tree, or OverBudget when parsing spends the budget.

    The text goes through a read callable because py-tree-sitter ignores the progress
    callback for a bytes source; slices are bytes (a memoryview slice crashed it).

    py-tree-sitter 0.26.1 never drops its reference to what the read callable returns during
    a parse (`parser_read_wrapper` takes a buffer of it and releases the buffer, not the
    object): handed the file's bytes, it kept every parsed file alive, so a chunk worker grew
    by what it parsed (~840 MB each on the whole kernel) and a daemon by every file it
    re-chunked. The whole-file read is therefore this thread's one reusable bytearray, emptied
    once the parse returns (its buffer released by then): the kept reference holds an empty
    object that lives anyway. Reads after the parse (a node's text) get bytes slices, which
    that path releases."""
    whole = _whole_file_buffer()
    whole[:] = data
    parsing = True

    def read(offset: int, _point: object) -> bytes | bytearray:
        if offset == 0 and parsing:
            return whole
        return data[offset : offset + READ_BYTES]

    with _signals_deferred():
        try:
            tree = parser.parse(read, progress_callback=budget.spent)
        except ValueError:  # "Parsing failed": the callback stopped it
            tree = None
        finally:
            parsing = False
            whole.clear()
    if tree is None:
        parser.reset()  # else the next parse would resume this one
        raise OverBudget(f"parsing took more than {budget.seconds:g} s of CPU")
    return tree


_thread_buffers = threading.local()


def _whole_file_buffer() -> bytearray:
    """This thread's bytearray the parser reads a file from (one per thread: parses of two
    threads run at once in a daemon)."""
    buffer: bytearray | None = getattr(_thread_buffers, "whole", None)
    if buffer is None:
        buffer = _thread_buffers.whole = bytearray()
    return buffer


def deeper_than(root: Node, limit: int = MAX_DEPTH) -> int | None:
    """The row of a node more than `limit` levels below `root`, None if there is none.

    A subtree of n nodes is at most n - 1 levels deep, so one too small to reach the limit is
    not entered: an ordinary file costs a visit to the children of its few large nodes."""
    cursor = root.walk()
    depth = 0
    while True:
        node = cursor.node
        if node is not None and depth + node.descendant_count - 1 > limit:
            if depth > limit:
                return int(node.start_point.row)
            if cursor.goto_first_child():
                depth += 1
                continue
        while not cursor.goto_next_sibling():
            if depth == 0 or not cursor.goto_parent():
                return None
            depth -= 1


@contextmanager
def _signals_deferred() -> Iterator[None]:
    """Ctrl-C held until the parse returns, on the main thread.

    Python runs signal handlers on the main thread between bytecodes, so one could run inside
    the progress callback; a KeyboardInterrupt raised there is an error the binding does not
    check for (it crashes). Other threads never run handlers: nothing to do there."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield
        return
    caught: list[tuple[int, FrameType | None]] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append((signum, frame)))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        for signum, frame in caught[:1]:
            previous(signum, frame)
