"""Reading, chunking and static embedding in worker processes while the indexing thread stores.

Most of a first pass's CPU is work that needs nothing but the file: reading and hashing it,
redacting secrets, tree-sitter, each chunk's metadata, its lexical columns and its static-tier
vector. On a machine with two cores or more that work runs in other processes, one per core
(threads would share one GIL), and the indexing thread is left the store. Small passes (an
editor's save, a branch switch of a few files) stay in-process: starting workers costs more
than they do.

Workers are plain `python -m codeask.core.indexer.chunk_worker` processes speaking msgpack
frames over their pipes, not multiprocessing: multiprocessing's spawn re-runs the caller's main
script in every worker (an unguarded script using codeask as a library indexed the same folder
again, in the child), and fork is unsafe in a threaded server.
"""

from __future__ import annotations

import fcntl
import logging
import os
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, TYPE_CHECKING

import msgspec
import numpy as np

from codeask.config import ChunkSettings, IndexSettings, cpu_cores
from codeask.core.records import Chunk
from codeask.core.runtime.collector import fewer_collections
from codeask.core.runtime.pipe_write import write_stream
from codeask.core.source.discover import SkippedFile, SourceFile, load_source
from codeask.core.storage.quantized_rows import QuantizedRows, unit_quantized

if TYPE_CHECKING:
    from codeask.core.embedding.static import StaticEmbedder

log = logging.getLogger("codeask.core.indexer")

#: Bytes of changed files from which a pass starts worker processes: below it, starting them
#: (~0.25 s of CPU each) costs more than it saves. Measured on 2 cores, round 16 (workers that
#: embed the static tier too, a package that no longer loads `folder` in them): passes of
#: 1.1-1.4 MB ran 10-25% faster with two workers, one of 0.7 MB the same.
POOL_FROM_BYTES = 1_000_000
#: Files per frame sent to a worker: few enough that a cancel waits little, enough that the
#: per-frame cost (encoding, a pipe round trip) stays small beside chunking.
FILES_PER_TASK = 8
#: Answers a worker may have ready before the pass takes them (read by a thread per worker, so
#: a worker with a slow file does not leave the others waiting to hand theirs over) ...
FRAMES_AHEAD = 8
#: ... and their bytes at most (one frame whatever its size): a frame of eight large headers
#: carries tens of thousands of chunks with their columns and 1 KB vectors each, and eight such
#: frames read ahead per worker held hundreds of MB in the indexing process (issue 42).
BYTES_AHEAD = 16 * 1024 * 1024
#: The worker's module, run with this interpreter.
WORKER_MODULE = "codeask.core.indexer.chunk_worker"
#: Resident bytes past which a worker starts afresh between two frames (the same process id
#: and pipes, a new interpreter: `recycle`). py-tree-sitter 0.26 kept every object a parse's
#: read callable returned, so a worker grew with what it parsed (~840 MB each on the whole
#: kernel before); parse_bound.py now hands it a reused buffer, and this bound stays a guard
#: against growth of any other kind. A fresh worker starts at ~100 MB and costs ~0.3 s of CPU;
#: its caches fill again as it goes (~1.5 CPU-s on kernel,mm,lib).
RECYCLE_RSS_BYTES = 320 * 1024 * 1024
#: The pipe size asked for each worker's answers (Linux's default is 64 KB, its ceiling for a
#: user 1 MB: /proc/sys/fs/pipe-max-size).
PIPE_BYTES = 1024 * 1024
_LENGTH = struct.Struct(">I")


class Job(msgspec.Struct, frozen=True, array_like=True):
    """One file to read and, when its content changed, chunk."""

    root: str
    rel: str
    path: str
    size: int
    mtime_ns: int
    known_sha256: str
    """The content hash the index has for the file ('' when new): equal means no chunking."""

    @classmethod
    def of(cls, source: SourceFile, known_sha256: str) -> Job:
        root, path = str(source.root), str(source.path)
        return cls(root, source.rel, path, source.size, source.mtime_ns, known_sha256)

    def source(self) -> SourceFile:
        return SourceFile(Path(self.root), self.rel, self.size, self.mtime_ns)


