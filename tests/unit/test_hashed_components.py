"""A second open of the same snapshot in one process does not hash its components again (issue
42: the daemon's read copy hashed the kernel's snapshot, ~2 CPU-s for the static tier, and the
writer `codeask index` opened beside it hashed the same bytes again); a component written since
(its mtime moved) is hashed again and its damage found."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from test_writer_checks import _flip_a_static_row, _indexed_repo

from codeask.core.indexer.folder import FolderIndex
from codeask.core.storage import snapshot
from codeask.core.storage.hashed import SETTLED_NS, HashedFiles


def _settle(folder: Path) -> None:
    """The index's files as an index written a while ago (the reuse needs settled mtimes)."""
    past = time.time_ns() - 10 * SETTLED_NS
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(past, past))


def test_the_writer_reuses_the_read_copys_hashes_and_still_finds_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _indexed_repo(tmp_path, monkeypatch)
    monkeypatch.setattr(snapshot, "CHECK_AT_OPEN_BYTES", 0)  # the tiny tiers count as big
    hashed = HashedFiles()
    monkeypatch.setattr(snapshot, "HASHED", hashed)
    _settle(tmp_path / "index")
    reader = FolderIndex.open(root, mode="read")
    store = reader.local._store  # type: ignore[attr-defined]
    if store.checks.verifier is not None:  # a reader hashes its big tiers from the open
        store.checks.verifier.join()
    reader.close()
    assert hashed.reused == 0
    first = hashed.reused

    writer = FolderIndex.open(root, mode="write")  # the same snapshot: every hash known
    try:
        opened = hashed.reused
        assert opened > first, "the small components' hashes at the open were reused"
        _flip_a_static_row(writer)  # written now: a new inode and mtime
        (root / "m1.py").write_text("def ledger_step_1(rows):\n    return rows[::-1]\n")
        writer.refresh(embed=False)
        wstore = writer.local._store  # type: ignore[attr-defined]
        if wstore.checks.verifier is not None:
            wstore.checks.verifier.join()
        assert any("static.npz fails its checksum" in note for note in wstore.recovered)
    finally:
        writer.close()


def test_a_file_is_trusted_again_only_as_it_was_hashed(tmp_path: Path) -> None:
    hashed = HashedFiles()
    path = tmp_path / "part.bin"
    path.write_bytes(b"a" * 4096)
    fresh = hashed.digest(path)
    assert hashed.intact(path, fresh) and hashed.reused == 0, "just written: not remembered"
    past = time.time_ns() - 10 * SETTLED_NS
    os.utime(path, ns=(past, past))
    assert hashed.intact(path, fresh) and hashed.reused == 0  # hashed, remembered now
    assert hashed.intact(path, fresh) and hashed.reused == 1
    assert not hashed.intact(path, "0" * 32) and hashed.reused == 1  # never another digest
    with path.open("r+b") as handle:  # the same size, written in place: the mtime moves
        handle.write(b"b")
    assert not hashed.intact(path, fresh)
    os.utime(path, ns=(past, past))
    damaged = hashed.digest(path)
    assert damaged != fresh and not hashed.intact(path, fresh)


def test_a_check_waits_for_the_hash_another_thread_is_making_of_the_same_file(
    tmp_path: Path,
) -> None:
    """The daemon's read copy hashes the static tier in the background from its open; the writer
    `codeask index` opens right after checks the same file: it waits for that hash, not a second."""
    import threading
    from typing import Any, BinaryIO

    path = tmp_path / "static.npz"
    path.write_bytes(os.urandom(3 << 20))
    past = time.time_ns() - 10 * SETTLED_NS
    os.utime(path, ns=(past, past))
    expected = HashedFiles().digest(path)
    gate = threading.Event()

    class Gated(HashedFiles):
        reads = 0

        def _read(self, handle: BinaryIO, digest: Any) -> None:
            type(self).reads += 1
            gate.wait(timeout=60)  # the first hash holds here until the second check waits
            super()._read(handle, digest)

    hashed = Gated()
    answers: list[bool] = []
    first = threading.Thread(target=lambda: answers.append(hashed.intact(path, expected)))
    first.start()
    while Gated.reads == 0 and first.is_alive():
        time.sleep(0.01)
    second = threading.Thread(target=lambda: answers.append(hashed.intact(path, expected)))
    second.start()
    while hashed.waits == 0 and second.is_alive():
        time.sleep(0.01)
    gate.set()
    first.join(timeout=60)
    second.join(timeout=60)
    assert answers == [True, True] and hashed.waits == 1 and hashed.reused == 1
    assert Gated.reads == 1, "one read of the file: the second check took the first one's hash"
