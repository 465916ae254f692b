"""The vector tiers at scale (issue 42): int8 static rows, a base file plus a small delta per save,
folded into a new base past a share of it, coarse lists for a large base; and a damaged delta or
a writer killed mid-save never leaves an index that loads wrong."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from test_static_tier import open_index, recovered, static_matches_chunks

from codeask.core.records import Chunk, FileRecord
from codeask.core.storage import coarse_lists
from codeask.core.storage.snapshot import ComponentInfo, _digest, current_name
from codeask.core.storage.store import IndexStore
from codeask.core.storage.vector_file import Delta, encode_delta
from codeask.core.storage.vectors import FOLD_FRACTION, VectorIndex
from support import codeask

DIM = 16
#: Where the writer child finds this module and the tests' support package.
_TEST_DIRS = (str(Path(__file__).parent), str(Path(__file__).parents[1]))


def project(root: Path, files: int = 40) -> Path:
    """A git repository of `files` small Python modules, each with two functions."""
    for n in range(files):
        path = root / "pkg" / f"mod{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"def load_record_{n}(path):\n    '''Read record {n} from disk.'''\n"
            f"    return open(path).read()\n\n\n"
            f"def save_record_{n}(path, data):\n    '''Write record {n}.'''\n"
            f"    open(path, 'w').write(data)\n"
        )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "."], check=True)
    return root


def index_cli(root: Path) -> None:
    codeask("index", str(root), check=True)


def live(root: Path) -> Path:
    folder = root / ".codeask"
    return folder / current_name(folder)


def test_a_one_file_edit_writes_the_static_delta_and_keeps_the_base(tmp_path: Path) -> None:
    root = project(tmp_path / "repo")
    index_cli(root)
    base = live(root) / "static.npz"
    inode, size = base.stat().st_ino, base.stat().st_size
    edited = root / "pkg" / "mod3.py"
    edited.write_text(edited.read_text() + "\n\ndef merge_records(a, b):\n    return a + b\n")
    index_cli(root)
    after = live(root)
    assert after != base.parent
    assert (after / "static.npz").stat().st_ino == inode, "the base was rewritten"
    assert (after / "static_delta.npz").stat().st_size < size / 4
    folder = open_index(root)
    assert recovered(folder) == []
    assert static_matches_chunks(folder)
    fresh_root = project(tmp_path / "fresh")
    (fresh_root / "pkg" / "mod3.py").write_text(edited.read_text())
    fresh = open_index(fresh_root)
    fresh.refresh(embed=False)
    assert _static_answers(folder) == _static_answers(fresh)


def _static_answers(folder: object) -> list[list[tuple[str, int, float]]]:
    """The static tier's top 10 for a few chunks' own vectors, as (path, line, score)."""
    storage = folder.storage  # type: ignore[attr-defined]
    chunks = {c.id: c for c in storage.all_chunks()}
    probes = sorted(chunks.values(), key=lambda c: (c.path, c.start_line))[::7]
    answers = []
    for probe in probes:
        vector = storage.vector("static", probe.id)
        hits = storage.dense_top_k("static", vector, 10)
        answers.append([(chunks[i].path, chunks[i].start_line, round(s, 6)) for i, s in hits])
    return answers


def _chunks(ids: list[int], file: str) -> list[Chunk]:
    return [
        Chunk(
            id=i, path=file, language="python", kind="window", start_line=1, end_line=1, text=str(i)
        )
        for i in ids
    ]


def _rows(ids: list[int]) -> np.ndarray:
    """A chunk's vector is a function of its id, so a reader can check every row."""
    return np.stack([np.random.default_rng(i).normal(size=DIM) for i in ids]).astype(np.float32)


def _store(folder: Path) -> IndexStore:
    return IndexStore(folder, folder.parent, "m", 0, static=("potion", DIM))


def _put_file(store: IndexStore, file: str, count: int) -> None:
    ids = store.new_ids(count)
    store.replace_file(FileRecord(path=file, size=1, mtime_ns=1, sha256=file), _chunks(ids, file))
    store.add_static_vectors(ids, _rows(ids))


