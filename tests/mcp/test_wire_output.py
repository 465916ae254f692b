"""The MCP server's stdout (mcp/wire.py `Output` over `WholeWrites`, what `claim_stdio` hands
it) writes every byte of an answer, however many writes the pipe takes it in. Its stdout is an
unbuffered pipe: a write may take part of an answer and say how much (a non-blocking pipe that
is full, a write cut short by a signal or a stop and continue). Before, the rest was dropped:
the agent got a line cut in two with the next answer glued to it. Real pipes, a reader
thread."""

from __future__ import annotations

import fcntl
import os
import threading

from codeask.mcp.wire import Output, WholeWrites

#: An answer many times a pipe's 64 KB (a search with long snippets, a whole file's blame).
ANSWER = b'{"jsonrpc":"2.0","id":7,"result":"' + b"x" * (3 << 20) + b'"}\n'


def drain(fd: int, into: bytearray) -> None:
    """Read `fd` to its end, in small slow pieces, so the writer keeps finding the pipe full."""
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while piece := pipe.read(16384):
            into += piece
            threading.Event().wait(0.0002)


def test_an_answer_to_a_full_non_blocking_pipe_arrives_whole() -> None:
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETFL, fcntl.fcntl(write_fd, fcntl.F_GETFL) | os.O_NONBLOCK)
    received = bytearray()
    reader = threading.Thread(target=drain, args=(read_fd, received), daemon=True)
    reader.start()
    output = Output(WholeWrites(write_fd))
    output.write(ANSWER)
    output.write(b'{"jsonrpc":"2.0","id":8,"result":null}\n')
    os.close(write_fd)
    reader.join(60)
    lines = bytes(received).split(b"\n")
    assert lines[0] + b"\n" == ANSWER
    assert lines[1] == b'{"jsonrpc":"2.0","id":8,"result":null}'


def test_an_agent_gone_mid_answer_loses_that_answer_only() -> None:
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    try:
        Output(WholeWrites(write_fd)).write(ANSWER)  # EPIPE: logged, not raised
    finally:
        os.close(write_fd)
