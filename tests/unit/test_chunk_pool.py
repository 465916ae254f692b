"""Chunking in worker processes (core/indexer/chunk_pool.py), with real worker processes: the
index a pass builds with workers is the one it builds without, a worker that dies costs nothing,
a cancel stops the workers, and a caller's unguarded script is never run again in a worker."""

from __future__ import annotations

import contextlib
import gc
import io
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from codeask.config import build_settings
from codeask.core.indexer import (
    CancelToken,
    FolderIndex,
    IndexReport,
    Progress,
    chunk_pool,
    chunk_worker,
)
from codeask.core.indexer.vectors import VectorTiers
from codeask.core.records import Chunk
from codeask.core.runtime import collector
from codeask.core.source.discover import discover
from codeask.core.storage.quantized_rows import unit_quantized
from support import in_process_env

PY = '''"""Module {n}: {topic} helpers."""


class {cls}:
    """Keeps {topic} state."""

    def update_{topic}(self, value):
        """Set the {topic} value."""
        self.value = value
        return helper_{n}(value)


def helper_{n}(value):
    return value * {n}
'''
GO = (
    "package p{n}\n\n// Handle{cls} serves {topic}.\n"
    "func Handle{cls}(x int) int {{\n\treturn x + {n}\n}}\n"
)
TOPICS = ("cache", "router", "parser", "token", "stream", "session", "queue", "schema")


def make_tree(root: Path, count: int = 60) -> Path:
    """`count` code files in two languages, plus files every pass must skip with a reason."""
    for n in range(count):
        topic = TOPICS[n % len(TOPICS)]
        cls = f"{topic.title()}Keeper{n}"
        rel = f"pkg{n % 5}/mod_{n}.py" if n % 3 else f"go/p{n}/h.go"
        text = (PY if n % 3 else GO).format(n=n, topic=topic, cls=cls)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "blob.py").write_bytes(b"\x00\x01binary")
    (root / "latin.py").write_bytes("caf\xe9 = 1\n".encode("latin-1"))
    (root / "docs.md").write_text("# Guide\n\n## Routing\n\nThe router maps paths.\n")
    return root


def open_index(root: Path, workers: int) -> FolderIndex:
    settings, warnings = build_settings(
        {"history": {"enabled": False}, "index": {"chunk_workers": workers}}, {}
    )
    assert warnings == []
    return FolderIndex(root, settings)


@pytest.fixture
def pool_for_small_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers for any pass, and two of them even on a one-core machine."""
    monkeypatch.setattr(chunk_pool, "POOL_FROM_BYTES", 1)
    monkeypatch.setattr(chunk_pool, "worker_count", lambda setting: min(setting, 2))


def record_facts(record: object) -> dict[str, Any]:
    """A file record without its mtime (the two trees were written at different times)."""
    fields = type(record).__struct_fields__  # type: ignore[attr-defined]
    return {name: getattr(record, name) for name in fields if name != "mtime_ns"}


def snapshot(index: FolderIndex) -> dict[str, Any]:
    """Everything a search reads: files, chunks with ids, lexical hits, static vectors."""
    local = index.local
    files = {rel: record_facts(local.file(rel)) for rel in sorted(local.paths())}
    chunks = {c.id: msgspec.to_builtins(c) for c in local.all_chunks()}
    vectors = {}
    for chunk_id in chunks:
        row = local.vector("static", chunk_id)
        vectors[chunk_id] = None if row is None else np.asarray(row, np.float32).tobytes()
    lexical = {q: local.lexical_top_k(q, 10) for q in ("router paths", "update_cache", "Handle")}
    return {"files": files, "chunks": chunks, "vectors": vectors, "lexical": lexical}


def stat_fields(proc: Path) -> list[str]:
    """/proc/PID/stat from its third field (the state) on: the command before it, in
    parentheses, may hold spaces."""
    return (proc / "stat").read_text().rsplit(")", 1)[1].split()


def nice_value(pid: int) -> int:
    """A process's nice value (/proc/PID/stat's field 19)."""
    return int(stat_fields(Path(f"/proc/{pid}"))[16])


def worker_processes() -> list[int]:
    """This process's chunking workers still alive (from /proc: a zombie has no cmdline)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int(stat_fields(entry)[1])
            command = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        if parent == os.getpid() and chunk_pool.WORKER_MODULE.encode() in command:
            alive.append(int(entry.name))
    return alive


