"""Issue 42, item B: a long pass spills its new chunk records to disk instead of holding them.

Real processes: each pass is a child `python` running codeask's own `FolderIndex.refresh`, with
one constant lowered (`ChunkMap.spill_at`, so a small folder spills as the kernel would); the
kill is a real SIGKILL of that child while its spill file is on disk.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from codeask.core.records import Chunk
from codeask.core.storage.chunk_file import ChunkFile
from codeask.core.storage.chunk_map import ChunkMap
from codeask.core.storage.chunk_spill import SPILL_PREFIX, SPILL_SUFFIX
from support import codeask
from support.env import in_process_env
from support.writers import live_snapshot

#: Files of the generated folder, and functions in each (one chunk a function).
FILES = 120
FUNCTIONS = 6


#: A pass saves only at its end (`index.checkpoint_seconds` far beyond any test).
NO_TIMED_SAVES = {"CODEASK_INDEX__CHECKPOINT_SECONDS": "1000000"}


def pass_script(setup: str, spilled: str) -> str:
    """A pass in a child process. argv: root, the lowered bound (`setup` lowers it), and
    "block" to stop (and wait to be killed) at the first progress event where `spilled`."""
    return f"""
import json, sys, threading
from pathlib import Path
from codeask.core.indexer.folder import FolderIndex
{setup}
folder = FolderIndex.open(Path(sys.argv[1]))
seen = []

def progress(event):
    if {spilled}:
        seen.append(event.files_done)
        if sys.argv[3] == "block":
            print(json.dumps({{"spilled": True, "folder": str(folder.folder)}}), flush=True)
            threading.Event().wait()  # killed here, mid-pass

report = folder.refresh(progress=progress, embed=False, history=False)
folder.close()
print(json.dumps({{"spilled": bool(seen), "folder": str(folder.folder),
                  "chunks": report.chunks_added}}), flush=True)
"""


#: Chunk records spill to a file in the index folder past `ChunkMap.spill_at`.
PASS = pass_script(
    "from codeask.core.storage.chunk_map import ChunkMap\n"
    "from codeask.core.storage.chunk_spill import SPILL_PREFIX\n"
    "ChunkMap.spill_at = int(sys.argv[2])",
    'list(folder.folder.glob(SPILL_PREFIX + "*"))',
)


def write_folder(root: Path, version: int) -> Path:
    """FILES modules of FUNCTIONS small functions each; `version` changes every function."""
    for n in range(FILES):
        body = "\n\n".join(
            f"def task_{n}_{f}_v{version}(value):\n"
            f'    """Step {f} of job {n}, revision {version}."""\n'
            f"    return value * {f + version} + {n}\n"
            for f in range(FUNCTIONS)
        )
        path = root / "pkg" / f"mod_{n:03d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    return root


def run_pass(
    root: Path, env: dict[str, str], spill_at: int, script: str = PASS
) -> dict[str, object]:
    """A pass in a child running `script` (argv: root, the lowered bound, "run")."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(root), str(spill_at), "run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.splitlines()[-1]))


def records(index_folder: Path) -> dict[int, tuple[str, bytes]]:
    """id -> (path, encoded record) of the live snapshot's chunks."""
    import msgspec

    _, chunks = live_snapshot(index_folder)
    return {c.id: (c.path, msgspec.msgpack.encode(c)) for c in chunks}


def spill_files(index_folder: Path) -> list[Path]:
    return sorted(index_folder.glob(f"{SPILL_PREFIX}*{SPILL_SUFFIX}"))


def test_a_spilled_pass_writes_the_same_chunk_ids_and_records(tmp_path: Path) -> None:
    env = in_process_env(XDG_CACHE_HOME=str(tmp_path / "xdg"))
    kept = write_folder(tmp_path / "kept", 0)
    spilled = write_folder(tmp_path / "spilled", 0)
    in_memory = run_pass(kept, env, 10**9)  # never spills: the delta as it always was
    on_disk = run_pass(spilled, env, 40)
    assert not in_memory["spilled"] and on_disk["spilled"]
    assert on_disk["chunks"] == in_memory["chunks"] >= FILES * FUNCTIONS
    ours, theirs = Path(str(on_disk["folder"])), Path(str(in_memory["folder"]))
    assert records(ours) == records(theirs)
    assert spill_files(ours) == []  # the save folded the spill into the base and deleted it
    # the symbol table covers spilled chunks: an exact name finds its function
    found = codeask("search", "--json", "--no-daemon", "task_77_3_v0", cwd=spilled, env=env)
    assert found.returncode == 0, found.stderr[-2000:]
    hits = json.loads(found.stdout)["results"]
    assert hits and hits[0]["relative_path"] == "pkg/mod_077.py"


