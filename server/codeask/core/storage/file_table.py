"""The catalog's files (path -> FileRecord), read from files.msgpack one record at a time.

Why (issue 42): every open decoded all of files.msgpack into FileRecord structs and their
chunk-id lists (78k files and 1.3M ids on the Linux kernel: ~60 MB of Python objects and a few
hundred ms) though a search or a one-file edit reads a handful of records. Here the open splits
the file into its keys and each record's raw bytes (no copy: views of the file's bytes); a
record is decoded when first read and kept. A save encodes raw records as they are, so the
file's format and order do not change. The count of indexed files, asked by every search, is
computed once (without keeping the records) and then kept up to date by each change.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Protocol, TypeVar

import msgspec

from codeask.core.records import FileRecord

_RECORD = msgspec.msgpack.Decoder(FileRecord)
_TABLES = itertools.count()


class _Stat(msgspec.Struct, array_like=True):
    """A record's leading fields: a pass compares every file's stat, few records after it (the
    path left raw: a str per record was a third of the kernel's 78k decodes)."""

    path: msgspec.Raw
    size: int
    mtime_ns: int


_STAT = msgspec.msgpack.Decoder(_Stat)


class _Skipped(msgspec.Struct, array_like=True):
    """A record read for its `skipped` field alone: the fields before it stay raw bytes (its
    chunk-id list is not built: counting the kernel's 78k records 0.07 -> 0.03 s)."""

    path: msgspec.Raw = msgspec.Raw(b"")
    size: msgspec.Raw = msgspec.Raw(b"")
    mtime_ns: msgspec.Raw = msgspec.Raw(b"")
    sha256: msgspec.Raw = msgspec.Raw(b"")
    language: msgspec.Raw = msgspec.Raw(b"")
    chunk_ids: msgspec.Raw = msgspec.Raw(b"")
    skipped: str = ""


_SKIPPED = msgspec.msgpack.Decoder(_Skipped)


class Stated(Protocol):
    """A file as a walk found it: its path in the folder and its stat."""

    @property
    def rel(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def mtime_ns(self) -> int: ...


StatedT = TypeVar("StatedT", bound=Stated)


def _indexed(value: FileRecord | msgspec.Raw | None) -> int:
    """1 when the record is of an indexed (not skipped) file."""
    if value is None:
        return 0
    record = _SKIPPED.decode(value) if isinstance(value, msgspec.Raw) else value
    return 0 if record.skipped else 1


_RAW_TABLE = msgspec.msgpack.Decoder(dict[str, msgspec.Raw])


class FileTable(MutableMapping[str, FileRecord]):
    """A dict of FileRecords whose values may still be raw msgpack (decoded on first read);
    in the same order as a dict: an assignment to a known path keeps its place."""

    def __init__(self, records: dict[str, FileRecord] | None = None) -> None:
        self._items: dict[str, FileRecord | msgspec.Raw] = dict(records or {})
        #: None: counted when first asked. An empty table's is kept from the start, so a first
        #: pass's saves know it (the manifest's `indexed_files`).
        self._indexed: int | None = None if self._items else 0
        self._version = 0  # changes counted, so a count taken meanwhile is not kept
        self._paths = ("", next(_TABLES))  # this set of paths: a new key at each change

    @classmethod
    def decode(cls, data: bytes, identity: str = "", indexed: int = -1) -> FileTable:
        """The table of an encoded files.msgpack (msgspec errors when it is not one); each
        record is checked when it is first read, and a bad one raises then. `identity` (the
        checked digest of `data`) keys its paths: two tables decoded from the same bytes have
        the same paths, so one's path tables serve the other (symbol_table.py's hand-over).
        `indexed`: the count of indexed files its snapshot's manifest gives (-1: counted when
        first asked)."""
        table = cls()
        table._items = dict(_RAW_TABLE.decode(data))
        if identity:
            table._paths = (identity, 0)
        table._indexed = indexed if 0 <= indexed <= len(table._items) else None
        return table

    def __getitem__(self, path: str) -> FileRecord:
        value = self._items[path]
        if isinstance(value, msgspec.Raw):
            value = _RECORD.decode(value)
            value.path = path
            self._items[path] = value
        return value

    def __setitem__(self, path: str, record: FileRecord) -> None:
        old = self._items.get(path)
        if old is None:
            self._paths = ("", next(_TABLES))
        self._items[path] = record
        self._version += 1
        known = self._indexed  # kept up to date: a recount decodes every record (78k: ~0.1 s)
        if known is not None:
            self._indexed = None if old is record else known + _indexed(record) - _indexed(old)

    def __delitem__(self, path: str) -> None:
        old = self._items.pop(path)
        self._paths = ("", next(_TABLES))
        self._version += 1
        if self._indexed is not None:
            self._indexed -= _indexed(old)

    def paths_key(self) -> tuple[str, int]:
        """Changes when (and only when) a path is added or removed: tables built over the
        paths (symbol_table.py) are kept across a one-file edit. ("", n) is this process's own
        set; (digest, 0) the set of the files.msgpack of that digest, as loaded."""
        return self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, path: object) -> bool:
        return path in self._items

    def changed(self, files: Iterable[StatedT]) -> list[StatedT]:
        """The files whose size or mtime is not their record's (or that have none): one loop
        here, no call per file (a pass after a one-file edit asks it of the kernel's 78k)."""
        lookup, decode, raw = self._items.get, _STAT.decode, msgspec.Raw
        out = []
        for found in files:
            value = lookup(found.rel)
            if value is None:
                out.append(found)
                continue
            known = decode(value) if isinstance(value, raw) else value
            if known.size != found.size or known.mtime_ns != found.mtime_ns:
                out.append(found)
        return out

    def touched(self) -> None:
        """A record read from here was changed in place: its stat or hash (`touch_file`, `heal`),
        never whether it is skipped, so the count of indexed files stands."""
        self._version += 1

    def indexed_count(self) -> int:
        """Files with chunks (not skipped); raw records are decoded for the count, not kept."""
        known = self._indexed
        if known is not None:
            return known
        version, count = self._version, 0
        for value in list(self._items.values()):  # a writer's thread may change the table
            count += _indexed(value)
        if version == self._version:
            self._indexed = count
        return count

    def encode(self) -> bytes:
        """files.msgpack: raw records as read, the others encoded (the same format)."""
        return msgspec.msgpack.encode(self._items)
