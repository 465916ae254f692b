"""The chunk base file: one msgpack record per chunk, memory-mapped and decoded one at a time.

Opening costs a footer and the index arrays (ids, offsets, lengths, crc32s, the symbol table),
never the records: on the Linux kernel decoding every chunk at open took seconds and gigabytes
(issue 42). Layout, little-endian:

    MAGIC · records (each `record_codec.encode(chunk)`, any order) · zero bytes up to an
    8-byte boundary (files written before had none) · ids int64[n] (sorted)
    · offsets int64[n] · lengths uint32[n] · crcs uint32[n] · symbol hashes uint64[m] (sorted)
    · symbol ids int64[m] · footer (n, m, where the arrays start, crc32 of the arrays, MAGIC)

Each record carries its own crc32, checked when it is decoded, so damage in the middle of a big
file is found on first touch (`ChunkDamaged`) instead of by hashing gigabytes before the first
answer; the arrays are checked whole at open. The symbol table maps a 64-bit hash of a symbol
name to the ids of the code chunks that define it (history chunks are not symbols).

MAGIC is CQCHUNK2 since records may be zstd frames (record_codec.py); a CQCHUNK1 file (plain
msgpack records) reads as it is, and a codeask from before refuses a CQCHUNK2 file whole (its
open fails, the index is rebuilt) instead of reading every compressed record as damaged.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
import weakref
import zlib
from array import array
from pathlib import Path
from typing import BinaryIO

import msgspec
import numpy as np
import zstandard

from codeask.core.records import HISTORY_KINDS, Chunk
from codeask.core.runtime import resident
from codeask.core.storage import record_codec
from codeask.core.storage.recent_chunks import RecentChunks
from codeask.core.storage.record_copy import Records
from codeask.core.storage.snapshot import StoreError

MAGIC = b"CQCHUNK2"
#: Files written before records could be compressed: read as they are.
MAGIC_PLAIN = b"CQCHUNK1"
_MAGICS = (MAGIC, MAGIC_PLAIN)
_FOOTER = struct.Struct("<qqqI8s")  # records, symbols, arrays start, arrays crc32, magic


class ChunkDamaged(StoreError):
    """A record or the index of a chunk file does not match its checksum."""


#: What decoding a damaged record that still matches its checksum raises.
UNREADABLE = (msgspec.DecodeError, msgspec.ValidationError, zstandard.ZstdError)


def symbol_hash(name: str) -> int:
    """The 64-bit key of a symbol name (blake2b: a collision among a million names is ~1e-7)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def symbol_of(chunk: Chunk) -> str:
    """The name a chunk defines for exact-name lookups ('' for windows and history)."""
    return chunk.symbol if chunk.symbol and chunk.kind not in HISTORY_KINDS else ""


class RecordTable:
    """Where appended records are (id, offset, length, crc32) and which define a symbol: typed
    arrays, not lists, 8 bytes an entry instead of ~36 (1.27M chunks on the kernel)."""

    def __init__(self) -> None:
        self.ids = array("q")
        self.offsets = array("q")
        self.lengths = array("I")
        self.crcs = array("I")
        self.sym_hash = array("Q")
        self.sym_ids = array("q")

    def append(self, chunk_id: int, at: int, length: int, crc: int, sym: int | None) -> None:
        """One record of `length` bytes at offset `at`; `sym` its symbol hash, if any."""
        self.ids.append(chunk_id)
        self.offsets.append(at)
        self.lengths.append(length)
        self.crcs.append(crc)
        if sym is not None:
            self.sym_hash.append(sym)
            self.sym_ids.append(chunk_id)


