"""What every part of a folder's driver shares: the tunables and the settings rule."""

from __future__ import annotations

from typing import Literal

from codeask.config import Settings

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


def summary(rels: list[str], limit: int = 3) -> str:
    """A few file names for a log line, so a big batch does not flood the log."""
    shown = ", ".join(rels[:limit])
    return shown + (f" (+{len(rels) - limit} more)" if len(rels) > limit else "")
