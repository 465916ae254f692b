"""Issue 42: a long-lived process keeps the chunks a question decoded for the next question
(core/storage/recent_chunks.py): what it hands out again is what it read, only the ids it does
not hold are decoded, it holds at most its size (the least recently read go first), and a
one-shot process decodes every time and keeps nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.unit.test_chunk_reads_batched import base_file, chunk, damage_record

from codeask.core.records import Chunk
from codeask.core.runtime import resident
from codeask.core.storage import record_codec
from codeask.core.storage.chunk_file import ChunkDamaged, ChunkFile
from codeask.core.storage.recent_chunks import RecentChunks


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ids of the chunks decoded from their records from now on."""
    seen: list[int] = []
    real = record_codec.reader

    def counting() -> Callable[[bytes], Chunk]:
        read = real()

        def counted(record: bytes) -> Chunk:
            found = read(record)
            seen.append(found.id)
            return found

        return counted

    monkeypatch.setattr(record_codec, "reader", counting)
    return seen


def test_the_least_recently_read_go_first() -> None:
    recent = RecentChunks(size=3)
    recent.keep([(n, chunk(n)) for n in (1, 2, 3)])
    held, missing = recent.take([1, 9])  # 1 is now the most recent
    recent.keep([(4, chunk(4))])  # 2, the least recent, goes

    assert [i for i, _ in held] == [1] and missing == [9]
    assert len(recent) == 3
    assert recent.take([1, 2, 3, 4]) == ([(1, chunk(1)), (3, chunk(3)), (4, chunk(4))], [2])


def test_a_second_read_hands_out_what_the_first_decoded(tmp_path: Path, decodes: list[int]) -> None:
    base = base_file(tmp_path / "chunks.rec", list(range(1, 31)))
    first = dict(base.read_ids([3, 5, 7]))
    decodes.clear()

    again = dict(base.read_ids([7, 5, 12, 3, 99]))

    assert decodes == [12]  # only the id not read before (99 is not in the file)
    assert set(again) == {3, 5, 7, 12}
    assert all(again[i] is first[i] for i in (3, 5, 7))
    assert again[12] == chunk(12)


def test_it_holds_at_most_its_size(tmp_path: Path, decodes: list[int]) -> None:
    base = base_file(tmp_path / "chunks.rec", list(range(1, 31)))
    base.recent = RecentChunks(size=4)
    base.read_ids(list(range(1, 11)))
    decodes.clear()

    base.read_ids(list(range(1, 11)))

    assert len(base.recent) == 4
    assert decodes == [1, 2, 3, 4, 5, 6]  # the four read last were held


def test_a_damaged_record_is_not_held(tmp_path: Path) -> None:
    path = tmp_path / "chunks.rec"
    damage_record(path, base_file(path, list(range(1, 11))), 4)  # chunk 5
    base = ChunkFile(path)

    for _ in range(2):
        read = dict(base.read_ids([4, 5, 6]))
        assert isinstance(read[5], ChunkDamaged)
        assert read[4] == chunk(4) and read[6] == chunk(6)
    assert base.recent.take([5]) == ([], [5])


def test_a_one_shot_process_keeps_nothing(
    tmp_path: Path, decodes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resident, "_one_shot", True)
    base = base_file(tmp_path / "chunks.rec", list(range(1, 11)))

    base.read_ids([2, 3])
    base.read_ids([2, 3])

    assert decodes == [2, 3, 2, 3]
    assert len(base.recent) == 0