def test_the_delta_folds_into_a_new_base_once_it_passes_its_share(tmp_path: Path) -> None:
    store = _store(tmp_path / "idx")
    for n in range(16):
        _put_file(store, f"f{n}.py", 50)  # 800 rows
    store.save()
    base = (tmp_path / "idx" / current_name(tmp_path / "idx")) / "static.npz"
    inode = base.stat().st_ino
    _put_file(store, "f0.py", 50)  # 50 replaced: a delta of 50 rows and 50 holes < 1/8 of 800
    assert 800 * FOLD_FRACTION >= 100
    store.save()
    now = tmp_path / "idx" / current_name(tmp_path / "idx")
    assert (now / "static.npz").stat().st_ino == inode
    _put_file(store, "f1.py", 50)  # 200 changed rows: past an eighth, folded
    store.save()
    now = tmp_path / "idx" / current_name(tmp_path / "idx")
    assert (now / "static.npz").stat().st_ino != inode
    reopened, lost = IndexStore.open(tmp_path / "idx", tmp_path, "m", 0, static=("potion", DIM))
    assert lost == ""
    _assert_rows_match_chunks(reopened)
    assert reopened.static_vectors.delta().ids.size == 0  # folded: nothing pending


def _assert_rows_match_chunks(store: IndexStore) -> None:
    """Every chunk has its own vector (as the int8 layout holds it), no other id has one."""
    assert store.static_vectors.live == set(store.chunks)
    for chunk_id in store.chunks:
        want = _rows([chunk_id])[0]
        want /= np.linalg.norm(want)
        got = store.static_vectors.vector(chunk_id)
        assert got is not None and float(np.abs(got - want).max()) < 0.02


def _base_and_delta(folder: Path, replaced: int) -> IndexStore:
    """800 rows saved as a base, then f0.py's 50 chunks replaced by `replaced`: a delta."""
    store = _store(folder)
    for n in range(16):
        _put_file(store, f"f{n}.py", 50)
    store.save()
    _put_file(store, "f0.py", replaced)
    store.save()
    return store


def test_a_damaged_delta_rebuilds_only_the_static_tier_with_a_reason(tmp_path: Path) -> None:
    _base_and_delta(tmp_path / "idx", 20)
    delta = tmp_path / "idx" / current_name(tmp_path / "idx") / "static_delta.npz"
    blob = bytearray(delta.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    delta.unlink()
    delta.write_bytes(bytes(blob))
    reopened, lost = IndexStore.open(tmp_path / "idx", tmp_path, "m", 0, static=("potion", DIM))
    assert lost.startswith("static: index file static_delta.npz fails its checksum")
    assert len(reopened.chunks) == 16 * 50 - 50 + 20
    assert reopened.static_vectors.live == set()  # the tier is rebuilt, never half applied


def test_a_delta_written_for_another_base_is_refused(tmp_path: Path) -> None:
    """A delta naming rows of a base of another size (checksums made to match): refused with
    the reason, never applied to the wrong rows."""
    store = _base_and_delta(tmp_path / "idx", 5)
    folder = tmp_path / "idx"
    snap = folder / current_name(folder)
    path = snap / "static_delta.npz"
    delta = store.static_vectors.delta()
    forged = Delta(delta.ids, delta.rows, delta.scales, delta.removed, delta.base_rows + 1)
    path.unlink()
    path.write_bytes(encode_delta(forged))
    _rewrite_manifest(snap, "static_delta", path)
    reopened, lost = IndexStore.open(folder, tmp_path, "m", 0, static=("potion", DIM))
    assert "written for a base of 801 rows, not 800" in lost
    assert reopened.static_vectors.live == set()


def _rewrite_manifest(snap: Path, name: str, path: Path) -> None:
    import msgspec

    from codeask.core.storage.snapshot import Manifest

    manifest = msgspec.json.decode((snap / "manifest.json").read_bytes(), type=Manifest)
    manifest.components[name] = ComponentInfo(size=path.stat().st_size, blake2b=_digest(path))
    (snap / "manifest.json").unlink()
    (snap / "manifest.json").write_bytes(msgspec.json.encode(manifest))


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from test_vector_delta import _put_file, _store
    store = _store(Path(sys.argv[1]))
    for n in range(16):
        _put_file(store, f"f{n}.py", 50)
    store.save()
    step = 0
    while True:
        step += 1
        _put_file(store, f"f{step % 16}.py", 30 + step % 40)
        store.save()
        print(step, flush=True)
    """
)


def test_a_writer_killed_mid_save_leaves_an_index_that_loads_right(tmp_path: Path) -> None:
    """A real process saving base and delta generations in a loop, killed (SIGKILL) while it
    saves: the index on disk loads with every chunk's own vector, nothing lost."""
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(tmp_path / "idx")],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(_TEST_DIRS)},
    )
    assert child.stdout is not None
    for line in child.stdout:
        if int(line) >= 12:  # past a few folds (every ~4 saves) and deltas
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    reopened, lost = IndexStore.open(tmp_path / "idx", tmp_path, "m", 0, static=("potion", DIM))
    assert lost == ""
    assert len(reopened.chunks) > 0
    _assert_rows_match_chunks(reopened)


