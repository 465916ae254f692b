"""A large base is written in coarse-list order (list_order.py): each list's rows adjacent, the
id table in the same order, and every answer exactly the one the scattered layout gave."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from test_vector_delta import DIM, _assert_rows_match_chunks, _put_file, _store

from codeask.core.storage import coarse_lists
from codeask.core.storage.base_ids import BaseIds
from codeask.core.storage.list_order import ID_ORDER, read_id_order
from codeask.core.storage.snapshot import current_name
from codeask.core.storage.store import IndexStore
from codeask.core.storage.vector_file import read_base, write_base
from codeask.core.storage.vectors import VectorIndex

ROWS = 6000


def _clustered(count: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, DIM))
    return centres[rng.integers(0, 40, count)] + 0.3 * rng.normal(size=(count, DIM))


def _scattered(index: VectorIndex, path: Path) -> VectorIndex:
    """`index` written as before this layout: rows in id order, lists as row numbers."""
    write_base(path, len(index.live), DIM, np.dtype(np.int8), index.live_blocks())
    _, written, _ = read_base(path, DIM)
    coarse_lists.add_to(path, written.rows, written.scales)  # type: ignore[union-attr]
    return VectorIndex.load(path, DIM, 0, index.live.array(), quantized=True)


def _same_answers(new: VectorIndex, old: VectorIndex, queries: np.ndarray) -> None:
    """The same ids in the same order, and the same scores up to float32 rounding (BLAS sums
    a row's products in an order that depends on the block the row is scored in)."""
    for query in queries:
        got, want = new.query(query, 20), old.query(query, 20)
        assert [i for i, _ in got] == [i for i, _ in want]
        assert np.allclose([s for _, s in got], [s for _, s in want], rtol=0, atol=1e-6)


@pytest.fixture
def lowered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("codeask.core.storage.vectors.MIN_ROWS", 2000)


@pytest.mark.usefixtures("lowered")
def test_a_large_base_is_written_in_list_order_and_answers_as_the_scattered_one(
    tmp_path: Path,
) -> None:
    rows = _clustered(ROWS)
    index = VectorIndex(DIM, quantized=True)
    index.add(list(range(ROWS)), rows)
    index.write_base(tmp_path / "listed.npz")
    assert not (tmp_path / "listed.npz.scattered").exists()  # the scratch file is gone
    ids, _, lists = read_base(tmp_path / "listed.npz", DIM)
    assert lists is not None and lists.rows is None  # each list is a slice of the base
    assert sorted(ids.tolist()) == list(range(ROWS)) and ids.tolist() != list(range(ROWS))
    old = _scattered(index, tmp_path / "scattered.npz")
    assert old._lists is not None and old._lists.rows is not None
    for at in range(len(lists.starts) - 1):  # the same lists, now adjacent on disk
        start, end = int(lists.starts[at]), int(lists.starts[at + 1])
        members = old._lists.rows[old._lists.starts[at] : old._lists.starts[at + 1]]
        assert ids[start:end].tolist() == members.tolist()  # ids follow the rows' order
    listed = VectorIndex.load(tmp_path / "listed.npz", DIM, 0, set(range(ROWS)), quantized=True)
    queries = _clustered(60, seed=9)
    _same_answers(listed, old, queries)
    for query in queries[:5]:
        _, picked = coarse_lists.scan(listed._lists, listed._base.rows, None, query)  # type: ignore[arg-type, union-attr]
        runs = int(np.count_nonzero(np.diff(picked) != 1)) + 1
        assert runs <= len(listed._lists.probed(query))  # type: ignore[union-attr]


@pytest.mark.usefixtures("lowered")
def test_edits_over_a_listed_base_answer_as_over_the_scattered_one(tmp_path: Path) -> None:
    """Deltas and holes address base rows by position: removing, replacing and adding over
    the listed base answers as the same edits over the scattered one, before and after the
    delta is saved and reloaded, and a fold writes the result in list order again."""
    rows = _clustered(ROWS)
    index = VectorIndex(DIM, quantized=True)
    index.add(list(range(ROWS)), rows)
    index.write_base(tmp_path / "listed.npz")
    listed = VectorIndex.load(tmp_path / "listed.npz", DIM, 0, set(range(ROWS)), quantized=True)
    old = _scattered(index, tmp_path / "scattered.npz")
    fresh = _clustered(300, seed=5)
    for tier in (listed, old):
        tier.remove(range(0, ROWS, 7))
        tier.add(list(range(1, 600, 2)), fresh)  # replaced: base rows become holes
        tier.add(list(range(ROWS, ROWS + 300)), -fresh)  # added to the tail (no exact ties)
    queries = np.concatenate([_clustered(40, seed=9), fresh[:10], -fresh[:10]])
    _same_answers(listed, old, queries)
    delta = tmp_path / "static_delta.npz"
    delta.write_bytes(_encoded(listed))
    held = listed.live.array()
    reread = VectorIndex.load(tmp_path / "listed.npz", DIM, 0, held, quantized=True, delta=delta)
    _same_answers(reread, old, queries)
    reread.write_base(tmp_path / "folded.npz")  # a fold: list order again
    folded = VectorIndex.load(tmp_path / "folded.npz", DIM, 0, held, quantized=True)
    assert folded._lists is not None and folded._lists.rows is None
    assert folded.live == listed.live
    assert folded.vector(ROWS + 3) is not None and folded.vector(0) is None


def _encoded(index: VectorIndex) -> bytes:
    from codeask.core.storage.vector_file import encode_delta

    return encode_delta(index.delta())


def test_a_store_saves_edits_and_reopens_a_listed_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real save path: a folded base is written in list order, a one-file edit is a
    delta against it, and the reopened store holds exactly its chunks' vectors."""
    monkeypatch.setattr("codeask.core.storage.vectors.MIN_ROWS", 500)
    folder = tmp_path / "idx"
    store = _store(folder)
    for n in range(16):
        _put_file(store, f"f{n}.py", 50)  # 800 rows
    store.save()
    base = folder / current_name(folder) / "static.npz"
    inode = base.stat().st_ino
    _, _, lists = read_base(base, DIM)
    assert lists is not None and lists.rows is None
    assert not list((folder / current_name(folder)).glob("*.scattered"))
    _put_file(store, "f3.py", 40)  # replaced: a delta over the listed base
    store.save()
    now = folder / current_name(folder)
    assert (now / "static.npz").stat().st_ino == inode  # the base kept, a delta written
    reopened, lost = IndexStore.open(folder, tmp_path, "m", 0, static=("potion", DIM))
    assert lost == ""
    _assert_rows_match_chunks(reopened)


def test_the_id_table_of_a_listed_base_finds_every_row() -> None:
    """Ids not ascending (list order): every id is found at its row, holes are not, with the
    stored id order, without it, and with a stored order that does not sort the ids."""
    ids = np.random.default_rng(1).permutation(5000).astype(np.int64) * 3
    keep = np.ones(len(ids), dtype=bool)
    keep[::11] = False
    wrong = np.arange(len(ids))
    for order in (None, np.argsort(ids).astype(np.int32), wrong):
        table = BaseIds(ids, keep, order)
        rows = table.rows(ids)
        assert np.array_equal(rows[keep], np.flatnonzero(keep))
        assert np.all(rows[~keep] == -1)
        assert table.row(int(ids[1])) == 1 and table.row(int(ids[0])) == -1
        table.punch(1)
        assert table.row(int(ids[1])) == -1 and table.count == int(keep.sum()) - 1


@pytest.mark.usefixtures("lowered")
def test_a_listed_base_stores_its_id_order_and_a_damaged_one_is_refused(tmp_path: Path) -> None:
    """The rows in id order are stored with the base (an open does not sort the ids again);
    one that is not an order of the base's rows is refused naming the file."""
    import zipfile

    index = VectorIndex(DIM, quantized=True)
    index.add(list(range(ROWS)), _clustered(ROWS))
    path = tmp_path / "static.npz"
    index.write_base(path)
    ids, _, _ = read_base(path, DIM)
    order = read_id_order(path, len(ids))
    assert order is not None and ids[order].tolist() == list(range(ROWS))
    loaded = VectorIndex.load(path, DIM, 0, set(range(ROWS)), quantized=True)
    assert loaded._base_ids is not None
    assert np.array_equal(loaded._base_ids._order, order)  # type: ignore[arg-type]
    damaged = tmp_path / "damaged.npz"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(damaged, "w") as target:
        for name in source.namelist():
            data = source.read(name)
            if name == ID_ORDER:
                bad = io.BytesIO()
                np.save(bad, order + ROWS)
                data = bad.getvalue()
            target.writestr(name, data)
    with pytest.raises(ValueError, match=r"damaged\.npz.*id_order"):
        VectorIndex.load(damaged, DIM, 0, set(range(ROWS)), quantized=True)
