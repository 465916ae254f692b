"""What every part of a folder's worker shares: the tunables, the host, the settings rule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

from codeask.config import Settings
from codeask.lsp.progress import WorkDone

#: Idle poll: is the folder still there, did HEAD move (branch switch, commit, pull)?
POLL_SECONDS = 2.0
#: Without a client-side file watcher, a quiet incremental rescan this often (stat only).
RESCAN_SECONDS = 60.0
#: A file saved continuously is still reindexed at least this often.
MAX_DELAY_FACTOR = 5
MISSING = "folder no longer exists"
#: Settings sections whose change needs the index reopened (the others apply in place).
INDEX_SECTIONS = ("index", "chunk", "embed", "history")

#: `embed.threads = 0` (auto) under the server means this many ONNX threads: on two cores,
#: two embedding threads starve the requests (measured on sphinx: hover p95 150 → 69 ms,
#: search p95 326 → 89 ms) for almost no indexing speed.
SERVER_EMBED_THREADS = 1

FullKind = Literal["initial", "rebuild", "rescan"]


def serving(settings: Settings) -> Settings:
    """Settings as the server runs them: background embedding leaves a core to requests."""
    if settings.embed.threads == 0:
        settings.embed.threads = SERVER_EMBED_THREADS
    return settings


class Host(Protocol):
    """What a worker needs from the server (all thread-safe)."""

    def work_done(self, title: str, on_cancel: Callable[[], None] | None) -> WorkDone:
        """A `$/progress` session (a no-op when the client has no progress support)."""
        ...

    def warn(self, message: str) -> None:
        """Tell the user (window/showMessage, once per distinct text)."""
        ...


def summary(rels: list[str], limit: int = 3) -> str:
    """A few file names for a log line, so a big batch does not flood the log."""
    shown = ", ".join(rels[:limit])
    return shown + (f" (+{len(rels) - limit} more)" if len(rels) > limit else "")
