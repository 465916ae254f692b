"""Issue 42, SAVES: the k-means rounds of the coarse lists sum each list's sample rows a rank at
a time (`coarse_lists._sums`) with the very float32 additions `np.add.at` made, so the trained
centroids, the lists and the base written in list order stay byte for byte the same."""

from __future__ import annotations

import numpy as np
import pytest

from codeask.core.storage import coarse_lists


@pytest.mark.parametrize(
    ("rows", "lists", "skewed"),
    [(6000, 120, False), (6000, 40, True), (300, 16, True), (0, 16, False)],
)
def test_list_sums_are_bitwise_those_of_add_at(rows: int, lists: int, skewed: bool) -> None:
    rng = np.random.default_rng(rows + lists)
    sample = rng.standard_normal((rows, 64)).astype(np.float32)
    if skewed:  # one list holds far more than `_RANKS` rows: those past it go by np.add.at
        owner = np.minimum(rng.geometric(0.02, rows) - 1, lists - 1)
    else:
        owner = rng.integers(0, lists, rows)
    expected = np.zeros((lists, 64), dtype=np.float32)
    np.add.at(expected, owner, sample)
    got = coarse_lists._sums(sample, owner, lists)
    assert got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))
    if skewed and rows > coarse_lists._RANKS:
        assert np.bincount(owner).max() > coarse_lists._RANKS


def test_trained_lists_are_those_of_the_add_at_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole training against the same rounds summed by np.add.at (int8 rows, scales)."""
    rng = np.random.default_rng(7)
    rows = rng.integers(-127, 128, (5000, 32), dtype=np.int8)
    scales = rng.uniform(0.001, 0.02, 5000).astype(np.float32)
    ours = coarse_lists.train(rows, scales)

    def add_at(sample: np.ndarray, owner: np.ndarray, lists: int) -> np.ndarray:
        sums = np.zeros((lists, sample.shape[1]), dtype=np.float32)
        np.add.at(sums, owner, sample)
        return sums

    monkeypatch.setattr(coarse_lists, "_sums", add_at)
    theirs = coarse_lists.train(rows, scales)
    assert ours.centroids.tobytes() == theirs.centroids.tobytes()
    assert ours.rows is not None and theirs.rows is not None
    assert np.array_equal(ours.rows, theirs.rows) and np.array_equal(ours.starts, theirs.starts)


def test_a_base_gets_half_a_list_per_square_root_of_its_rows() -> None:
    """Fewer lists (issue 42, SAVES): the training and the assignment of every row cost about
    half what they did; each list is larger, a query still scans PROBE_SHARE of the lists."""
    rng = np.random.default_rng(3)
    rows = rng.integers(-127, 128, (10_000, 16), dtype=np.int8)
    lists = coarse_lists.train(rows, None)
    assert len(lists.centroids) == 50  # sqrt(10,000) / 2; 100 before
    assert lists.starts[-1] == 10_000 and lists.rows is not None
    assert sorted(lists.rows.tolist()) == list(range(10_000))
