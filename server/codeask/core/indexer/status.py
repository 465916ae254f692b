"""What `codeask status` and the editor's status bar show of a folder index: counts taken
under the store's lock, so the numbers agree with each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codeask.core.indexer.folder import FolderIndex


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

    @property
    def embedded_percent(self) -> float:
        """Share of chunks with a vector."""
        return 100.0 * self.embedded / self.chunks if self.chunks else 100.0

    def tier_summary(self) -> str:
        """`static 812/812 complete, minilm 40/812 (4.9%)`: which dense tier answers now."""
        counts = {"static": self.static_embedded, "minilm": self.embedded}
        parts = []
        for tier in self.tiers:
            done = counts.get(tier, 0)
            state = "complete" if done >= self.chunks else f"({100.0 * done / self.chunks:.1f}%)"
            parts.append(f"{tier} {done}/{self.chunks} {state}")
        return ", ".join(parts) or "none"


def status_of(index: FolderIndex) -> IndexStatus:
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
    )