def test_a_pass_killed_while_spilling_leaves_the_last_snapshot_loading(tmp_path: Path) -> None:
    # no timed save: on a loaded machine a checkpoint could publish the killed pass's files
    # before the kill, and the test is of the snapshot the kill leaves, not of when saves run
    env = in_process_env(XDG_CACHE_HOME=str(tmp_path / "xdg"), **NO_TIMED_SAVES)
    root = write_folder(tmp_path / "repo", 0)
    first = run_pass(root, env, 10**9)
    index_folder = Path(str(first["folder"]))
    before = records(index_folder)
    write_folder(root, 1)  # every file changed: the next pass spills
    kill_mid_pass(root, env, 40, PASS, lambda: spill_files(index_folder) != [])
    assert records(index_folder) == before  # the previous generation, exactly
    status = codeask("status", "--json", "--root", str(root), cwd=root, env=env, check=True)
    assert json.loads(status.stdout)[0]["chunks"] == len(before)
    # the next pass removes the dead one's spill file and indexes everything
    again = run_pass(root, env, 40)
    assert again["chunks"] == len(before)
    assert spill_files(index_folder) == []
    names = {record[1] for record in records(index_folder).values()}
    assert any(b"task_5_2_v1" in r for r in names) and not any(b"_v0" in r for r in names)


def kill_mid_pass(
    root: Path, env: dict[str, str], bound: int, script: str, on_disk: Callable[[], bool]
) -> None:
    """Run `script` (argv: root, `bound`, "block") until it says it spilled, check `on_disk`
    while it waits there, then SIGKILL it."""
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(root), str(bound), "block"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()  # the pass's first line, or '' when it ended
        assert line and json.loads(line)["spilled"], child.stderr.read() if child.stderr else ""
        assert on_disk()
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()


def chunk(chunk_id: int) -> Chunk:
    return Chunk(
        path=f"pkg/m{chunk_id % 7}.py",
        language="python",
        kind="function",
        start_line=chunk_id,
        end_line=chunk_id + 1,
        text=f"def f{chunk_id}():\n    return {chunk_id}\n",
        symbol=f"f{chunk_id % 50}",
        id=chunk_id,
    )


def test_a_spilled_map_reads_like_one_in_memory_while_searches_read_it(tmp_path: Path) -> None:
    """Every read of the chunk map (by id, by symbol, counts, iteration, the delta) answers
    the same with the delta spilled, while other threads read as a pass writes (as searches
    do beside an indexing thread)."""
    spilled, kept = ChunkMap(), ChunkMap()
    spilled.spill_dir, spilled.spill_at = tmp_path, 64
    failures: list[BaseException] = []
    stop = threading.Event()

    def search() -> None:
        try:
            while not stop.is_set():
                for chunk_id in (1, 70, 500):
                    found = spilled.get(chunk_id)
                    assert found is None or found.id == chunk_id
                spilled.symbol_ids("f3")
                len(spilled)
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)

    readers = [threading.Thread(target=search) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for chunk_id in range(1, 2001):
            spilled[chunk_id] = kept[chunk_id] = chunk(chunk_id)
        for chunk_id in (5, 70, 1999):  # a file indexed again in the same pass
            assert spilled.pop(chunk_id) == kept.pop(chunk_id)
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert failures == []
    assert spilled.spill is not None and len(spilled.added) < 64  # the rest is on disk
    assert len(spilled) == len(kept) == 1997
    assert sorted(spilled) == sorted(kept)
    assert all(spilled.get(i) == kept.get(i) for i in range(1, 2002))
    assert spilled.symbol_ids("f20") == kept.symbol_ids("f20") != []
    assert sorted(c.id for c in spilled.values()) == sorted(c.id for c in kept.values())
    assert sorted(c.id for c in spilled.delta().added) == sorted(kept.added)
    spilled.write_base(tmp_path / "spilled.rec")
    kept.write_base(tmp_path / "kept.rec")
    ours, theirs = ChunkFile(tmp_path / "spilled.rec"), ChunkFile(tmp_path / "kept.rec")
    assert ours.ids.tolist() == theirs.ids.tolist()
    assert all(ours.raw(r) == theirs.raw(r) for r in range(len(ours)))
    assert ours.symbol_ids("f20").tolist() == theirs.symbol_ids("f20").tolist()
    spilled.close()
    assert spill_files(tmp_path) == []


def test_ids_written_again_replace_their_chunk_wherever_it_lies(tmp_path: Path) -> None:
    """A new id skips the lookups (every id stored is below it); an id written again, whether
    its chunk lies in the base, the spill or the delta, still replaces it: one live chunk per
    id, the base's marked removed, the delta and a new base as a map of the last writes."""
    first = ChunkMap()
    for chunk_id in range(1, 11):
        first[chunk_id] = chunk(chunk_id)
    first.write_base(tmp_path / "base.rec")
    mine = ChunkMap(ChunkFile(tmp_path / "base.rec"))
    mine.spill_dir, mine.spill_at = tmp_path, 8
    expected = {i: chunk(i) for i in range(1, 11)}
    writes = [*range(11, 31), 3, 12, 29, 31, 7, 30, 40, 12]  # base, spilled, in delta, new
    for at, chunk_id in enumerate(writes):
        written = chunk(chunk_id)
        written.text = f"write {at}"
        mine[chunk_id] = expected[chunk_id] = written
    assert mine.spill is not None
    assert sorted(mine) == sorted(expected) and len(mine) == len(expected)
    assert all(mine.get(i) == expected[i] for i in expected)
    assert mine.removed == {3, 7}
    mine.write_base(tmp_path / "next.rec")
    again = ChunkFile(tmp_path / "next.rec")
    assert again.ids.tolist() == sorted(expected)
    mine.close()
