"""Every byte of a write to a pipe or socket, however many writes it takes.

A write(2) to a pipe may take part of the bytes and say how many: one cut short by a signal or
by a stop and continue (Ctrl-Z then `fg`: a terminal stops the editor's or the agent's whole
process group, codeask's processes with it), or one to a non-blocking pipe that is full (a
parent may hand its child such a stdout). Every protocol codeask speaks over a pipe (the chunk
workers' frames, LSP and MCP messages, the forwarders' relays) is a stream of framed messages:
a part lost leaves the reader a frame that holds the start of the next one.
"""

from __future__ import annotations

import os
import select


def write_fd(fd: int, data: bytes | bytearray | memoryview) -> None:
    """All of `data` to `fd`, waiting while a non-blocking one is full; OSError when the
    reader is gone (BrokenPipeError) or the descriptor fails."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])  # until the reader takes some
            continue
        view = view[written:]
