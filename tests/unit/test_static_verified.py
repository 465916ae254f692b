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


TOKENIZER = "tokenizer.json"
QUERIES = ["how are blueprints registered", "Ünïcödé [MASK] snake_case_name"]


class _TokenizerReads:
    """Counts hashes of the tokenizer file's bytes (done only when it is read and parsed)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, size: int) -> None:
        self.calls = 0
        real = static_module.hashlib.sha256

        def counting(data: object = b"") -> object:
            self.calls += len(data) == size  # type: ignore[arg-type]
            return real(data)  # type: ignore[arg-type]

        monkeypatch.setattr(static_module.hashlib, "sha256", counting)


def test_the_tokenizer_is_parsed_once_per_file(
    copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "vocab.msgpack"
    reads = _TokenizerReads(monkeypatch, (copy / TOKENIZER).stat().st_size)
    first = StaticEmbedder(copy, vocab_cache=cache)
    assert reads.calls == 1 and cache.is_file()
    second = StaticEmbedder(copy, vocab_cache=cache)
    assert reads.calls == 1  # read from the cache: the JSON was not read, hashed or parsed
    assert first._reach is not None and second._reach is not None
    assert second._reach.vocab == first._reach.vocab
    assert (
        second.token_ids(QUERIES)
        == first.token_ids(QUERIES)
        == StaticEmbedder(copy, pinned={}).token_ids(QUERIES)
    )


def test_a_tokenizer_written_in_place_after_caching_is_refused(copy: Path, tmp_path: Path) -> None:
    cache = tmp_path / "vocab.msgpack"
    StaticEmbedder(copy, vocab_cache=cache)
    _flip_last_byte_keeping_mtime(copy / TOKENIZER)
    with pytest.raises(EmbedError, match=r"sha256 \w+ is not the pinned"):
        StaticEmbedder(copy, vocab_cache=cache)


def test_a_damaged_vocabulary_cache_is_never_used(
    copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "vocab.msgpack"
    want = StaticEmbedder(copy, vocab_cache=cache).token_ids(QUERIES)
    blob = bytearray(cache.read_bytes())
    blob[len(blob) // 2] ^= 0x01  # a byte of a token in the middle of the vocabulary
    cache.write_bytes(bytes(blob))
    reads = _TokenizerReads(monkeypatch, (copy / TOKENIZER).stat().st_size)
    again = StaticEmbedder(copy, vocab_cache=cache)
    assert reads.calls == 1  # its checksum failed: the JSON was parsed again
    assert again.token_ids(QUERIES) == want