class PreparedFile(msgspec.Struct, array_like=True, omit_defaults=True):
    """What a file became, ready for the store: no text is sent back, only what is kept."""

    rel: str
    skipped: str = ""
    """Why the file is left out ('' when it was read)."""
    sha256: str = ""
    size: int = 0
    mtime_ns: int = 0
    """Of exactly the bytes that were read."""
    changed: bool = False
    """False when the content is what the index has already (nothing was chunked)."""
    language: str = ""
    chunks: list[Chunk] = msgspec.field(default_factory=list)
    fallback_reason: str = ""
    columns: list[tuple[str, str, str]] = msgspec.field(default_factory=list)
    """Each chunk's lexical columns (body, symbol, path), computed where the chunk was made."""
    static_vectors: bytes = b""
    """The chunks' static-tier vectors as the tier stores them (int8 unit rows in chunk order,
    `unit_quantized`) when a worker embedded them; empty when the indexing process does
    (in-process passes, the tier off) ..."""
    static_scales: bytes = b""
    """... and their scales (float32, one a row)."""

    def static_rows(self, dim: int) -> QuantizedRows | None:
        """The static vectors, or None when absent or not one row of `dim` per chunk."""
        count = len(self.chunks)
        if not count or len(self.static_vectors) != count * dim:
            return None
        if len(self.static_scales) != count * 4:
            return None
        rows = np.frombuffer(self.static_vectors, dtype=np.int8).reshape(count, dim)
        return QuantizedRows(rows, np.frombuffer(self.static_scales, dtype=np.float32))


class WorkerSettings(msgspec.Struct, array_like=True):
    """The first frame a worker reads: what decides how files are read and cut."""

    index: IndexSettings
    chunk: ChunkSettings
    static_cache: str = ""
    """The cache folder of the static tier when workers embed it too ('' when they do not):
    its model files are verified there once per machine (static.py)."""
    recycle_bytes: int = RECYCLE_RSS_BYTES
    """The worker's resident bytes past which it starts afresh (0: never)."""


def prepare(job: Job, index: IndexSettings, chunk: ChunkSettings) -> PreparedFile:
    """Read, and chunk when changed; never raises for a bad file (load_source and chunk_file
    turn every failure into a skip reason or line windows)."""
    loaded = load_source(job.source(), index)
    if isinstance(loaded, SkippedFile):
        return PreparedFile(job.rel, skipped=loaded.reason)
    kept = PreparedFile(job.rel, sha256=loaded.sha256, size=loaded.size, mtime_ns=loaded.mtime_ns)
    if loaded.sha256 == job.known_sha256:
        return kept
    from codeask.core.source.chunk import chunk_file  # tree-sitter: only when a file changed
    from codeask.core.storage.lexical.index import chunks_columns

    result = chunk_file(job.rel, loaded.text, chunk)
    kept.changed, kept.language, kept.chunks = True, result.language, result.chunks
    kept.fallback_reason = result.fallback_reason
    kept.columns = chunks_columns(result.chunks)
    return kept


def _in_process(
    jobs: list[Job], index: IndexSettings, chunk: ChunkSettings
) -> Iterator[PreparedFile]:
    """The jobs prepared in this thread, one by one as the pass asks for them."""
    return (prepare(job, index, chunk) for job in jobs)


def worker_count(setting: int) -> int:
    """The workers a pass may use: the setting, capped at the CPU cores, and 0 on a single
    core. The workers embed the static tier too, so the indexing thread is left little but
    storing: on 2 cores, two workers ran laravel's first pass in 3.05 s to one's 4.49 s."""
    cores = cpu_cores()
    return 0 if cores < 2 else max(0, min(setting, cores))


@contextmanager
def prepared_files(
    jobs: list[Job],
    index: IndexSettings,
    chunk: ChunkSettings,
    setting: int,
    static_cache: str = "",
) -> Iterator[Iterator[PreparedFile]]:
    """Every job's PreparedFile, in the order of `jobs`; worker processes only when the pass is
    large enough and a core is spare, and they embed the static tier too when `static_cache`
    names its cache folder. Leaving the block (a cancel included) stops the workers."""
    workers = worker_count(setting)
    if workers == 0 or sum(job.size for job in jobs) < POOL_FROM_BYTES:
        yield _in_process(jobs, index, chunk)
        return
    try:
        pool = _Workers(workers, WorkerSettings(index, chunk, static_cache, RECYCLE_RSS_BYTES))
    except OSError as exc:  # no process could start (a limit, a missing interpreter)
        log.warning("chunking in-process: no worker could start (%s)", exc)
        yield _in_process(jobs, index, chunk)
        return
    try:
        yield pool.prepare_all(jobs)
    finally:
        pool.stop()


class WorkerStopped(Exception):
    """A worker closed its pipe before answering (it crashed or was killed)."""


