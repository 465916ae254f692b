"""A chunk record's bytes on disk: msgpack, zstd-compressed when that makes it smaller.

The chunk text is most of a record and the source already holds it once, so the plain records
were about the size of the source (Linux 6.1: chunks.rec ~1.2 GB of a 2.9 GB index, issue 42).
Each record is compressed on its own, so a read still decodes only the chunks it returns.
kernel,mm,lib's 40,777 records (31.4 MB), per zstd level: 3 gives 15.3 MB at 108 MB/s and
2.6 us to read one back; -1 (a fast level: literals not Huffman-coded) 18.0 MB at 230 MB/s and
1.1 us. A search reads ~340 chunks and a kernel pass writes ~1.2 GB of records, so -1 costs
~0.5 ms a search and ~6 CPU-s a kernel pass less, for 0.1x the source more on disk (stdlib
zlib at level 1: 15.0 MB at 43 MB/s, 4.9 us a read). A record says itself what it is: a zstd
frame starts with its magic (28 b5 2f fd), a plain msgpack record (a Chunk is an array:
0x90-0x9f, 0xdc, 0xdd) never does, so the plain records of files written before read as they
are and a compaction copies either kind unchanged. Short records, and those zstd does not
shrink, stay plain.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import msgspec
import zstandard

from codeask.core.records import Chunk

#: How every zstd frame starts.
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: Records shorter than this stay plain (a frame's header and a short text gain little).
COMPRESS_FROM = 96
LEVEL = -1
_ENCODE = msgspec.msgpack.Encoder()
_DECODE = msgspec.msgpack.Decoder(Chunk)
#: zstandard's (de)compressor objects are not safe across threads and cost ~45 us to make:
#: one of each per thread (searches read from several threads).
_local = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    made: zstandard.ZstdCompressor | None = getattr(_local, "compressor", None)
    if made is None:
        # the record's own crc32 covers the stored bytes: no frame checksum, no dictionary id
        made = _local.compressor = zstandard.ZstdCompressor(
            level=LEVEL, write_checksum=False, write_dict_id=False
        )
    return made


def _decompressor() -> zstandard.ZstdDecompressor:
    made: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if made is None:
        made = _local.decompressor = zstandard.ZstdDecompressor()
    return made


def encode(chunk: Chunk) -> bytes:
    """The record of `chunk` as stored."""
    plain = _ENCODE.encode(chunk)
    if len(plain) < COMPRESS_FROM:
        return plain
    packed = _compressor().compress(plain)
    return packed if len(packed) < len(plain) else plain


def decode(record: bytes) -> Chunk:
    """The chunk of a stored record (msgspec.DecodeError / zstandard.ZstdError when damaged):
    one record's `reader` (single reads are rare; a batch binds one reader for the lot)."""
    return reader()(record)


def reader() -> Callable[[bytes], Chunk]:
    """`decode` bound to this thread's decompressor, for a loop over many records."""
    unzip, decode_plain = _decompressor().decompress, _DECODE.decode

    def read(record: bytes) -> Chunk:
        return decode_plain(unzip(record) if record[:4] == ZSTD_MAGIC else record)

    return read