class ChunkFileWriter:
    """Writes a chunk file record by record: only the small index arrays are kept in memory."""

    def __init__(self, handle: BinaryIO) -> None:
        self._out = handle
        self._at = len(MAGIC)
        handle.write(MAGIC)
        self._table = RecordTable()

    def add(self, chunk: Chunk) -> None:
        """Encode and append one chunk."""
        name = symbol_of(chunk)
        self.add_raw(chunk.id, record_codec.encode(chunk), symbol_hash(name) if name else None)

    def add_raw(self, chunk_id: int, record: bytes, sym: int | None, crc: int = -1) -> None:
        """Append an encoded record (copied from another chunk file: no decode)."""
        self._out.write(record)
        crc = zlib.crc32(record) if crc < 0 else crc
        self._table.append(chunk_id, self._at, len(record), crc, sym)
        self._at += len(record)

    def add_run(self, ids: np.ndarray, lengths: np.ndarray, crcs: np.ndarray, data: bytes) -> None:
        """Append records lying end to end in `data` (checked by the caller, record_copy.py) as
        one write: the same bytes and table entries as `add_raw` of each, without symbols."""
        starts = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        table = self._table
        table.ids.frombytes(np.ascontiguousarray(ids, dtype=np.int64).tobytes())
        table.offsets.frombytes((starts + self._at).tobytes())
        table.lengths.frombytes(np.ascontiguousarray(lengths, dtype=np.uint32).tobytes())
        table.crcs.frombytes(np.ascontiguousarray(crcs, dtype=np.uint32).tobytes())
        self._out.write(data)
        self._at += len(data)

    def add_symbols(self, hashes: np.ndarray, ids: np.ndarray) -> None:
        """Symbol entries of records added with `add_raw(..., sym=None)` (copied in bulk)."""
        self._table.sym_hash.extend(hashes.tolist())
        self._table.sym_ids.extend(ids.tolist())

    def finish(self) -> None:
        """Write the index arrays and the footer."""
        ids = np.asarray(self._table.ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        sym_hash = np.asarray(self._table.sym_hash, dtype=np.uint64).astype("<u8")
        sym_ids = np.asarray(self._table.sym_ids, dtype=np.int64).astype("<i8")
        sym_order = np.lexsort((sym_ids, sym_hash))
        arrays = b"".join(
            (
                ids[order].astype("<i8").tobytes(),
                np.asarray(self._table.offsets, dtype=np.int64)[order].astype("<i8").tobytes(),
                np.asarray(self._table.lengths, dtype=np.uint64)[order].astype("<u4").tobytes(),
                np.asarray(self._table.crcs, dtype=np.uint64)[order].astype("<u4").tobytes(),
                sym_hash[sym_order].tobytes(),
                sym_ids[sym_order].tobytes(),
            )
        )
        pad = -self._at % 8  # the tables 8-byte aligned: mapped, they are bisected in place
        self._out.write(bytes(pad))
        self._at += pad
        self._out.write(arrays)
        footer = (len(ids), len(sym_ids), self._at, zlib.crc32(arrays), MAGIC)
        self._out.write(_FOOTER.pack(*footer))


def _searchable(table: np.ndarray, dtype: type[np.generic]) -> np.ndarray:
    """`table` itself when numpy can bisect it in place, else an aligned copy (8 B a row, once).
    The tables follow variable-length records, so they rarely start 8-byte aligned, and
    numpy's searchsorted copies an unaligned array whole on EVERY call: a search's ~400 chunk
    reads copied the id table ~400 times (158,812 chunks: 140 us a read, 0.3-0.6 s a search
    through the daemon; the whole kernel's 10 MB table: ~1 ms a read; issue 42)."""
    return np.require(table, dtype=dtype, requirements=["ALIGNED", "C_CONTIGUOUS"])


class ChunkFile:
    """A mapped chunk file: lookups by id and by symbol decode only the records they return."""

    def __init__(self, path: Path) -> None:
        self.path = path
        #: A one-shot process reads records with pread, not through the map: a mapped record
        #: faults in its whole page-cache folio (up to 2 MB with a large readahead), so a few
        #: hundred decoded records held 130 MB of the kernel's chunk file in RSS (issue 42).
        #: A long-lived one slices the map (0.5 µs a record warm; pread 2.8 µs). The file is
        #: never written in place (a new generation is).
        self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        closer = weakref.finalize(self, os.close, self._fd)
        try:
            size = os.fstat(self._fd).st_size
            if size < len(MAGIC) + _FOOTER.size:
                raise ChunkDamaged(f"index file {path.name} is too short ({size} bytes)")
            self._read_index(size)
        except BaseException:
            closer()
            raise

    def _read_index(self, size: int) -> None:
        fd = self._fd
        n, m, start, crc, magic = _FOOTER.unpack(os.pread(fd, _FOOTER.size, size - _FOOTER.size))
        end = start + n * 24 + m * 16
        head = os.pread(fd, len(MAGIC), 0)
        if head != magic or magic not in _MAGICS or end != size - _FOOTER.size or start < 0:
            raise ChunkDamaged(f"index file {self.path.name} has no valid footer (damaged)")
        self._map = buf = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        if zlib.crc32(buf[start:end]) != crc:
            raise ChunkDamaged(f"index file {self.path.name}: its id table fails its checksum")
        resident.step_done(buf)  # the checksum read every table page; lookups need a few
        at = start

        def take(dtype: str, count: int, width: int) -> np.ndarray:
            nonlocal at
            arr = np.frombuffer(buf, dtype=dtype, count=count, offset=at)
            at += count * width
            return arr

        self.ids = take("<i8", n, 8)
        self._offsets = take("<i8", n, 8)
        self._lengths = take("<u4", n, 4)
        self._crcs = take("<u4", n, 4)
        self._sym_hash = take("<u8", m, 8)
        self._sym_ids = take("<i8", m, 8)
        #: The two tables bisected per lookup, as searchable arrays (`_searchable`), made on
        #: the first lookup that needs them.
        self._id_keys: np.ndarray | None = None
        self._sym_keys: np.ndarray | None = None
        #: What `read_ids` decoded last, for the next question (a long-lived process only: a
        #: one-shot one asks once).
        self.recent = RecentChunks()

    def __len__(self) -> int:
        return len(self.ids)

    def position(self, chunk_id: int) -> int:
        """The row of `chunk_id` in the id table, -1 when absent."""
        keys = self._id_keys
        if keys is None:
            keys = self._id_keys = _searchable(self.ids, np.int64)
        at = int(np.searchsorted(keys, chunk_id))
        return at if at < len(keys) and int(keys[at]) == chunk_id else -1

    def positions(self, chunk_ids: np.ndarray) -> np.ndarray:
        """`position` of each id at once (-1 when absent): one bisection for a search's few
        hundred candidates instead of one numpy call each (~2.5 us apiece)."""
        keys = self._id_keys
        if keys is None:
            keys = self._id_keys = _searchable(self.ids, np.int64)
        if not len(keys):
            return np.full(len(chunk_ids), -1, dtype=np.int64)
        at = np.searchsorted(keys, chunk_ids)
        inside = np.minimum(at, len(keys) - 1)
        return np.where((at < len(keys)) & (keys[inside] == chunk_ids), at, -1)

    def raw(self, row: int) -> bytes:
        """The checked bytes of the record at `row` (ChunkDamaged when they changed on disk)."""
        start = int(self._offsets[row])
        return self._checked(row, start, int(self._lengths[row]), int(self._crcs[row]))

    def _checked(self, row: int, start: int, length: int, crc: int) -> bytes:
        if resident.one_shot():
            data = os.pread(self._fd, length, start)
        else:
            data = self._map[start : start + length]
        if len(data) != length or zlib.crc32(data) != crc:
            raise self._failed_checksum(int(self.ids[row]))
        return data

    def _failed_checksum(self, chunk_id: int) -> ChunkDamaged:
        return ChunkDamaged(f"index file {self.path.name}: chunk {chunk_id} fails its checksum")

    def _unreadable(self, exc: Exception) -> ChunkDamaged:
        return ChunkDamaged(f"index file {self.path.name}: a chunk is unreadable ({exc})")

    def span(self, start: int, size: int) -> bytes:
        """`size` bytes of the file from `start`, unchecked (record_copy.py checks each record)."""
        if resident.one_shot():
            return os.pread(self._fd, size, start)
        return self._map[start : start + size]

    def records(self, rows: np.ndarray) -> Records:
        """The id, offset, length and crc32 of the records at `rows`, in that order."""
        return Records(self.ids[rows], self._offsets[rows], self._lengths[rows], self._crcs[rows])

    def crc(self, row: int) -> int:
        """The stored crc32 of the record at `row` (copied along when compacting)."""
        return int(self._crcs[row])

    def get(self, chunk_id: int) -> Chunk | None:
        """The chunk `chunk_id`, decoded now, or None."""
        row = self.position(chunk_id)
        return None if row < 0 else self.decode(row)

    def decode(self, row: int) -> Chunk:
        """The chunk at `row` of the id table."""
        return self._decoded(self.raw(row))

    def read_ids(self, chunk_ids: list[int]) -> list[tuple[int, Chunk | ChunkDamaged]]:
        """(id, chunk) for each of `chunk_ids` held here, a damaged record's ChunkDamaged in
        place of its chunk (the others still read), the ones decoded lately first: the tables
        are indexed once for the lot, not with numpy scalars per record (a search reads ~300
        at once), and a long-lived process keeps what it decodes (recent_chunks.py)."""
        if resident.one_shot():
            return self._decode_ids(chunk_ids)
        held, missing = self.recent.take(chunk_ids)
        read = self._decode_ids(missing) if missing else []
        self.recent.keep([(i, c) for i, c in read if not isinstance(c, ChunkDamaged)])
        return [*held, *read]

    def _decode_ids(self, chunk_ids: list[int]) -> list[tuple[int, Chunk | ChunkDamaged]]:
        """`read_ids` without the recent chunks: each record read, checked and decoded in
        one loop (a function call per step cost ~0.5 of a record's ~4 us)."""
        rows = self.positions(np.fromiter(chunk_ids, dtype=np.int64, count=len(chunk_ids)))
        held = rows >= 0
        picked = rows[held]
        places = zip(
            np.asarray(chunk_ids, dtype=np.int64)[held].tolist(),
            self._offsets[picked].tolist(),
            self._lengths[picked].tolist(),
            self._crcs[picked].tolist(),
            strict=True,
        )
        pread, fd, mapping = resident.one_shot(), self._fd, self._map
        decode = record_codec.reader()
        out: list[tuple[int, Chunk | ChunkDamaged]] = []
        for chunk_id, start, length, crc in places:
            data = os.pread(fd, length, start) if pread else mapping[start : start + length]
            if len(data) != length or zlib.crc32(data) != crc:
                out.append((chunk_id, self._failed_checksum(chunk_id)))
                continue
            try:
                out.append((chunk_id, decode(data)))
            except UNREADABLE as exc:
                out.append((chunk_id, self._unreadable(exc)))
        return out

    def _decoded(self, record: bytes) -> Chunk:
        try:
            return record_codec.decode(record)
        except UNREADABLE as exc:
            raise self._unreadable(exc) from exc

    def symbol_ids(self, name: str) -> np.ndarray:
        """Ids of the chunks defining `name`, ascending."""
        key = np.uint64(symbol_hash(name))
        hashes = self._sym_keys
        if hashes is None:
            hashes = self._sym_keys = _searchable(self._sym_hash, np.uint64)
        lo = int(np.searchsorted(hashes, key, side="left"))
        hi = int(np.searchsorted(hashes, key, side="right"))
        return self._sym_ids[lo:hi]

    def symbols_without(self, removed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, ids) of the symbol table minus the ids in `removed` (for a compaction)."""
        keep = ~np.isin(self._sym_ids, removed)
        return self._sym_hash[keep], self._sym_ids[keep]
