"""Every byte of a framed message reaches the reader, however many writes the pipe takes it in
(core/runtime/pipe_write.py): the LSP server's stdout (lsp/framing.py `LockedWriter`) and the
chunk workers' frames write through it. Real pipes; the reader is a thread that reads slowly, so
a non-blocking writer keeps finding the pipe full (a write then takes part of a message, or
none: before, `LockedWriter` handed the message to a buffered writer, which raised
BlockingIOError with part of it written)."""

from __future__ import annotations

import fcntl
import os
import threading

import pytest

from codeask.core.runtime.pipe_write import write_fd
from codeask.lsp.framing import LockedWriter, frame

BIG = {"jsonrpc": "2.0", "id": 3, "result": {"text": "y" * (3 << 20)}}


def non_blocking_pipe() -> tuple[int, int]:
    read_fd, write_fd_ = os.pipe()
    flags = fcntl.fcntl(write_fd_, fcntl.F_GETFL)
    fcntl.fcntl(write_fd_, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    return read_fd, write_fd_


def drain(fd: int, into: bytearray) -> threading.Thread:
    def read() -> None:
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while piece := pipe.read(16384):
                into.extend(piece)
                threading.Event().wait(0.0002)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_an_lsp_frame_to_a_full_non_blocking_stdout_arrives_whole() -> None:
    read_fd, out_fd = non_blocking_pipe()
    received = bytearray()
    reader = drain(read_fd, received)
    with os.fdopen(out_fd, "wb") as stdout:  # what `codeask serve` hands pygls: buffered
        writer = LockedWriter(stdout)
        writer.write(frame(BIG))
        writer.flush()
        writer.write(frame({"jsonrpc": "2.0", "id": 4, "result": None}))
    reader.join(60)
    assert bytes(received) == frame(BIG) + frame({"jsonrpc": "2.0", "id": 4, "result": None})


def test_a_reader_gone_is_an_error_the_writer_sees() -> None:
    read_fd, out_fd = os.pipe()
    os.close(read_fd)
    try:
        with pytest.raises(BrokenPipeError):
            write_fd(out_fd, b"x" * 100)
    finally:
        os.close(out_fd)
