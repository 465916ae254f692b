"""The frames between the chunk workers and the indexing process (core/indexer/chunk_pool.py),
over real pipes: a frame arrives whole however the pipe splits it, an end of file mid-frame is
a stopped worker (never a short frame), and a worker's answers get a pipe that holds a frame."""

from __future__ import annotations

import fcntl
import io
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from codeask.config import build_settings
from codeask.core.indexer import chunk_pool
from codeask.core.source.discover import discover

#: Linux's F_GETPIPE_SZ (the fcntl module names it from Python 3.10 on Linux only).
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)


class CountedReads(io.RawIOBase):
    """The read end of a real pipe, counting the reads the frame took."""

    def __init__(self, fd: int) -> None:
        self._file = io.FileIO(fd, "rb")
        self.reads = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        self.reads += 1
        return self._file.readinto(buffer) or 0

    def close(self) -> None:
        self._file.close()
        super().close()


def written_in_pieces(pieces: list[bytes]) -> tuple[CountedReads, threading.Thread]:
    """A pipe whose writer (a thread) sends `pieces` one write each, then closes it; each
    piece after the first is written only once the reader took the one before (a partial read
    every time, whatever the scheduling)."""
    read_fd, write_fd = os.pipe()
    reader = CountedReads(read_fd)

    def write() -> None:
        with open(write_fd, "wb", buffering=0) as out:
            for piece in pieces:
                out.write(piece)
                while reader.reads == 0 or _pending(read_fd):
                    threading.Event().wait(0.001)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return reader, writer


def _pending(fd: int) -> int:
    """Bytes written to the pipe and not read yet (FIONREAD)."""
    import termios

    count = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, count)
    return int.from_bytes(count, "little")


def framed(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


@pytest.fixture
def closing() -> Iterator[list[CountedReads]]:
    opened: list[CountedReads] = []
    yield opened
    for pipe in opened:
        pipe.close()


def test_a_frame_split_by_the_pipe_arrives_whole(closing: list[CountedReads]) -> None:
    payload = bytes(range(256)) * 40
    whole = framed(payload) + framed(b"next")
    pieces = [whole[:2], whole[2:7], whole[7:4000], whole[4000:]]  # the length split too
    reader, writer = written_in_pieces(pieces)
    closing.append(reader)
    assert chunk_pool._read_frame(reader) == payload  # type: ignore[arg-type]
    assert chunk_pool._read_frame(reader) == b"next"  # type: ignore[arg-type]
    assert reader.reads >= len(pieces)  # partial reads, each continued
    writer.join()
    with pytest.raises(chunk_pool.WorkerStopped, match=r"the process ended$"):
        chunk_pool._read_frame(reader)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("sent", "reason"),
    [(b"\x00\x00", r"the process ended$"), (framed(b"x" * 100)[:40], "mid-answer")],
)
def test_an_end_of_file_mid_frame_is_a_stopped_worker(
    closing: list[CountedReads], sent: bytes, reason: str
) -> None:
    reader, writer = written_in_pieces([sent])
    closing.append(reader)
    with pytest.raises(chunk_pool.WorkerStopped, match=reason):
        chunk_pool._read_frame(reader)  # type: ignore[arg-type]
    writer.join()


def test_a_huge_frame_arrives_whole(closing: list[CountedReads]) -> None:
    payload = os.urandom(1 << 16) * 600  # ~39 MB: many times any pipe's size
    read_fd, write_fd = os.pipe()
    reader = CountedReads(read_fd)
    closing.append(reader)

    def write() -> None:
        with open(write_fd, "wb") as out:
            chunk_pool._write_frame(out, payload)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    assert chunk_pool._read_frame(reader) == payload  # type: ignore[arg-type]
    writer.join()
    assert reader.reads > 1


