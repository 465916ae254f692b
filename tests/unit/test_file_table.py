"""files.msgpack is read one record at a time (issue 42): opening an index decodes no file
record until one is asked for, and a save writes the others back unchanged."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import msgspec

from codeask.core.records import FileRecord
from codeask.core.storage.file_table import FileTable
from codeask.core.storage.store import IndexStore

FILES = 20_000
IDS = 30


def _record(n: int, skipped: bool = False) -> FileRecord:
    ids = [] if skipped else list(range(n * IDS + 1, (n + 1) * IDS + 1))
    return FileRecord(
        path=f"src/module_{n}.c",
        size=100 + n,
        mtime_ns=n,
        sha256=f"{n:064x}",
        language="c",
        chunk_ids=ids,
        skipped="too large" if skipped else "",
    )


def _saved(tmp_path: Path) -> Path:
    folder = tmp_path / "index"
    folder.mkdir()
    store = IndexStore(folder, tmp_path, "m", 8)
    for n in range(FILES):
        record = _record(n, skipped=n % 100 == 0)
        store.catalog.files[record.path] = record
    store.save()
    return folder


def test_opening_decodes_no_file_record_until_one_is_read(tmp_path: Path) -> None:
    """20k files of 30 chunk ids: decoded whole they took ~25 MB of Python objects (78k files
    and 1.3M ids on the Linux kernel: ~60 MB before the first answer)."""
    folder = _saved(tmp_path)
    tracemalloc.start()
    try:
        store, lost = IndexStore.open(folder, tmp_path, "m", 8)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lost == ""
    assert peak < 12 * 2**20, f"{peak / 2**20:.1f} MB traced while opening"
    assert len(store.files) == FILES and "src/module_7.c" in store.files
    assert store.files["src/module_7.c"] == _record(7)
    assert store.catalog.files.indexed_count() == FILES - FILES // 100


def test_a_save_after_one_edit_keeps_every_other_record_and_the_order(tmp_path: Path) -> None:
    folder = _saved(tmp_path)
    store, _ = IndexStore.open(folder, tmp_path, "m", 8)
    store.touch_file("src/module_3.c", 999, 12345)
    store.remove_file("src/module_5.c")
    store.catalog.replace_file(_record(FILES), [])  # a new file, at the end
    assert store.catalog.files.indexed_count() == FILES - FILES // 100
    store.save()
    again, lost = IndexStore.open(folder, tmp_path, "m", 8)
    assert lost == ""
    expected = [f"src/module_{n}.c" for n in range(FILES + 1) if n != 5]
    assert list(again.files) == expected
    touched = again.files["src/module_3.c"]
    assert (touched.size, touched.mtime_ns, touched.chunk_ids) == (999, 12345, _record(3).chunk_ids)
    assert all(again.files[f"src/module_{n}.c"] == _record(n, n % 100 == 0) for n in (0, 1, 99))
    assert again.files[f"src/module_{FILES}.c"].chunk_ids == []


def test_a_pass_over_unchanged_files_decodes_no_record(tmp_path: Path) -> None:
    """A pass compares every file's size and mtime with the index's (78k files on the kernel
    after a one-file edit): `changed` reads them from the raw record and keeps nothing decoded."""
    from codeask.core.source.discover import SourceFile

    folder = _saved(tmp_path)
    store, _ = IndexStore.open(folder, tmp_path, "m", 8)
    table = store.catalog.files
    seven = SourceFile(tmp_path, "src/module_7.c", 107, 7)
    nowhere = SourceFile(tmp_path, "src/nowhere.c", 1, 1)
    assert table.changed([seven, nowhere]) == [nowhere]
    found = [SourceFile(tmp_path, f"src/module_{n}.c", 100 + n, n) for n in range(FILES)]
    assert table.changed(found) == []
    assert not [v for v in table._items.values() if isinstance(v, FileRecord)]
    store.touch_file("src/module_7.c", 5, 6)  # a decoded record answers from itself
    assert table.changed([SourceFile(tmp_path, "src/module_7.c", 5, 6), seven]) == [seven]


def test_changed_is_the_files_whose_stat_is_not_their_records(tmp_path: Path) -> None:
    """A walked pass's check of every file in one call: size or mtime moved, from raw and
    decoded records alike, with new files included; nothing decoded and kept."""
    from codeask.core.source.discover import SourceFile

    folder = _saved(tmp_path)
    store, _ = IndexStore.open(folder, tmp_path, "m", 8)
    table = store.catalog.files
    store.touch_file("src/module_9.c", 5, 6)  # a decoded record
    found = [SourceFile(tmp_path, f"src/module_{n}.c", 100 + n, n) for n in range(FILES)]
    found[3] = SourceFile(tmp_path, "src/module_3.c", 103, 42)  # mtime moved
    found[4] = SourceFile(tmp_path, "src/module_4.c", 1, 4)  # size moved
    found.append(SourceFile(tmp_path, "src/new.c", 1, 1))
    assert [f.rel for f in table.changed(found)] == [
        "src/module_3.c",
        "src/module_4.c",
        "src/module_9.c",
        "src/new.c",
    ]
    assert [p for p, v in table._items.items() if isinstance(v, FileRecord)] == ["src/module_9.c"]


def test_a_pass_after_a_one_file_edit_decodes_only_that_record(tmp_path: Path) -> None:
    """The real pass: a reopened index, one file edited, the others only compared."""
    from codeask.config import build_settings
    from codeask.core.operations.index import FolderIndex
    from codeask.core.storage.local import LocalStorage

    root = tmp_path / "work"
    for n in range(30):
        (root / f"pkg{n % 3}").mkdir(parents=True, exist_ok=True)
        (root / f"pkg{n % 3}" / f"mod_{n}.py").write_text(f"def f_{n}():\n    return {n}\n")
    settings, _ = build_settings({"history": {"enabled": False}}, {})
    first = FolderIndex(root, settings)
    first.refresh(embed=False)
    first.close()
    (root / "pkg1" / "mod_4.py").write_text("def edited():\n    return 4\n")
    folder = FolderIndex(root, settings)
    report = folder.refresh(embed=False)
    assert (report.files_indexed, report.files_unchanged) == (1, 29)
    assert isinstance(folder.local, LocalStorage)
    items = folder.local._store.files._items
    assert [p for p, v in items.items() if isinstance(v, FileRecord)] == ["pkg1/mod_4.py"]
    folder.close()


def test_the_count_of_indexed_files_is_kept_through_edits(tmp_path: Path) -> None:
    """Counted once, then kept by each change (a one-file edit on the kernel recounted 78k
    records, ~0.1 s a pass): the same as a recount after edits, deletes and skips."""
    folder = _saved(tmp_path)
    store, _ = IndexStore.open(folder, tmp_path, "m", 8)
    table = store.catalog.files
    assert table.indexed_count() == FILES - FILES // 100
    store.catalog.replace_file(_record(7, skipped=True), [])  # indexed -> skipped
    store.catalog.replace_file(_record(100), [])  # skipped -> indexed
    store.catalog.replace_file(_record(FILES), [])  # a new file
    store.catalog.replace_file(_record(FILES + 1, skipped=True), [])
    store.remove_file("src/module_8.c")
    store.remove_file("src/module_200.c")  # a skipped one
    store.touch_file("src/module_9.c", 1, 2)
    assert table._indexed is not None, "kept, not dropped for a recount"
    kept = table.indexed_count()
    table._indexed = None  # a recount from the records
    assert kept == table.indexed_count() == FILES - FILES // 100  # -1 +1 +1 -1


def test_an_open_takes_the_count_of_indexed_files_from_the_manifest(tmp_path: Path) -> None:
    """The save writes the count (kept by edits, counted once): the next open counts no record,
    and its count is a recount's; a manifest from before the count counts at first ask."""
    folder = _saved(tmp_path)
    store, _ = IndexStore.open(folder, tmp_path, "m", 8)
    table = store.catalog.files
    assert table._indexed == FILES - FILES // 100, "from the manifest"
    store.catalog.replace_file(_record(3, skipped=True), [])
    store.save()
    again, _ = IndexStore.open(folder, tmp_path, "m", 8)
    kept = again.catalog.files._indexed
    again.catalog.files._indexed = None  # a recount from the records
    assert kept == again.catalog.files.indexed_count() == FILES - FILES // 100 - 1
    old = FileTable.decode(msgspec.msgpack.encode({r.path: r for r in map(_record, range(5))}))
    assert old._indexed is None and old.indexed_count() == 5
