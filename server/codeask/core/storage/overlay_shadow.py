"""What an `OverlayReader` hides of its base: shadowed files, and commits the overlay indexed.

Kept apart from the reader (overlay.py) so that the merge logic reads as merging: this module
decides which base chunks are visible, caches that per (base generation, path set), and fetches
`k` visible base hits from a top-k call that knows nothing of shadowing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from codeask.core.records import HISTORY_KINDS, Chunk
from codeask.core.storage.protocol import IndexReader, Tier

#: Base hits asked for beyond `k` at most in the first round (more rounds double it).
MAX_HEADROOM = 1000

Shadowed = Callable[[], Iterable[str]] | Iterable[str]


@dataclass(frozen=True)
class Shadow:
    """What shadowing removes from the base, computed once per (base generation, paths)."""

    paths: frozenset[str]
    ids: frozenset[int]
    """Base ids (unmapped) of the chunks of shadowed files that the base has."""
    files: int
    """Base files (not skipped) among the shadowed paths."""
    vectors: dict[Tier, int]
    """Base chunks among `ids` with a vector, per tier."""


class ShadowTracker:
    """The shadow of `base` under `overlay`: the paths `shadowed` names (a set, or a callable
    re-read on every call) plus every path the overlay holds, and the commits the overlay's
    history indexed (shown from the overlay only)."""

    def __init__(self, base: IndexReader, overlay: IndexReader, shadowed: Shadowed) -> None:
        self.base = base
        self.overlay = overlay
        self._shadowed = shadowed
        self._lock = threading.Lock()
        self._cache: tuple[tuple[int, frozenset[str]], Shadow] | None = None

    def _paths(self) -> frozenset[str]:
        source = self._shadowed
        named = source() if callable(source) else source
        return frozenset(named) | frozenset(self.overlay.paths())

    def current(self) -> Shadow:
        """The current shadow (recomputed only when the base or the path set changed)."""
        paths = self._paths()
        key = (self.base.generation, paths)
        with self._lock:
            if self._cache is not None and self._cache[0] == key:
                return self._cache[1]
        base = self.base
        ids: set[int] = set()
        files = 0
        for path in paths:
            record = base.file(path)
            if record is None:
                continue
            files += not record.skipped
            ids.update(c.id for c in base.chunks_of(path))
        vectors: dict[Tier, int] = {
            tier: sum(1 for i in ids if base.vector(tier, i) is not None)
            for tier in ("minilm", "static")
            if base.vector_count(tier)
        }
        shadow = Shadow(paths, frozenset(ids), files, vectors)
        with self._lock:
            self._cache = (key, shadow)
        return shadow

    def overlay_commits(self) -> frozenset[str]:
        return frozenset(self.overlay.history_commits())

    @staticmethod
    def hidden(chunk: Chunk, shadow: Shadow, commits: frozenset[str]) -> bool:
        """Whether a base chunk is hidden: its file is shadowed, or (history) its commit is
        one the overlay indexed too."""
        if chunk.kind in HISTORY_KINDS:
            return chunk.meta.get("sha", "") in commits
        return chunk.path in shadow.paths

    def _visible(
        self, hits: list[tuple[int, float]], shadow: Shadow, commits: frozenset[str]
    ) -> list[tuple[int, float]]:
        """Base hits minus shadowed files (and, when the overlay has history, its commits)."""
        kept = []
        for chunk_id, score in hits:
            if chunk_id in shadow.ids:
                continue
            if commits:
                chunk = self.base.chunk(chunk_id)
                if chunk is None or self.hidden(chunk, shadow, commits):
                    continue
            kept.append((chunk_id, score))
        return kept

    def first_ask(self, k: int) -> int:
        """How many base hits `top_k` asks for first to keep `k` visible ones."""
        shadow, commits = self.current(), self.overlay_commits()
        return k + min(len(shadow.ids), MAX_HEADROOM) + (k if commits else 0)

    def top_k(
        self, fetch: Callable[[int], list[tuple[int, float]]], k: int
    ) -> list[tuple[int, float]]:
        """`k` visible base hits: ask for k + the shadowed chunks (all that can be dropped,
        capped at MAX_HEADROOM), and double while the base had more and too few survived."""
        shadow, commits = self.current(), self.overlay_commits()
        if not shadow.ids and not commits:
            return fetch(k)
        want = self.first_ask(k)
        while True:
            hits = fetch(want)
            kept = self._visible(hits, shadow, commits)
            if len(kept) >= k or len(hits) < want or want >= k + len(shadow.ids) + 4 * k:
                return kept[:k]
            want *= 2