def test_a_large_base_answers_from_its_coarse_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `MIN_ROWS` (lowered here) a base is written with coarse lists and a query scans
    only their candidates; the answers hold most of the exact top 10, edits answer exactly."""
    monkeypatch.setattr("codeask.core.storage.vectors.MIN_ROWS", 2000)
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(40, DIM))
    rows = centres[rng.integers(0, 40, 6000)] + 0.3 * rng.normal(size=(6000, DIM))
    index = VectorIndex(DIM, quantized=True)
    index.add(list(range(6000)), rows)
    path = tmp_path / "static.npz"
    index.write_base(path)
    loaded = VectorIndex.load(path, DIM, 0, set(range(6000)), quantized=True)
    assert loaded._lists is not None
    found = 0
    for query in rows[:50]:
        exact = [i for i, _ in index.query(query, 10)]
        found += len(set(exact) & {i for i, _ in loaded.query(query, 10)})
    assert found >= 0.9 * 500
    loaded.add([99_999], rows[:1] * -1)  # the tail is scanned whole
    assert loaded.query(-rows[0], 1)[0][0] == 99_999
    small = VectorIndex(DIM, quantized=True)
    small.add(list(range(1000)), rows[:1000])
    small.write_base(tmp_path / "small.npz")
    assert VectorIndex.load(tmp_path / "small.npz", DIM, 0, set(range(1000)))._lists is None
    assert coarse_lists.MIN_ROWS == 400_000  # the module's own threshold is untouched


def test_a_tier_edited_while_its_fold_was_saved_keeps_its_rows(tmp_path: Path) -> None:
    """A fold maps the base it wrote once published; a vector added in between (the store's
    lock is let go while the snapshot is published) must not be lost to that mapping."""
    store = _store(tmp_path / "idx")
    _put_file(store, "a.py", 30)
    parts = store.tiers.plan_save()
    assert {"static", "static_delta"} <= parts
    for name in ("static", "vectors"):
        store.tiers.write(name, tmp_path / f"{name}.npz")
    late = store.new_ids(1)
    store.tiers.attach("static", late, _rows(late), set(late))
    store.tiers.rebase(tmp_path)  # finds the bases here
    assert store.tiers.vectors.mapped  # not edited meanwhile: mapped
    assert late[0] in store.static_vectors.live
    assert not store.static_vectors.mapped  # kept in memory: the next save folds it again
    assert "static" in store.tiers.plan_save()


def test_an_index_saved_before_deltas_loads_and_takes_a_delta(tmp_path: Path) -> None:
    """A snapshot from before this layout (float32 static rows, no delta in its manifest) loads
    as it is, takes an edit as a delta over its float32 base, and folds into int8 later."""
    import msgspec

    from codeask.core.storage.snapshot import Manifest

    folder = tmp_path / "idx"
    store = _store(folder)
    for n in range(16):
        _put_file(store, f"f{n}.py", 50)
    store.save()
    snap = folder / current_name(folder)
    old = VectorIndex(DIM)  # the former layout: float32 rows
    old.add(sorted(store.chunks), _rows(sorted(store.chunks)))
    (snap / "static.npz").unlink()
    (snap / "static.npz").write_bytes(old.encode())
    _rewrite_manifest(snap, "static", snap / "static.npz")
    manifest = msgspec.json.decode((snap / "manifest.json").read_bytes(), type=Manifest)
    for name in ("static_delta", "vectors_delta"):
        del manifest.components[name]
        (snap / f"{name}.npz").unlink()
    (snap / "manifest.json").unlink()
    (snap / "manifest.json").write_bytes(msgspec.json.encode(manifest))
    reopened, lost = IndexStore.open(folder, tmp_path, "m", 0, static=("potion", DIM))
    assert lost == ""
    _assert_rows_match_chunks(reopened)
    inode = (snap / "static.npz").stat().st_ino
    _put_file(reopened, "f0.py", 10)
    reopened.save()
    now = folder / current_name(folder)
    assert (now / "static.npz").stat().st_ino == inode  # the float32 base kept, a delta over it
    again, lost = IndexStore.open(folder, tmp_path, "m", 0, static=("potion", DIM))
    assert lost == ""
    _assert_rows_match_chunks(again)
    for n in range(1, 4):
        _put_file(again, f"f{n}.py", 50)  # past an eighth: folded into an int8 base
    again.save()
    base = folder / current_name(folder) / "static.npz"
    assert np.load(base)["rows"].dtype == np.int8
    final, lost = IndexStore.open(folder, tmp_path, "m", 0, static=("potion", DIM))
    assert lost == ""
    _assert_rows_match_chunks(final)
