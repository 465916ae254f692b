"""The last step, `diversify`: best first, at most `retrieve.per_file_cap` hits per file, the
same lines of one file shown once (an outline beside the members it elides).

Not a score change: what a result list shows (`rank_files` reads the fused candidates).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, TypeVar

from codeask.core.records import ELISION, HISTORY_KINDS, Chunk


class Shown(Protocol):
    """What diversifying reads of a hit."""

    root: Path
    chunk: Chunk

    @property
    def path(self) -> str: ...


H = TypeVar("H", bound=Shown)


def diversify(hits: Iterable[H], k: int, per_file_cap: int) -> list[H]:
    """Best first, at most `per_file_cap` per file, the same lines of one file shown once."""
    taken: list[H] = []
    per_file: dict[tuple[Path, str], list[H]] = defaultdict(list)
    for hit in hits:
        key = (hit.root, hit.path)
        same_file = per_file[key]
        if len(same_file) >= per_file_cap:
            continue
        if any(shows_same_lines(hit.chunk, other.chunk) for other in same_file):
            continue
        same_file.append(hit)
        taken.append(hit)
        if len(taken) >= k:
            break
    return taken


def overlaps(a: Chunk, b: Chunk) -> bool:
    """The two chunks' line ranges meet (one's class outline and its methods do)."""
    if a.kind in HISTORY_KINDS or b.kind in HISTORY_KINDS:
        return a.id == b.id
    return a.start_line <= b.end_line and b.start_line <= a.end_line


def shows_same_lines(a: Chunk, b: Chunk) -> bool:
    """A result list shows each line once. An outline (a class's header and signatures, the
    bodies elided as `...` lines) spans its members' lines without holding them: a member
    inside it is shown beside it (before, `urlmap.rb`'s module outline hid every method)."""
    return overlaps(a, b) and not (_outlines(a, b) or _outlines(b, a))


def _outlines(outer: Chunk, inner: Chunk) -> bool:
    return (
        ELISION in outer.text
        and outer.start_line <= inner.start_line
        and inner.end_line <= outer.end_line
        and (outer.start_line, outer.end_line) != (inner.start_line, inner.end_line)
    )