def test_a_worker_answers_in_one_frame_per_batch_and_decodes_alike(tmp_path: Path) -> None:
    """`serve` writes the length and the answers as one buffer (reused between frames):
    every frame reads back to exactly what `prepare` gives in-process."""
    for n in range(3):
        (tmp_path / f"m{n}.py").write_text(
            "".join(f"def f{n}_{k}(x):\n    return x\n\n" for k in range(40 * (3 - n)))
        )
    settings = build_settings({}, {})[0]
    jobs = [chunk_pool.Job.of(f, "") for f in discover(tmp_path, settings.index).files]
    batches = [jobs[:1], jobs[1:]]
    stdin = io.BytesIO(b"".join(framed(msgspec.msgpack.encode(b)) for b in batches))
    stdout = io.BytesIO()
    worker = chunk_pool.WorkerSettings(settings.index, settings.chunk, recycle_bytes=0)
    assert chunk_pool.serve(stdin, stdout, worker) is None
    stdout.seek(0)
    decoder = msgspec.msgpack.Decoder(list[chunk_pool.PreparedFile])
    for batch in batches:
        answers = decoder.decode(chunk_pool._read_frame(stdout))
        expected = [chunk_pool.prepare(job, settings.index, settings.chunk) for job in batch]
        assert msgspec.msgpack.encode(answers) == msgspec.msgpack.encode(expected)
    with pytest.raises(chunk_pool.WorkerStopped):
        chunk_pool._read_frame(stdout)


def test_the_workers_answer_pipes_hold_a_whole_frame() -> None:
    """Issue 42: a worker's ~0.7 MB answer went through Linux's 64 KB pipe in ten or more
    pieces, each waking the reader; the pass now asks for PIPE_BYTES where the system allows."""
    if int(Path("/proc/sys/fs/pipe-max-size").read_text()) < chunk_pool.PIPE_BYTES:
        pytest.skip("this system caps a pipe below PIPE_BYTES")
    settings = build_settings({}, {})[0]
    workers = chunk_pool._Workers(1, chunk_pool.WorkerSettings(settings.index, settings.chunk))
    try:
        stdout = workers._procs[0].stdout
        assert stdout is not None
        assert fcntl.fcntl(stdout.fileno(), F_GETPIPE_SZ) == chunk_pool.PIPE_BYTES
    finally:
        workers.stop()


@pytest.mark.parametrize("asked", [-1, 2**31 - 1])  # refused: invalid, over any limit
def test_a_pipe_the_system_will_not_widen_is_left_as_it_is(
    monkeypatch: pytest.MonkeyPatch, asked: int
) -> None:
    monkeypatch.setattr(chunk_pool, "PIPE_BYTES", asked)
    read_fd, write_fd = os.pipe()
    with open(read_fd, "rb") as pipe, open(write_fd, "wb"):
        before = fcntl.fcntl(read_fd, F_GETPIPE_SZ)
        chunk_pool.widen_pipe(pipe)
        chunk_pool.widen_pipe(None)  # no pipe
        chunk_pool.widen_pipe(io.BytesIO())  # no descriptor
        assert fcntl.fcntl(read_fd, F_GETPIPE_SZ) == before


#: A process writing STOPPED_FRAMES frames of ~1.5 MB (more than a widened pipe holds) with
#: `pipe_write.write_stream` (what a worker writes its frames with), the n-th frame made of byte n.
FRAME_WRITER = """
import os, struct, sys
from codeask.core.runtime.pipe_write import write_stream
frames = int(sys.argv[1])
for n in range(frames):
    size = 1_400_000 + (n * 7919) % 200_000
    frame = bytearray(struct.pack(">I", size)) + bytes([n % 251]) * size
    write_stream(sys.stdout.buffer, frame)
"""
STOPPED_FRAMES = 300


def stop_and_continue(pid: int, done: threading.Event) -> None:
    """Stop and continue `pid` again and again (what Ctrl-Z then `fg` does to a pass's
    workers), until `done` or the process is gone."""
    import signal

    while not done.is_set():
        try:
            os.kill(pid, signal.SIGSTOP)
            done.wait(0.005)
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            return
        done.wait(0.01)


def test_frames_written_through_stops_and_continues_arrive_whole() -> None:
    """A write to a pipe cut short by a stop and a continue writes part of the frame; a
    worker's `sys.stdout.buffer` (CPython 3.11) then lost the rest (a lost tail in every run of
    this shape, and `codeask index` failed on a UnicodeDecodeError). Every frame arrives whole,
    in order."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-c", FRAME_WRITER, str(STOPPED_FRAMES)], stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    chunk_pool.widen_pipe(proc.stdout)
    done = threading.Event()
    stopper = threading.Thread(target=stop_and_continue, args=(proc.pid, done), daemon=True)
    stopper.start()
    try:
        for n in range(STOPPED_FRAMES):
            frame = chunk_pool._read_frame(proc.stdout)
            assert len(frame) == 1_400_000 + (n * 7919) % 200_000
            assert frame.count(n % 251) == len(frame), f"frame {n} holds another's bytes"
    finally:
        done.set()
        stopper.join()
        proc.kill()
        proc.wait()
        proc.stdout.close()
