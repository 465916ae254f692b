"""The pinned matrix is hashed once per file, not on every load (verified.py): a second load
of the very same file skips the ~11 ms hash, and any write to the file or a replaced file is
hashed again and refused (a different file is never loaded)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from codeask.core.embedding import static as static_module
from codeask.core.embedding.base import EmbedError
from codeask.core.embedding.static import STATIC_MODEL_DIR, StaticEmbedder
from codeask.core.embedding.verified import VerifiedFiles

MATRIX = "model.safetensors"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    folder = tmp_path / "potion"
    shutil.copytree(STATIC_MODEL_DIR, folder)
    return folder


class _Hashes:
    """Counts the hashes of the matrix (the only input over 1 MB; the tokenizer's 0.7 MB are
    parsed anyway and hashed as they are read); the real hash still runs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        real = static_module.hashlib.sha256

        def counting(data: object = b"") -> object:
            self.calls += len(data) > 1 << 20  # type: ignore[arg-type]
            return real(data)  # type: ignore[arg-type]

        monkeypatch.setattr(static_module.hashlib, "sha256", counting)


def test_the_same_file_is_hashed_once(
    copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = VerifiedFiles(tmp_path / "verified.json")
    hashes = _Hashes(monkeypatch)
    first = StaticEmbedder(copy, verified=record)
    after_first = hashes.calls
    second = StaticEmbedder(copy, verified=record)
    assert after_first == 1 and hashes.calls == after_first  # the matrix: not hashed again
    assert (first.embed(["load the config"]) == second.embed(["load the config"])).all()
    assert StaticEmbedder(copy) is not None and hashes.calls > after_first  # no record: hashed


def _flip_last_byte_keeping_mtime(path: Path) -> None:
    stat = path.stat()
    with path.open("r+b") as handle:  # in place: same inode, same size
        handle.seek(-1, os.SEEK_END)
        last = handle.read(1)
        handle.seek(-1, os.SEEK_END)
        handle.write(bytes([last[0] ^ 0xFF]))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # mtime put back; ctime cannot be


def test_a_file_written_in_place_after_its_check_is_refused(copy: Path, tmp_path: Path) -> None:
    record = VerifiedFiles(tmp_path / "verified.json")
    StaticEmbedder(copy, verified=record)
    _flip_last_byte_keeping_mtime(copy / MATRIX)
    with pytest.raises(EmbedError, match=r"sha256 \w+ is not the pinned"):
        StaticEmbedder(copy, verified=record)


def test_a_replaced_file_of_the_same_size_and_mtime_is_refused(copy: Path, tmp_path: Path) -> None:
    record = VerifiedFiles(tmp_path / "verified.json")
    StaticEmbedder(copy, verified=record)
    matrix = copy / MATRIX
    stat = matrix.stat()
    blob = bytearray(matrix.read_bytes())
    blob[-1] ^= 0xFF
    other = copy / "other"
    other.write_bytes(bytes(blob))
    os.utime(other, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(other, matrix)
    with pytest.raises(EmbedError, match=r"sha256 \w+ is not the pinned"):
        StaticEmbedder(copy, verified=record)


def test_a_garbled_record_means_hashing_again(
    copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "verified.json"
    path.write_text("{not json")
    hashes = _Hashes(monkeypatch)
    StaticEmbedder(copy, verified=VerifiedFiles(path))
    assert hashes.calls >= 1
    path.write_text('{"%s": [1, 2, 3]}' % (copy / MATRIX))
    before = hashes.calls
    StaticEmbedder(copy, verified=VerifiedFiles(path))
    assert hashes.calls > before
