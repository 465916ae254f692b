"""Symbols: definitions of the chunk index whose name contains a query (`workspace/symbol`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from codeask.core.indexer import FolderIndex
from codeask.core.records import Chunk


def find_symbols(
    folders: Sequence[FolderIndex], query: str, kinds: Collection[str], limit: int
) -> list[tuple[FolderIndex, Chunk]]:
    """Named chunks of `kinds` (first parts only) whose name contains `query`, ignoring case:
    exact names first, then prefixes, then the rest; shorter names, then paths, first."""
    wanted = query.strip().lower()
    found: list[tuple[tuple[int, int, str], FolderIndex, Chunk]] = []
    for folder in folders:
        for chunk in folder.storage.all_chunks():
            name = chunk.symbol.lower()
            if chunk.kind not in kinds or not chunk.symbol or chunk.part > 1 or wanted not in name:
                continue
            rank = 0 if name == wanted else 1 if name.startswith(wanted) else 2
            found.append(((rank, len(name), chunk.path), folder, chunk))
    found.sort(key=lambda item: item[0])
    return [(folder, chunk) for _, folder, chunk in found[:limit]]
