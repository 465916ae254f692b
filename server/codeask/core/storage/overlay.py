"""`OverlayReader`: one `IndexReader` over a published base index and a small local overlay.

An editor on the team backend reads the revision CI published nearest to its HEAD (the base)
for committed content, and indexes locally only the files that differ from that revision (the
overlay: uncommitted edits, unpushed commits, another branch). Retrieval must see one index:

- **Shadowing.** `shadowed` names the workspace paths whose base content must never be shown
  (changed or deleted since the base revision, whether or not the overlay has them now); every
  path the overlay holds shadows the base too. Base chunks of those files vanish from top-k
  lists, `chunk`, `chunks_of`, `all_chunks`, `symbol_ids`, `paths`, `paths_named`, counts.
  History chunks are not file content and are never shadowed by path; a commit both sides
  indexed is shown once, from the overlay.
- **Ids.** A tag bit: overlay id `i` → `2*i + 1`, base id `j` → `2*j` (`_OVERLAY`, `_BASE`).
  No assumption on either side's range (a PostgreSQL reader may pack revision and row into an
  id; Python ints do not overflow, negative ids survive the shift), disjoint by construction,
  and every id handed out (`Chunk.id`, `FileRecord.chunk_ids`, top-k hits) is the mapped one,
  so callers round-trip it through `chunk`/`vector` unchanged.
- **Top-k.** Each side is asked for `k` plus the base hits shadowing can drop (exact: the
  number of base chunks of shadowed files, capped, doubled while short), shadowed base hits
  are dropped, the two lists merged into one. Dense similarities are cosines of one model on
  both sides: comparable, merged by score. BM25 of two corpora differ in idf and lengths, yet
  against a single index of the whole tree raw scores merged best (top-10 overlap 0.88-0.90,
  per-side rank 0.67-0.70, pooled re-scoring 0.74-0.80; docs/storage.md); a base that scores
  otherwise (PostgreSQL's `ts_rank`) must merge by rank (`lexical_merge="rank"`).

What the base hides, and fetching `k` visible base hits, live in overlay_shadow.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal, TypeVar

import msgspec
import numpy as np

from codeask.core.records import Chunk, FileRecord
from codeask.core.storage.lexical.bm25 import CHUNK_WEIGHTS, Postings
from codeask.core.storage.lexical.index import doc_columns, query_terms
from codeask.core.storage.overlay_shadow import Shadowed, ShadowTracker
from codeask.core.storage.protocol import DenseAsk, IndexCounts, IndexReader, Tier

#: The tag bit of each side in a merged id.
_BASE, _OVERLAY = 0, 1
#: Lexical merge: raw BM25 ("score", the default: best measured, both sides local BM25), per-side
#: rank ("rank": for a base scored otherwise, e.g. PostgreSQL's ts_rank), or one BM25 over the
#: pooled candidates ("rescore"). Measured in docs/storage.md.
LexicalMerge = Literal["rank", "score", "rescore"]
#: The rank-merge score of rank r (0-based): an RRF share, the scale retrieval fuses with.
RANK_K = 60

K = TypeVar("K")


def to_base(chunk_id: int) -> int:
    """A base id as an overlay-reader id."""
    return chunk_id << 1 | _BASE


def to_overlay(chunk_id: int) -> int:
    """An overlay id as an overlay-reader id."""
    return chunk_id << 1 | _OVERLAY


def split_id(merged: int) -> tuple[int, int]:
    """(side, that side's id) of an overlay-reader id."""
    return merged & 1, merged >> 1


def _mapped(chunk: Chunk, side: int) -> Chunk:
    """A copy carrying the merged id (the side's object stays untouched)."""
    return msgspec.structs.replace(chunk, id=chunk.id << 1 | side)


def _mapped_record(record: FileRecord, side: int) -> FileRecord:
    return msgspec.structs.replace(record, chunk_ids=[i << 1 | side for i in record.chunk_ids])


class OverlayReader:
    """`IndexReader` over `base` (any reader: the published revision) and `overlay` (the local
    index of the files that differ); the overlay wins for its paths, shadowed paths of the base
    never appear. `shadowed`: a set, or a callable re-read on every call (the editor's set
    changes with each save and git operation)."""

    def __init__(
        self,
        base: IndexReader,
        overlay: IndexReader,
        shadowed: Shadowed,
        *,
        lexical_merge: LexicalMerge = "score",
    ) -> None:
        self.base = base
        self.overlay = overlay
        self.lexical_merge: LexicalMerge = lexical_merge
        #: What the base hides (overlay_shadow.py): shadowed files, the overlay's commits.
        self.shadows = ShadowTracker(base, overlay, shadowed)

    # ---- IndexReader: identity and sizes -----------------------------------------------------
    @property
    def generation(self) -> int:
        """Changes whenever either side does (a pairing function: distinct pairs, distinct
        numbers), so caches keyed by it never serve one side's stale state."""
        a, b = self.base.generation, self.overlay.generation
        return (a + b) * (a + b + 1) // 2 + b

    @property
    def model(self) -> str:
        return self.overlay.model

    def tier_model(self, tier: Tier) -> tuple[str, int]:
        return self.overlay.tier_model(tier)

    def counts(self) -> IndexCounts:
        shadow = self.shadows.current()
        base, over = self.base.counts(), self.overlay.counts()
        commits = set(self.base.history_commits()) | set(self.overlay.history_commits())
        return IndexCounts(
            files=over.files + base.files - shadow.files,
            chunks=over.chunks + base.chunks - len(shadow.ids),
            embedded=over.embedded + base.embedded - shadow.vectors.get("minilm", 0),
            static_embedded=(
                over.static_embedded + base.static_embedded - shadow.vectors.get("static", 0)
            ),
            history_commits=len(commits),
        )

    def chunk_count(self) -> int:
        shadow = self.shadows.current()
        return self.overlay.chunk_count() + self.base.chunk_count() - len(shadow.ids)

    def vector_count(self, tier: Tier) -> int:
        shadow = self.shadows.current()
        base = self.base.vector_count(tier) - shadow.vectors.get(tier, 0)
        return self.overlay.vector_count(tier) + base

    # ---- files and chunks --------------------------------------------------------------------
    def file(self, path: str) -> FileRecord | None:
        record = self.overlay.file(path)
        if record is not None:
            return _mapped_record(record, _OVERLAY)
        if path in self.shadows.current().paths:
            return None
        record = self.base.file(path)
        return _mapped_record(record, _BASE) if record is not None else None

    def paths(self) -> list[str]:
        shadow = self.shadows.current()
        own = self.overlay.paths()
        return own + [p for p in self.base.paths() if p not in shadow.paths]

    def chunk(self, chunk_id: int) -> Chunk | None:
        side, own = split_id(chunk_id)
        if side == _OVERLAY:
            found = self.overlay.chunk(own)
            return _mapped(found, _OVERLAY) if found is not None else None
        shadow = self.shadows.current()
        if own in shadow.ids:
            return None
        found = self.base.chunk(own)
        if found is None or self.shadows.hidden(found, shadow, self.shadows.overlay_commits()):
            return None
        return _mapped(found, _BASE)

    def chunks(self, chunk_ids: Iterable[int]) -> dict[int, Chunk]:
        """As `chunk` for each id, one batch per side."""
        own: list[int] = []
        base: list[int] = []
        for merged in chunk_ids:
            side, local = split_id(merged)
            (own if side == _OVERLAY else base).append(local)
        found = {to_overlay(i): _mapped(c, _OVERLAY) for i, c in self.overlay.chunks(own).items()}
        shadow, commits = self.shadows.current(), self.shadows.overlay_commits()
        visible = [i for i in base if i not in shadow.ids]
        for i, chunk in self.base.chunks(visible).items():
            if not self.shadows.hidden(chunk, shadow, commits):
                found[to_base(i)] = _mapped(chunk, _BASE)
        return found

    def chunks_of(self, path: str) -> list[Chunk]:
        if self.overlay.file(path) is not None:
            return [_mapped(c, _OVERLAY) for c in self.overlay.chunks_of(path)]
        if path in self.shadows.current().paths:
            return []
        return [_mapped(c, _BASE) for c in self.base.chunks_of(path)]

    def all_chunks(self) -> list[Chunk]:
        shadow, commits = self.shadows.current(), self.shadows.overlay_commits()
        own = [_mapped(c, _OVERLAY) for c in self.overlay.all_chunks()]
        base = [
            _mapped(c, _BASE)
            for c in self.base.all_chunks()
            if not self.shadows.hidden(c, shadow, commits)
        ]
        return own + base

    def history_commits(self) -> list[str]:
        return list(dict.fromkeys([*self.overlay.history_commits(), *self.base.history_commits()]))

    # ---- exact evidence ----------------------------------------------------------------------
    def symbol_ids(self, name: str) -> list[int]:
        shadow = self.shadows.current()
        own = [to_overlay(i) for i in self.overlay.symbol_ids(name)]
        return own + [to_base(i) for i in self.base.symbol_ids(name) if i not in shadow.ids]

    def paths_named(self, key: str) -> list[str]:
        shadow = self.shadows.current()
        own = self.overlay.paths_named(key)
        base = [p for p in self.base.paths_named(key) if p not in shadow.paths]
        return list(dict.fromkeys(own + base))

    # ---- dense and lexical top-k -------------------------------------------------------------
    def vector(self, tier: Tier, chunk_id: int) -> np.ndarray | None:
        side, own = split_id(chunk_id)
        if side == _OVERLAY:
            return self.overlay.vector(tier, own)
        if own in self.shadows.current().ids:
            return None
        return self.base.vector(tier, own)

    def dense_top_k(
        self, tier: Tier, vector: np.ndarray, k: int, *, missing_from: Tier | None = None
    ) -> list[tuple[int, float]]:
        """Cosine similarities of one model on both sides: merged by score."""
        own = self.overlay.dense_top_k(tier, vector, k, missing_from=missing_from)
        base = self.shadows.top_k(
            lambda n: self.base.dense_top_k(tier, vector, n, missing_from=missing_from), k
        )
        merged = [(to_overlay(i), s) for i, s in own] + [(to_base(i), s) for i, s in base]
        merged.sort(key=lambda hit: hit[1], reverse=True)
        return merged[:k]

    def dense_asks(self, tier: Tier, k: int, *, missing_from: Tier | None = None) -> list[DenseAsk]:
        """The overlay's and the base's (asked for as many as `dense_top_k` asks it first)."""
        own = self.overlay.dense_asks(tier, k, missing_from=missing_from)
        base = self.base.dense_asks(tier, self.shadows.first_ask(k), missing_from=missing_from)
        return own + base

    def merge_mode(self) -> LexicalMerge:
        """How the two lexical lists merge, asked once per query before either side is (a base
        whose scores change scale, e.g. ts_rank until its BM25 is built, decides per query)."""
        return self.lexical_merge

    def lexical_top_k(self, query: str, k: int) -> list[tuple[int, float]]:
        how = self.merge_mode()
        own = [(to_overlay(i), s) for i, s in self.overlay.lexical_top_k(query, k)]
        base = self.shadows.top_k(lambda n: self.base.lexical_top_k(query, n), k)
        mapped = [(to_base(i), s) for i, s in base]
        if how == "rescore" and own:
            return self._rescore(query, own + mapped, k)
        return _merge_ranked(own, mapped, k, how)

    def _rescore(
        self, query: str, hits: list[tuple[int, float]], k: int
    ) -> list[tuple[int, float]]:
        """Both sides' candidates scored again by one BM25 over the pool (one idf)."""
        rows = []
        for chunk_id, _ in hits:
            chunk = self.chunk(chunk_id)
            if chunk is not None:
                rows.append((chunk_id, *doc_columns(chunk)))
        if not rows:
            return []
        postings = Postings.build(rows, CHUNK_WEIGHTS)
        return [(int(key), s) for key, s in postings.search(query_terms(query), k)]  # type: ignore[call-overload]

    def lexical_files(self, query: str, k: int) -> list[tuple[str, float]]:
        how = self.merge_mode()
        shadow = self.shadows.current()
        own = self.overlay.lexical_files(query, k)
        dropped = sum(1 for p in shadow.paths if self.base.file(p) is not None)
        base = [
            (p, s) for p, s in self.base.lexical_files(query, k + dropped) if p not in shadow.paths
        ]
        return _merge_ranked(own, base[:k], k, how)

    # ---- the index on disk -------------------------------------------------------------------
    def saved_at(self) -> float:
        return max(self.base.saved_at(), self.overlay.saved_at())

    def disk_bytes(self) -> int:
        """The local footprint: the base lives elsewhere when it is the team database, but a
        local base counts too (a reader cannot tell; both are summed)."""
        return self.base.disk_bytes() + self.overlay.disk_bytes()


def _merge_ranked(
    own: list[tuple[K, float]], base: list[tuple[K, float]], k: int, how: LexicalMerge
) -> list[tuple[K, float]]:
    """Merge two lexical lists. "score": by raw score (both sides FTS5 BM25). "rank": each hit
    scores 1/(RANK_K + its rank on its side + 1), the overlay first on a tie: scale-free (for
    `ts_rank` against BM25), the share retrieval's own fusion gives a rank, but it lifts a small
    overlay's weak matches (2.6x their share of the reference top-10)."""
    if how == "score":
        merged = own + base
        merged.sort(key=lambda hit: hit[1], reverse=True)
        return merged[:k]
    ranked = [(key, 1.0 / (RANK_K + rank + 1), 0) for rank, (key, _) in enumerate(own)]
    ranked += [(key, 1.0 / (RANK_K + rank + 1), 1) for rank, (key, _) in enumerate(base)]
    ranked.sort(key=lambda hit: (-hit[1], hit[2]))
    return [(key, score) for key, score, _ in ranked[:k]]


def overlay_paths(root: Path, base_sha: str) -> set[str]:
    """Workspace paths whose working-tree content differs from commit `base_sha`: commits after
    it, staged, unstaged, untracked (not ignored) and deleted files; works when `base_sha` is on
    another branch (its tree against the working tree). Raises ValueError when unknowable (no
    repository, unknown commit): the caller then cannot trust the base at all."""
    from codeask.core.git.repo import diff_to_workdir  # pygit2: only with a team base

    found = diff_to_workdir(root, base_sha)
    if found is None:
        raise ValueError(f"cannot compare {root} with commit {base_sha!r}")
    return found


def _conforms(reader: OverlayReader) -> IndexReader:
    """mypy checks here that OverlayReader has every IndexReader method."""
    return reader