class _Ahead:
    """One worker's answers read ahead of the pass: FRAMES_AHEAD frames and BYTES_AHEAD bytes
    at most, and always room for one."""

    def __init__(self) -> None:
        self._items: deque[bytes | Exception] = deque()
        self._bytes = 0
        self._changed = threading.Condition()

    def put(self, item: bytes | Exception, stopping: threading.Event) -> bool:
        """Queue `item` once there is room; False when the pool stopped meanwhile."""
        size = len(item) if isinstance(item, bytes) else 0
        with self._changed:
            while self._items and (
                len(self._items) >= FRAMES_AHEAD or self._bytes + size > BYTES_AHEAD
            ):
                if stopping.is_set():
                    return False
                self._changed.wait(0.1)
            self._items.append(item)
            self._bytes += size
            self._changed.notify_all()
        return True

    def get(self) -> bytes | Exception:
        """The next answer, waiting for it."""
        with self._changed:
            while not self._items:
                self._changed.wait()
            item = self._items.popleft()
            self._bytes -= len(item) if isinstance(item, bytes) else 0
            self._changed.notify_all()
            return item


class _Workers:
    """Worker processes fed round-robin by a thread; each one's answers are read by a thread of
    its own into a short queue (`_Ahead`), which the caller takes in job order."""

    def __init__(self, count: int, settings: WorkerSettings) -> None:
        self._settings = settings
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder = msgspec.msgpack.Decoder(list[PreparedFile])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self._procs = [
            subprocess.Popen(
                # -P: `-m` would put the working directory (an editor's workspace) first on
                # sys.path, and a workspace's own `codeask/` would run instead of codeask
                [sys.executable, "-P", "-m", WORKER_MODULE],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
            for _ in range(count)
        ]
        for proc in self._procs:
            widen_pipe(proc.stdout)
        self._feeder: threading.Thread | None = None
        self._stopping = threading.Event()
        self._answers: list[_Ahead] = []
        self._readers: list[threading.Thread] = []

    def prepare_all(self, jobs: list[Job]) -> Iterator[PreparedFile]:
        """Results in job order; if a worker stops, the files not yet received are prepared
        here, as without workers, and the reason is logged."""
        batches = [jobs[i : i + FILES_PER_TASK] for i in range(0, len(jobs), FILES_PER_TASK)]
        self._feeder = threading.Thread(
            target=self._feed, args=(batches,), name="codeask-chunk-feeder", daemon=True
        )
        self._feeder.start()
        for proc in self._procs:
            answers = _Ahead()
            reader = threading.Thread(
                target=self._read, args=(proc, answers), name="codeask-chunk-reader", daemon=True
            )
            reader.start()
            self._answers.append(answers)
            self._readers.append(reader)
        received = 0
        try:
            for number, batch in enumerate(batches):
                frame = self._answers[number % len(self._procs)].get()
                if isinstance(frame, Exception):
                    raise WorkerStopped(str(frame))
                prepared = self._decoder.decode(frame)
                if len(prepared) != len(batch):
                    raise WorkerStopped(f"{len(prepared)} answers for {len(batch)} files")
                yield from prepared
                received += len(batch)
        except (WorkerStopped, OSError, ValueError) as exc:  # a msgspec.DecodeError is one
            log.warning(
                "a chunking process stopped (%s); the %d files left are chunked in-process",
                exc,
                len(jobs) - received,
            )
            settings = self._settings
            yield from _in_process(jobs[received:], settings.index, settings.chunk)

    def _feed(self, batches: list[list[Job]]) -> None:
        """The settings, then every batch to its worker; closing stdin tells a worker it is done."""
        try:
            head = self._encoder.encode(self._settings)
            for proc in self._procs:
                _write_frame(proc.stdin, head)
            for number, batch in enumerate(batches):
                stdin = self._procs[number % len(self._procs)].stdin
                _write_frame(stdin, self._encoder.encode(batch))
            for proc in self._procs:
                if proc.stdin is not None:
                    proc.stdin.close()
        except (OSError, ValueError):  # a worker stopped or was stopped: the reader says why
            pass

    def _read(self, proc: subprocess.Popen[bytes], answers: _Ahead) -> None:
        """One worker's frames into its queue until it ends (the end is queued as an error)."""
        while not self._stopping.is_set():
            item: bytes | Exception
            try:
                if proc.stdout is None:
                    raise OSError("no pipe")
                item = _read_frame(proc.stdout)
            except (WorkerStopped, OSError, ValueError) as exc:
                item = exc
            if not answers.put(item, self._stopping):
                return
            if isinstance(item, Exception):
                return

    def stop(self) -> None:
        """Workers still running are killed (a cancel, or a pass that is done)."""
        self._stopping.set()
        for proc in self._procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    with suppress(OSError):
                        pipe.close()
        if self._feeder is not None:
            self._feeder.join(timeout=5)
        for reader in self._readers:
            reader.join(timeout=5)


def _write_frame(pipe: IO[bytes] | None, payload: bytes) -> None:
    if pipe is None:
        raise OSError("no pipe")
    write_stream(pipe, _LENGTH.pack(len(payload)) + payload)


def _read_exact(pipe: IO[bytes], size: int) -> bytes:
    """`size` bytes, fewer only at end of file (an unbuffered pipe returns what is there).
    A buffered pipe's `read` fills one bytes object itself: one piece, no copy in the join
    (`readinto` a fresh bytearray cost ~15 % more: bytearray zero-fills; measured, issue 42)."""
    parts: list[bytes] = []
    left = size
    while left:
        part = pipe.read(left)
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _read_frame(pipe: IO[bytes]) -> bytes:
    """One length-prefixed frame; WorkerStopped at end of file."""
    head = _read_exact(pipe, _LENGTH.size)
    if len(head) < _LENGTH.size:
        raise WorkerStopped("the process ended")
    (length,) = _LENGTH.unpack(head)
    payload = _read_exact(pipe, length)
    if len(payload) < length:
        raise WorkerStopped("the process ended mid-answer")
    return payload


def widen_pipe(pipe: IO[bytes] | None) -> None:
    """Let `pipe` hold a whole frame (PIPE_BYTES) where Linux allows it: a worker then writes
    its answer at once instead of waking the reader for every 64 KB. Left as it is elsewhere
    (another system, a per-user limit on pipe memory reached)."""
    setting = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    if pipe is None or setting is None:
        return
    with suppress(OSError, ValueError):
        fcntl.fcntl(pipe.fileno(), setting, PIPE_BYTES)


def read_settings(stdin: IO[bytes]) -> WorkerSettings:
    """The first frame a worker reads."""
    return msgspec.msgpack.decode(_read_frame(stdin), type=WorkerSettings)


def serve(stdin: IO[bytes], stdout: IO[bytes], settings: WorkerSettings) -> WorkerSettings | None:
    """The worker's side: a batch of jobs per frame until stdin closes (None), or until the
    worker passed `settings.recycle_bytes` (the settings returned: start afresh with them).
    `stdin` must not read ahead (unbuffered): a fresh worker reads on where this one left."""
    decoder = msgspec.msgpack.Decoder(list[Job])
    encoder = msgspec.msgpack.Encoder()
    frame = bytearray()
    # the worker's chunks, token lists and frames are as short-lived as the indexing
    # process's: young collections at the default 700 allocations were ~1.4 % of its CPU
    with fewer_collections(), _static_model(settings.static_cache) as model:
        while True:
            try:
                jobs = decoder.decode(_read_frame(stdin))
            except WorkerStopped:
                return None
            answers = [prepare(job, settings.index, settings.chunk) for job in jobs]
            if model is not None:
                _embed_static(model, answers)
            # the length and the answers in one buffer kept between frames: one write, and no
            # new frame-sized bytes each time (encoding ~15 % less CPU on kernel,mm,lib,fs)
            encoder.encode_into(answers, frame, _LENGTH.size)
            _LENGTH.pack_into(frame, 0, len(frame) - _LENGTH.size)
            write_stream(stdout, frame)  # every byte (pipe_write.py: not `stdout.write`)
            if 0 < settings.recycle_bytes < resident_bytes():
                return settings


def resident_bytes() -> int:
    """This process's resident set now (0 where /proc is not there: never recycled)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@contextmanager
def _static_model(cache: str) -> Iterator[StaticEmbedder | None]:
    """The static model, widened once for the worker's life, when it embeds the tier."""
    if not cache:
        yield None
        return
    from codeask.core.embedding.static import StaticEmbedder, static_model_files

    model = StaticEmbedder(**static_model_files(Path(cache)))
    with model.widened():
        yield model


def _embed_static(model: StaticEmbedder, answers: list[PreparedFile]) -> None:
    """One embedding call for a frame's chunks: the static tier is the other half of a first
    pass's CPU, and here it runs beside the chunking instead of in the indexing process."""
    chunks = [c for answer in answers for c in answer.chunks]
    if not chunks:
        return
    # stored as the tier stores them (int8 and a scale a row): a quarter of the float32 bytes
    # through the pipe, and the indexing process keeps them as they come (issue 42)
    stored = unit_quantized(model.embed([c.embed_text() for c in chunks]))
    at = 0
    for answer in answers:
        if answer.chunks:
            end = at + len(answer.chunks)
            answer.static_vectors = stored.rows[at:end].tobytes()
            answer.static_scales = stored.scales[at:end].tobytes()
            at = end