@pytest.mark.usefixtures("pool_for_small_passes")
def test_workers_build_the_same_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with_workers = make_tree(tmp_path / "a")
    without = make_tree(tmp_path / "b")
    one, two = open_index(with_workers, 2), open_index(without, 0)
    embedded_here: list[int] = []  # static vectors computed in this process, per batch
    original = VectorTiers.embed_static_chunks

    def spy(self: VectorTiers, chunks: list[Chunk], report: IndexReport) -> None:
        embedded_here.append(len(chunks))
        original(self, chunks, report)

    monkeypatch.setattr(VectorTiers, "embed_static_chunks", spy)
    try:
        report = one.refresh(embed=False)
        assert embedded_here == []  # the workers embedded every chunk
        serial = two.refresh(embed=False)
        assert sum(embedded_here) == report.static_computed  # in-process: the same chunks
        assert report.files_indexed == serial.files_indexed == 61  # 60 code files + docs.md
        assert sorted(s.rel for s in report.skipped) == ["blob.py", "latin.py"]
        assert {s.rel: s.reason for s in report.skipped} == {
            s.rel: s.reason for s in serial.skipped
        }
        assert report.static_computed > 0
        first, second = snapshot(one), snapshot(two)
        assert len(first["chunks"]) > 100
        assert all(v is not None for v in first["vectors"].values())  # embedded as it went
        assert first == second
    finally:
        one.close()
        two.close()
    assert worker_processes() == []


