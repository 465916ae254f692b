"""potion's tokenizer.json, parsed once per file: its vocabulary kept as a compact list.

A query tokenized by `ReachTokenizers` needs the document's 29,528-token vocabulary as a dict;
hashing and parsing the 0.7 MB JSON for it was ~10 ms of a one-shot `codeask search` (issue
29). The first load writes what it parsed to the user's cache folder: the tokens in id order
(msgpack) and the document without them, with the identity of the exact tokenizer file it came
from (`verified.identity`: device, inode, size, mtime and ctime) and its pinned sha256. A later
load whose tokenizer file has the same identity reads that instead (~3 ms); any write to or
replacement of the file, another pin, or a cache file that does not decode or fails its own
checksum means parsing the JSON again. What this gives up is what verified.py gives up.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

import msgspec

from codeask.core.embedding.verified import identity
from codeask.core.runtime import private_files


class _Cached(msgspec.Struct):
    source: list[int]
    """The tokenizer file's identity when it was parsed."""
    sha256: str
    """Its pinned sha256 (checked over the bytes parsed)."""
    payload: bytes
    """msgpack of `_Parsed`."""
    blake2b: str
    """Of the payload: a damaged cache file is never used."""


class _Parsed(msgspec.Struct):
    tokens: list[str]
    """The vocabulary in id order (ids are 0..n-1)."""
    document: bytes
    """The rest of tokenizer.json (JSON, vocabulary empty)."""


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def read_cached(cache: Path, source: os.stat_result, sha256: str) -> dict[str, Any] | None:
    """The parsed document when `cache` holds it for this very file and pin, else None."""
    try:
        cached = msgspec.msgpack.decode(cache.read_bytes(), type=_Cached)
        if cached.source != identity(source) or cached.sha256 != sha256:
            return None
        if _digest(cached.payload) != cached.blake2b:
            return None
        parsed = msgspec.msgpack.decode(cached.payload, type=_Parsed)
        document = msgspec.json.decode(parsed.document)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("model"), dict):
        return None
    document["model"]["vocab"] = dict(zip(parsed.tokens, range(len(parsed.tokens)), strict=True))
    return document


def write_cached(
    cache: Path, source: os.stat_result, sha256: str, document: dict[str, Any]
) -> None:
    """Keep a parsed document for the next load (best effort; only a vocabulary whose ids are
    0..n-1 fits the compact form)."""
    vocab = document.get("model", {}).get("vocab")
    if not isinstance(vocab, dict):
        return
    tokens = sorted(vocab, key=vocab.__getitem__)
    if [vocab[token] for token in tokens] != list(range(len(tokens))):
        return
    rest = {**document, "model": {**document["model"], "vocab": {}}}
    payload = msgspec.msgpack.encode(_Parsed(tokens, msgspec.json.encode(rest)))
    data = msgspec.msgpack.encode(_Cached(identity(source), sha256, payload, _digest(payload)))
    with contextlib.suppress(OSError):
        private_files.make_dir(cache.parent)
        private_files.replace_bytes(cache, data)
