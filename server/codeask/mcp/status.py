"""What `index_status` says of each folder, and the short summary every answer carries.

Said plainly for an agent: how complete the index is (files, chunks, each vector tier done of
total), what is running (indexing, embedding, following another process's snapshots), who
writes the index, and why anything is missing (files skipped and why, tiers still filling,
settings a project file may not set, a refused root).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from codeask.core.indexer import FolderIndex
from codeask.core.operations import (
    LEXICAL,
    MINILM,
    STATIC,
    IndexCounts,
    tier_counts,
    tiers_incomplete,
    tiers_line,
)
from codeask.core.source.names import display_path
from codeask.mcp.folders import FolderDriver

#: The retrievers of a search (`find_related` answers as `related`, a blame as none).
SEARCH_TIERS = frozenset({LEXICAL, STATIC, MINILM})
#: Skipped files listed by name at most (the counts by reason are always complete).
SKIPPED_SHOWN = 5


def summary(drivers: list[FolderDriver], tiers: list[str]) -> dict[str, Any]:
    """The line every answer carries: the tiers that answered and how complete the index is."""
    chunks = minilm = static = 0
    phases = []
    opened: list[tuple[FolderIndex, IndexCounts]] = []
    for driver in drivers:
        phases.append(driver.phase)
        folder = driver.folder
        if folder is None:
            continue
        counts = folder.storage.counts()
        opened.append((folder, counts))
        chunks += counts.chunks
        minilm += counts.embedded
        static += counts.static_embedded
    busy = [p for p in phases if p in ("opening", "indexing", "embedding")]
    out: dict[str, Any] = {
        "tiers_answered": tiers,
        "complete": not busy and chunks > 0 and minilm >= chunks,
        "chunks": chunks,
        "static": f"{static}/{chunks}",
        "minilm": f"{minilm}/{chunks}",
    }
    if busy:
        out["state"] = busy[0]
    if chunks == 0:
        out["note"] = _empty_note(drivers)
    else:
        coverage = tier_counts([f for f, _ in opened], [c for _, c in opened])
        searched = bool(tiers) and set(tiers) <= SEARCH_TIERS  # else related code, blame
        said = tiers_line(tiers, coverage) if searched else tiers_incomplete(coverage)
        if said:  # which tiers answered, each vector tier's count (core/search/tiers.py)
            out["note"] = f"{said}; call index_status for details"
    return out


def _empty_note(drivers: list[FolderDriver]) -> str:
    problems = [f"{d.root}: {d.message}" for d in drivers if d.phase in ("refused", "error")]
    if problems:
        return "; ".join(problems)
    return "the index is empty or still being built: retry in a few seconds (see index_status)"


def folder_status(driver: FolderDriver) -> dict[str, Any]:
    """One folder's full status."""
    out: dict[str, Any] = {"root": str(driver.root), "state": driver.phase}
    folder = driver.folder
    if driver.message:
        out["message"] = driver.message
    if folder is None:
        return out
    status = folder.status()
    tiers = {"static": status.static_embedded, "minilm": status.embedded}
    out |= {
        "files": status.files,
        "chunks": status.chunks,
        "tiers": {
            tier: {"done": tiers.get(tier, 0), "total": status.chunks} for tier in status.tiers
        },
        "history_commits": status.history_commits,
        "model": status.model,
        "model_tier": status.model_tier,
        "index_dir": status.index_dir,
        "last_indexed": _when(status.last_indexed),
        "role": _role(driver, folder),
        "vectors_computed_here": driver.vectors_here,
    }
    if driver.progress is not None and driver.phase in ("indexing", "embedding"):
        out["progress"] = _progress(driver)
    if status.model_tier.startswith("on demand"):  # it fills nothing in: never missing
        tiers["minilm"] = status.chunks
    missing = _missing(driver, folder, tiers, status.chunks)
    if missing:
        out["missing"] = missing
    if driver.last_update:  # a HEAD move re-reads only what git says changed
        out["last_files_reindexed"] = list(driver.last_update)
    if status.team.backend != "local":  # the team base, or why none and when it is retried
        out["team"] = status.team.summary()
    if folder.warnings:
        out["settings_refused"] = list(folder.warnings)
    if status.ignore_note:
        out["ignore_note"] = status.ignore_note
    return out


def _role(driver: FolderDriver, folder: FolderIndex) -> str:
    if not folder.read_only:
        return "writer (this process indexes and embeds this folder)"
    who = driver.writer()
    by = who.describe() if who is not None else "nobody right now (this process takes over soon)"
    return f"reader: the index is written by {by}; this process follows its snapshots"


def _progress(driver: FolderDriver) -> dict[str, Any]:
    event = driver.progress
    assert event is not None
    out: dict[str, Any] = {"phase": event.phase, "percent": event.percent}
    if event.files_total:
        out["files"] = f"{event.files_done}/{event.files_total}"
    if event.chunks_total:
        out["chunks_embedded"] = f"{event.chunks_embedded}/{event.chunks_total}"
    return out


def _missing(
    driver: FolderDriver, folder: FolderIndex, tiers: dict[str, int], chunks: int
) -> list[str]:
    """Why a search may not see everything: tiers still filling, files left out."""
    out = []
    for tier in folder.settings.embed.tiers:
        done = tiers.get(tier, 0)
        if done < chunks:
            out.append(
                f"{tier} vectors for {chunks - done} of {chunks} chunks are not computed yet"
            )
    if driver.skipped:
        reasons = Counter(s.reason for s in driver.skipped)
        shown = ", ".join(f"{n} {reason}" for reason, n in reasons.most_common())
        names = ", ".join(display_path(s.rel) for s in driver.skipped[:SKIPPED_SHOWN])
        out.append(f"{len(driver.skipped)} files not indexed ({shown}), e.g. {names}")
    if chunks == 0 and driver.phase == "following":
        out.append("the writer has not saved a first snapshot yet")
    return out


def _when(epoch: float) -> str:
    if not epoch:
        return "never"
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(epoch))
