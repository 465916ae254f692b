"""Reading and chunking files in worker processes while the indexing thread stores and embeds.

A first pass spends about half its CPU on work that needs nothing but the file: reading and
hashing it, redacting secrets, tree-sitter, each chunk's metadata and its lexical columns. On a
machine with a spare core that half runs in other processes (threads would share one GIL), so
storing and the static tier overlap it. Small passes (an editor's save, a branch switch of a few
files) stay in-process: starting a worker costs more than they do.

Workers are plain `python -m codeask.core.indexer.chunk_worker` processes speaking msgpack
frames over their pipes, not multiprocessing: multiprocessing's spawn re-runs the caller's main
script in every worker (an unguarded script using codeask as a library indexed the same folder
again, in the child), and fork is unsafe in a threaded server.
"""

from __future__ import annotations

import logging
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO

import msgspec

from codeask.config import ChunkSettings, IndexSettings
from codeask.core.records import Chunk
from codeask.core.source.discover import SkippedFile, SourceFile, load_source

log = logging.getLogger("codeask.core.indexer")

#: Bytes of changed files from which a pass starts worker processes: below it, starting one
#: (~0.3 s of CPU) costs more than it saves. Measured on 2 cores (benchmarks/README.md, round
#: 15): 1.3-2.2 MB passes ran 5-10% slower with a worker, 3.4 MB and more 3-18% faster.
POOL_FROM_BYTES = 3_000_000
#: Files per frame sent to a worker: few enough that a cancel waits little, enough that the
#: per-frame cost (encoding, a pipe round trip) stays small beside chunking.
FILES_PER_TASK = 8
#: The worker's module, run with this interpreter.
WORKER_MODULE = "codeask.core.indexer.chunk_worker"
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
        return SourceFile(Path(self.root), self.rel, Path(self.path), self.size, self.mtime_ns)


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


class WorkerSettings(msgspec.Struct, array_like=True):
    """The first frame a worker reads: what decides how files are read and cut."""

    index: IndexSettings
    chunk: ChunkSettings


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
    from codeask.core.storage.lexical.index import doc_columns

    result = chunk_file(job.rel, loaded.text, chunk)
    kept.changed, kept.language, kept.chunks = True, result.language, result.chunks
    kept.fallback_reason = result.fallback_reason
    kept.columns = [doc_columns(c) for c in result.chunks]
    return kept


def _in_process(
    jobs: list[Job], index: IndexSettings, chunk: ChunkSettings
) -> Iterator[PreparedFile]:
    """The jobs prepared in this thread, one by one as the pass asks for them."""
    return (prepare(job, index, chunk) for job in jobs)


def worker_count(setting: int) -> int:
    """The workers a pass may use: the setting, capped at the CPU cores less one (the indexing
    thread keeps one core), and 0 on a single core."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        cores = os.cpu_count() or 1
    return max(0, min(setting, cores - 1))


@contextmanager
def prepared_files(
    jobs: list[Job], index: IndexSettings, chunk: ChunkSettings, setting: int
) -> Iterator[Iterator[PreparedFile]]:
    """Every job's PreparedFile, in the order of `jobs`; worker processes only when the pass is
    large enough and a core is spare. Leaving the block (a cancel included) stops the workers."""
    workers = worker_count(setting)
    if workers == 0 or sum(job.size for job in jobs) < POOL_FROM_BYTES:
        yield _in_process(jobs, index, chunk)
        return
    try:
        pool = _Workers(workers, WorkerSettings(index, chunk))
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


class _Workers:
    """Worker processes fed round-robin by a thread, read in order by the caller: each pipe
    holds at most a frame or two, so neither side runs far ahead of the other."""

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
        self._feeder: threading.Thread | None = None

    def prepare_all(self, jobs: list[Job]) -> Iterator[PreparedFile]:
        """Results in job order; if a worker stops, the files not yet received are prepared
        here, as without workers, and the reason is logged."""
        batches = [jobs[i : i + FILES_PER_TASK] for i in range(0, len(jobs), FILES_PER_TASK)]
        self._feeder = threading.Thread(
            target=self._feed, args=(batches,), name="codeask-chunk-feeder", daemon=True
        )
        self._feeder.start()
        received = 0
        try:
            for number, batch in enumerate(batches):
                stdout = self._procs[number % len(self._procs)].stdout
                assert stdout is not None
                prepared = self._decoder.decode(_read_frame(stdout))
                if len(prepared) != len(batch):
                    raise WorkerStopped(f"{len(prepared)} answers for {len(batch)} files")
                yield from prepared
                received += len(batch)
        except (WorkerStopped, OSError, msgspec.DecodeError) as exc:
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

    def stop(self) -> None:
        """Workers still running are killed (a cancel, or a pass that is done)."""
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


def _write_frame(pipe: IO[bytes] | None, payload: bytes) -> None:
    if pipe is None:
        raise OSError("no pipe")
    pipe.write(_LENGTH.pack(len(payload)))
    pipe.write(payload)
    pipe.flush()


def _read_frame(pipe: IO[bytes]) -> bytes:
    """One length-prefixed frame; WorkerStopped at end of file."""
    head = pipe.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise WorkerStopped("the process ended")
    (length,) = _LENGTH.unpack(head)
    payload = pipe.read(length)
    if len(payload) < length:
        raise WorkerStopped("the process ended mid-answer")
    return payload


def serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """The worker's side: settings, then a batch of jobs per frame until stdin closes."""
    settings = msgspec.msgpack.decode(_read_frame(stdin), type=WorkerSettings)
    decoder = msgspec.msgpack.Decoder(list[Job])
    encoder = msgspec.msgpack.Encoder()
    while True:
        try:
            frame = _read_frame(stdin)
        except WorkerStopped:
            return
        answers = [prepare(job, settings.index, settings.chunk) for job in decoder.decode(frame)]
        _write_frame(stdout, encoder.encode(answers))
