"""What `codeask status` and the editor's status bar show of a folder index: counts taken
under the store's lock, so the numbers agree with each other, and the team state (which
published revision the folder reads, or why none, and whether the team database answers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from codeask.core.embedding import on_demand
from codeask.core.storage.factory import cache_state
from codeask.core.storage.team import BaseKind

if TYPE_CHECKING:
    from codeask.core.indexer.folder_state import FolderState

Backend = Literal["local", "postgres"]


@dataclass
class TeamStatus:
    """The team side of a folder (`index.backend`): cheap to take (no git, no query)."""

    backend: Backend = "local"
    kind: BaseKind = "off"
    """"base", or why there is none: "unreachable", "unpublished", "unusable" ("off": local)."""
    base: str = ""
    """`repository@sha[:12]` of the published revision read, '' without one."""
    behind: int = 0
    """Commits from that revision to HEAD."""
    overlay_files: int = 0
    """Files that differ from the base (edited, new, deleted): what the local overlay holds."""
    reason: str = ""
    """Why there is no base."""
    retry_in: float | None = None
    """Seconds until the database is tried again (only when it was unreachable)."""
    query_error: str = ""
    """Why the last query to the base failed; '' when the last one succeeded."""
    cache: str = ""
    """The team embedding cache: "connected", "not tried yet", "unavailable: ..." ('' when the
    model is not loaded yet, or with the local backend)."""

    def summary(self) -> str:
        """One line: `team base github.com/acme/shop@0123456789ab (2 commits behind HEAD),
        3 files in the local overlay`, or why there is none; '' with the local backend."""
        if self.backend == "local":
            return ""
        if self.base:
            behind = f"{self.behind} commit{'s' if self.behind != 1 else ''} behind HEAD"
            line = f"team base {self.base} ({behind}), {self.overlay_files} files in the overlay"
        else:
            line = f"no team base: {_KIND_WORDS.get(self.kind, self.kind)}, indexed locally"
            if self.retry_in is not None:
                line += f"; retrying in {self.retry_in:.0f} s"
        if self.query_error:
            line += f"; last team query failed: {self.query_error}"
        if self.cache.startswith("unavailable"):
            line += f"; team embedding cache {self.cache}"
        return line


_KIND_WORDS = {
    "unreachable": "database unreachable",
    "unpublished": "nothing published near HEAD",
    "unusable": "team index unusable",
}


def team_status(index: FolderState) -> TeamStatus:
    """The folder's team state, for status lines and `codeask/indexStatus`."""
    settings = index.settings
    if settings.index.backend != "postgres":
        return TeamStatus()
    team = index.team
    retry = team.retry
    cache = index.embedding.embedder.cache if index.embedder_loaded else None
    return TeamStatus(
        backend="postgres",
        kind=team.kind,
        base=f"{team.repository}@{team.sha[:12]}" if team.reader is not None else "",
        behind=team.behind,
        overlay_files=len(team.shadowed),
        reason=team.reason,
        retry_in=retry.seconds_left() if retry is not None and team.reader is None else None,
        query_error=team.query_error,
        cache=cache_state(cache) if cache is not None else "",
    )


@dataclass
class IndexStatus:
    """What `codeask status` and the editor's status bar show."""

    root: str
    index_dir: str
    files: int
    chunks: int
    embedded: int
    model: str
    disk_bytes: int
    last_indexed: float
    state: str
    history_commits: int
    static_embedded: int = 0
    """Chunks with a static-tier vector."""
    tiers: list[str] = field(default_factory=list)
    """The vector tiers this index builds (`embed.tiers`)."""
    team: TeamStatus = field(default_factory=TeamStatus)
    """The team base and database (`index.backend = "postgres"`)."""
    ignore_note: str = ""
    """Which ignore line leaves (nearly) nothing of the folder to index, and the override."""
    model_tier: str = ""
    """What the model tier covers: `full` (a backlog pass embeds every chunk), or `on demand:
    N chunks cached, M of opened or changed files` (past `embed.model_full_pass_chunks`); ''
    without one."""

    @property
    def indexed(self) -> bool:
        """Whether this folder has an index at all (saved here, or a team base read)."""
        return bool(self.last_indexed or self.files or self.chunks)

    @property
    def embedded_percent(self) -> float:
        """Share of chunks with a vector in the tier that covers the whole folder: the model
        tier when a pass fills it, else the static tier (an on-demand or static-only index is
        complete at 100%, not "0% embedded"); 0 for a folder never indexed, not a vacuous 100."""
        if self.chunks:
            whole = self.embedded if self.model_tier == "full" else self.static_embedded
            return 100.0 * whole / self.chunks
        return 100.0 if self.indexed else 0.0

    def tier_summary(self) -> str:
        """`static 812/812 complete, minilm 40/812 (4.9%)`: which dense tier answers now."""
        counts = {"static": self.static_embedded, "minilm": self.embedded}
        parts = []
        for tier in self.tiers:
            if tier == "minilm" and self.model_tier.startswith("on demand"):
                parts.append(f"minilm {self.model_tier}")
                continue
            done = counts.get(tier, 0)
            state = "complete" if done >= self.chunks else f"({100.0 * done / self.chunks:.1f}%)"
            parts.append(f"{tier} {done}/{self.chunks} {state}")
        return ", ".join(parts) or "none"


def status_of(index: FolderState) -> IndexStatus:
    """A snapshot of the counts for humans and status bars."""
    storage = index.storage
    counts = storage.counts()
    return IndexStatus(
        root=str(index.root),
        index_dir=str(index.folder),
        files=counts.files,
        chunks=counts.chunks,
        embedded=counts.embedded,
        static_embedded=counts.static_embedded,
        tiers=list(index.settings.embed.tiers),
        model=storage.model,
        disk_bytes=storage.disk_bytes(),
        last_indexed=storage.saved_at(),
        state=index.state,
        history_commits=counts.history_commits,
        team=team_status(index),
        ignore_note=ignore_note_of(index),
        model_tier=model_tier_of(index, counts.chunks, counts.embedded),
    )


def model_tier_of(index: FolderState, chunks: int, embedded: int) -> str:
    """`IndexStatus.model_tier`: the on-demand count is read from its file (~1 ms)."""
    settings = index.settings
    if "minilm" not in settings.embed.tiers:
        return ""
    if on_demand.full_pass(chunks, settings):
        return "full"
    cached = on_demand.cached_count(index.folder)
    return f"on demand: {cached} chunks cached, {embedded} of opened or changed files"


def ignore_note_of(index: FolderState) -> str:
    """The folder's ignore note: the last pass's, else looked up once (a listing of the root)."""
    if index.ignore_note is None:
        from codeask.core.source.ignore_note import ignore_note

        index.ignore_note = ignore_note(index.root, index.settings.index)
    return index.ignore_note
