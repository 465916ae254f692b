"""A large base written with its rows grouped by coarse list, each list's rows adjacent.

Why (issue 42): a query probes ~6 % of a large base's rows (coarse_lists.py), but in the order
a save wrote them those rows were spread over the whole file, so one query touched nearly every
page of the mapped base (1.28M x 256 int8 rows on the kernel: +322 MB of RSS, and a cold open's
page faults). Written in list order, a probe reads a few contiguous slices of the map.

The lists are trained over the rows as first written (a scratch file beside the base, mapped,
never copied into memory), then the rows, their scales and their ids are written again in list
order; the row -> id table (base_ids.py) copes with ids that are not ascending, and the rows in
ascending id order are stored beside them (`ID_ORDER`), so an open does not sort 1.3M ids again
(~0.5 s at load 17). Deltas and masks address base rows by the positions of the base they
were written against, so they follow.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from codeask.core.storage import coarse_lists
from codeask.core.storage.mapped_rows import MappedRows
from codeask.core.storage.quantized_rows import BLOCK_ROWS
from codeask.core.storage.vector_file import Stored, read_base, write_base, write_member

#: The member holding the base's rows in ascending id order (absent: sorted at open).
ID_ORDER = "id_order.npy"


def write_in_list_order(
    path: Path, count: int, dim: int, dtype: np.dtype, blocks: Iterable[Stored]
) -> None:
    """Stream `count` rows to `path` grouped by their coarse list, then append the lists
    (each list a slice of the base). The scratch file is gone once this returns or raises;
    a crash leaves it inside the unpublished generation folder, which the next save removes."""
    scratch = path.with_name(path.name + ".scattered")
    try:
        write_base(scratch, count, dim, dtype, blocks)
        ids, written, _ = read_base(scratch, dim)
        if not isinstance(written, MappedRows):  # written uncompressed just now
            raise ValueError(f"{scratch.name}: the rows just written cannot be mapped")
        lists = coarse_lists.train(written.rows, written.scales)
        assert lists.rows is not None  # trained lists hold row numbers
        write_base(path, count, dim, dtype, _listed(ids, written, lists.rows))
        del written  # the scratch mapping goes before its file
        _append_id_order(path, ids[lists.rows])
        coarse_lists.append(path, coarse_lists.CoarseLists(lists.centroids, None, lists.starts))
    finally:
        scratch.unlink(missing_ok=True)


def _append_id_order(path: Path, listed: np.ndarray) -> None:
    """Store the rows in ascending id order (`listed`: the ids as written); the lists'
    append, next, fsyncs the file."""
    order = np.argsort(listed, kind="stable").astype(np.int32 if len(listed) < 2**31 else np.int64)
    with zipfile.ZipFile(path, "a", zipfile.ZIP_STORED, allowZip64=True) as archive:
        write_member(archive, ID_ORDER, order)


def _listed(ids: np.ndarray, written: MappedRows, order: np.ndarray) -> Iterator[Stored]:
    """The written rows in list order, `BLOCK_ROWS` at a time (a list's rows stay in their
    written order: the training's sort is stable)."""
    for start in range(0, len(order), BLOCK_ROWS):
        part = order[start : start + BLOCK_ROWS]
        scales = None if written.scales is None else written.scales[part]
        yield Stored(ids[part], written.rows[part], scales)


def read_id_order(path: Path, count: int) -> np.ndarray | None:
    """A base's rows in ascending id order, when it stored them (None: it did not).
    ValueError (naming the file) when the member is not a row order of its `count` rows."""
    try:
        with zipfile.ZipFile(path) as archive:
            if ID_ORDER not in archive.namelist():
                return None
            with archive.open(ID_ORDER) as member:
                order = np.asarray(np.lib.format.read_array(member, allow_pickle=False))
    except (zipfile.BadZipFile, KeyError, EOFError, OSError) as exc:
        raise ValueError(f"{path.name}: its {ID_ORDER} cannot be read ({exc})") from exc
    ok = order.dtype.kind in "iu" and order.shape == (count,)
    if not ok or (count and not 0 <= int(order.min()) <= int(order.max()) < count):
        raise ValueError(f"{path.name}: its {ID_ORDER} is not an order of its {count} rows")
    return order