@pytest.mark.usefixtures("pool_for_small_passes")
def test_a_second_pass_reads_nothing_and_an_edit_is_rechunked(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    index = open_index(root, 2)
    try:
        index.refresh(embed=False)
        again = index.refresh(embed=False)
        assert (again.files_indexed, again.files_unchanged) == (0, 63)  # skipped ones too
        (root / "pkg1" / "mod_1.py").write_text("def renamed_everything():\n    return 1\n")
        edited = index.refresh(embed=False)
        assert edited.files_indexed == 1
        hits = index.local.lexical_top_k("renamed_everything", 5)
        assert hits and index.local.chunk(hits[0][0]).path == "pkg1/mod_1.py"  # type: ignore[union-attr]
    finally:
        index.close()


def two_workers(
    tmp_path: Path,
) -> tuple[list[chunk_pool.Job], list[chunk_pool.PreparedFile], chunk_pool._Workers]:
    """A generated tree's jobs, what they give in-process, and two workers to prepare them."""
    settings = build_settings({}, {})[0]
    index_settings, chunk_settings = settings.index, settings.chunk
    files = discover(make_tree(tmp_path), index_settings).files
    jobs = [chunk_pool.Job.of(f, "") for f in files]
    expected = [chunk_pool.prepare(job, index_settings, chunk_settings) for job in jobs]
    workers = chunk_pool._Workers(2, chunk_pool.WorkerSettings(index_settings, chunk_settings))
    return jobs, expected, workers


def test_a_worker_that_dies_costs_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    jobs, expected, workers = two_workers(tmp_path)
    try:
        answers = workers.prepare_all(jobs)
        received = [next(answers)]
        for proc in workers._procs:
            proc.kill()
        with caplog.at_level(logging.WARNING, logger="codeask.core.indexer"):
            received += list(answers)
    finally:
        workers.stop()
    assert msgspec.msgpack.encode(received) == msgspec.msgpack.encode(expected)
    assert "a chunking process stopped" in caplog.text


class GarbledOnce:
    """A decoder whose second frame arrives garbled (an injected fault: a pipe that lost bytes
    decoded as text that is not UTF-8, what a stopped and continued worker once caused)."""

    def __init__(self) -> None:
        self._real = msgspec.msgpack.Decoder(list[chunk_pool.PreparedFile])
        self.frames = 0

    def decode(self, frame: bytes) -> list[chunk_pool.PreparedFile]:
        self.frames += 1
        if self.frames == 2:
            raise UnicodeDecodeError("utf-8", b"\x98", 0, 1, "invalid start byte")
        return self._real.decode(frame)


def test_a_frame_that_does_not_decode_costs_nothing_injected_fault(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    jobs, expected, workers = two_workers(tmp_path)
    workers._decoder = GarbledOnce()  # type: ignore[assignment]
    try:
        with caplog.at_level(logging.WARNING, logger="codeask.core.indexer"):
            received = list(workers.prepare_all(jobs))
    finally:
        workers.stop()
    assert msgspec.msgpack.encode(received) == msgspec.msgpack.encode(expected)
    assert f"the {len(jobs) - chunk_pool.FILES_PER_TASK} files left" in caplog.text


@pytest.mark.usefixtures("pool_for_small_passes")
def test_a_worker_that_cannot_start_costs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(chunk_pool, "WORKER_MODULE", "codeask.no_such_worker")
    index = open_index(make_tree(tmp_path), 2)
    try:
        with caplog.at_level(logging.WARNING, logger="codeask.core.indexer"):
            report = index.refresh(embed=False)
        assert report.files_indexed == 61 and not report.cancelled
        assert "the 63 files left are chunked in-process" in caplog.text  # skipped ones too
    finally:
        index.close()


@pytest.mark.usefixtures("pool_for_small_passes")
def test_cancel_stops_the_workers_and_the_next_pass_completes(tmp_path: Path) -> None:
    # More files than the workers can have answered before the pass stores 50 of them (each
    # reads FRAMES_AHEAD frames ahead, a few more wait in its pipe): a slow, loaded indexing
    # thread must still find them running when it cancels.
    ahead = 2 * (chunk_pool.FRAMES_AHEAD + 8) * chunk_pool.FILES_PER_TASK
    root = make_tree(tmp_path, count=50 + ahead)
    token = CancelToken()

    niceness: list[int] = []

    def cancel_midway(event: Progress) -> None:
        if event.phase == "chunk" and event.files_done >= 50 and not token.cancelled:
            workers = worker_processes()
            assert workers, "the pass should be running its workers"
            niceness.extend(nice_value(pid) for pid in workers)
            token.cancel()

    index = open_index(root, 2)
    try:
        report = index.refresh(embed=False, progress=cancel_midway, cancel=token)
        assert report.cancelled
        # the workers yield the cores to the indexing process (which answers the editor)
        expected = min(19, os.nice(0) + chunk_worker.WORKER_NICENESS)
        assert niceness and all(n == expected for n in niceness), niceness
        assert worker_processes() == []
        resumed = index.refresh(embed=False)
        assert not resumed.cancelled
        assert len(index.local.paths()) == 50 + ahead + 3  # + docs.md and 2 recorded as skipped
        assert index.local.pending_ids("static") == []
    finally:
        index.close()


UNGUARDED = """
import sys
import threading
from pathlib import Path

with open(sys.argv[1], "a") as marker:  # top-level code, no `if __name__ == "__main__"`
    marker.write("ran\\n")

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex, chunk_pool

chunk_pool.POOL_FROM_BYTES = 1
chunk_pool.worker_count = lambda setting: 1
layer = {"history": {"enabled": False}, "index": {"location": sys.argv[3]}}
settings, _ = build_settings(layer, {})
index = FolderIndex(Path(sys.argv[2]), settings)
print(index.refresh(embed=False).files_indexed)
index.close()
"""


def test_an_unguarded_script_runs_once(tmp_path: Path) -> None:
    """multiprocessing's spawn would run this script's top level again in each worker (and
    index the folder a second time from there); codeask's workers run only its own module."""
    root = make_tree(tmp_path / "tree")
    script, marker = tmp_path / "index_it.py", tmp_path / "marker"
    script.write_text(UNGUARDED)
    done = subprocess.run(
        [sys.executable, str(script), str(marker), str(root), str(tmp_path / "idx")],
        capture_output=True,
        text=True,
        timeout=300,
        env=in_process_env(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "61"
    assert marker.read_text() == "ran\n"
    assert "chunking process stopped" not in done.stderr


def test_worker_count_is_capped_at_the_cores_and_none_on_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(chunk_pool.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert [chunk_pool.worker_count(n) for n in (0, 1, 4)] == [0, 1, 2]
    monkeypatch.setattr(chunk_pool.os, "sched_getaffinity", lambda pid: set(range(16)))
    assert [chunk_pool.worker_count(n) for n in (0, 4, 40)] == [0, 4, 16]
    monkeypatch.setattr(chunk_pool.os, "sched_getaffinity", lambda pid: {0})
    assert chunk_pool.worker_count(4) == 0


TROJAN = """
from pathlib import Path
Path(__file__).resolve().parents[1].joinpath("TROJAN_RAN").write_text("the workspace's code ran")
"""


def test_a_workspace_package_named_codeask_is_never_imported_by_a_worker(tmp_path: Path) -> None:
    """`python -m` puts the working directory first on sys.path: a worker started in a workspace
    holding a `codeask/` package would run the workspace's code instead of codeask's."""
    root = make_tree(tmp_path / "tree")
    (root / "codeask" / "core" / "indexer").mkdir(parents=True)
    for package in ("codeask", "codeask/core", "codeask/core/indexer"):
        (root / package / "__init__.py").write_text(TROJAN if package == "codeask" else "")
    (root / "codeask/core/indexer/chunk_worker.py").write_text(TROJAN.replace("[1]", "[3]"))
    script = tmp_path / "index_it.py"
    script.write_text(UNGUARDED)
    done = subprocess.run(
        [
            sys.executable,
            "-P",
            str(script),
            str(tmp_path / "marker"),
            str(root),
            str(tmp_path / "i"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,  # an editor starts codeask in the workspace
        env=in_process_env(),
    )
    assert done.returncode == 0, done.stderr
    assert not (root / "TROJAN_RAN").exists()
    assert "chunking process stopped" not in done.stderr  # the real workers did the pass


def test_static_vectors_of_the_wrong_size_are_not_used() -> None:
    chunk = Chunk(
        path="a.py", language="python", kind="function", start_line=1, end_line=2, text="x"
    )
    stored = unit_quantized(np.ones((1, 4), np.float32))  # as a worker sends them
    rows, scales = stored.rows.tobytes(), stored.scales.tobytes()
    prepared = chunk_pool.PreparedFile(
        "a.py", chunks=[chunk], static_vectors=rows, static_scales=scales
    )
    found = prepared.static_rows(4)
    assert found is not None
    assert np.array_equal(found.rows, stored.rows) and np.array_equal(found.scales, stored.scales)
    assert prepared.static_rows(8) is None  # a row per chunk of this model's width, or none
    assert chunk_pool.PreparedFile("a.py", chunks=[chunk]).static_rows(4) is None
    assert chunk_pool.PreparedFile("a.py", static_vectors=b"").static_rows(4) is None
    no_scales = chunk_pool.PreparedFile("a.py", chunks=[chunk], static_vectors=rows)
    assert no_scales.static_rows(4) is None  # a row without its scale is no row


@pytest.mark.usefixtures("pool_for_small_passes")
def test_workers_past_their_memory_bound_start_afresh_and_build_the_same_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42: a worker grew with what it had parsed (~840 MB on the kernel); past
    RECYCLE_RSS_BYTES it replaces itself between two frames (here: after every frame) with a
    fresh interpreter on the same pipes, and the pass loses nothing."""
    monkeypatch.setattr(chunk_pool, "RECYCLE_RSS_BYTES", 1)
    recycled = make_tree(tmp_path / "a")
    serial = make_tree(tmp_path / "b")
    one, two = open_index(recycled, 2), open_index(serial, 0)
    # every worker answers a frame, then starts afresh before it reads the next one (or its
    # end of input): each one is seen running a fresh interpreter (`--resume`) at some point,
    # an interpreter's start (~0.1 s) being far longer than the watcher's step
    commands: dict[int, set[bool]] = {}
    passing = threading.Event()

    def watch() -> None:
        while not passing.is_set():
            for pid in worker_processes():
                with contextlib.suppress(OSError):
                    command = Path(f"/proc/{pid}/cmdline").read_bytes()
                    commands.setdefault(pid, set()).add(b"--resume" in command)
            time.sleep(0.002)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        report = one.refresh(embed=False)
        passing.set()
        watcher.join()
        two.refresh(embed=False)
        assert report.files_indexed == 61
        assert len(commands) == 2  # both workers were seen
        assert all(True in states for states in commands.values()), commands
        assert snapshot(one) == snapshot(two)
    finally:
        passing.set()
        one.close()
        two.close()
    assert worker_processes() == []


def test_answers_read_ahead_are_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: the indexing process held up to FRAMES_AHEAD frames per worker whatever their
    size (frames of large headers: hundreds of MB); now also BYTES_AHEAD, one frame at least."""
    monkeypatch.setattr(chunk_pool, "BYTES_AHEAD", 10)
    ahead, stopping = chunk_pool._Ahead(), threading.Event()
    assert ahead.put(b"x" * 64, stopping)  # one frame always fits, whatever its size
    stopping.set()  # from here a put that must wait gives up instead
    assert not ahead.put(b"y" * 4, stopping)  # over the bytes: it would have waited
    assert ahead.get() == b"x" * 64
    assert ahead.put(b"y" * 4, stopping) and ahead.put(b"z" * 4, stopping)
    assert not ahead.put(b"w" * 4, stopping)  # 12 bytes > 10
    assert [ahead.get(), ahead.get()] == [b"y" * 4, b"z" * 4]


def test_a_worker_collects_garbage_as_rarely_as_the_indexing_process(tmp_path: Path) -> None:
    """Issue 42: a worker's chunks, token lists and frames are short-lived, as the indexing
    process's are; its young collections ran at CPython's default of every 700 allocations
    (~1.4 % of its CPU). `serve` now holds `fewer_collections` and puts the thresholds back."""
    source = tmp_path / "many.py"
    source.write_text("".join(f"def f{n}(x):\n    return x + {n}\n\n\n" for n in range(400)))
    settings = build_settings({}, {})[0]
    job = chunk_pool.Job.of(next(iter(discover(tmp_path, settings.index).files)), "")
    payload = msgspec.msgpack.encode([job])
    stdin = io.BytesIO(len(payload).to_bytes(4, "big") + payload)
    stdout = io.BytesIO()
    young: list[int] = []

    def seen(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            young.append(gc.get_threshold()[0])

    before = gc.get_threshold()
    worker = chunk_pool.WorkerSettings(settings.index, settings.chunk, recycle_bytes=0)
    gc.collect()  # the count of young objects starts afresh: none is collected before `serve`
    gc.callbacks.append(seen)
    try:
        assert chunk_pool.serve(stdin, stdout, worker) is None  # stdin ended: done
    finally:
        gc.callbacks.remove(seen)
    answer = msgspec.msgpack.decode(stdout.getvalue()[4:], type=list[chunk_pool.PreparedFile])
    assert len(answer[0].chunks) >= 400  # enough allocations for young collections at 700
    # at most the one collection as the default comes back with the count already past it
    assert sum(threshold < collector.BULK_YOUNG for threshold in young) <= 1, young
    assert gc.get_threshold() == before
