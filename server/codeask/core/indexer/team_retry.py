"""The team base coming back: a long-running server tries an unreachable database again.

A folder whose database did not answer at open (`TeamBase.kind == "unreachable"`) is indexed
locally in full, and lexical and dense search answer from that. Its server (the LSP worker's
idle poll) calls `retry_base` each poll; with a backoff (30 s doubling to 10 min, injectable:
`schedule_retry`, or `TeamBase.retry` set by a test), it opens the base again. Only
"unreachable" is retried: "nothing published" or a refused login need a person, not time.
Once the database answers but has nothing for this folder, the retries stop and the status
says why.

Switching to the base, the simplest correct way: the fresh `TeamBase` (its shadowed paths from
git, like any open) replaces the folder's, and `storage` becomes a `TeamStorage` over the same
local index, under the run lock (no full pass or update is half done). The local index keeps
what it has: every path it holds shadows the base (`OverlayReader`), so nothing changes for a
reader at the switch, and no stale published chunk can show. The caller then runs a full pass,
which keeps locally only the files that differ from the base (files.scan_and_chunk) and so
hands the rest to the published revision. A search running across the switch finishes on the
storage it started with (the local one stays open: it is the overlay now).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from codeask.core.indexer.backoff import BaseRetry
from codeask.core.storage.factory import open_base, storage_over
from codeask.core.storage.team import TeamBase

if TYPE_CHECKING:
    from codeask.core.indexer.folder_state import FolderState

log = logging.getLogger("codeask.core.indexer")


def schedule_retry(team: TeamBase, retry: Callable[[], BaseRetry] = BaseRetry) -> None:
    """Give a base that could not open for lack of an answer its backoff (other kinds: none)."""
    if team.kind == "unreachable" and team.retry is None:
        team.retry = retry()


def retry_base(index: FolderState) -> bool:
    """If the retry is due, open the base again; True when the folder switched to it (the
    caller then runs a full pass). The first call starts the backoff (`schedule_retry`, unless
    a test gave the base its own). Blocks for at most the connect timeout; never raises."""
    team = index.team
    schedule_retry(team)
    retry = team.retry
    if team.reader is not None or retry is None or not retry.due():
        return False
    try:
        fresh = open_base(index.root, index.settings)
    except Exception as exc:  # open_base answers every failure with a reason; be safe anyway
        fresh = TeamBase(reason=f"team index unusable ({exc}): indexing locally", kind="unusable")
    if fresh.reader is None:
        team.reason, team.kind = fresh.reason, fresh.kind
        if fresh.kind == "unreachable":
            retry.failed()
            log.info("%s: %s; retrying in %.0f s", index.root, fresh.reason, retry.delay)
        else:  # the database answered: waiting longer will not help
            team.retry = None
            log.warning("%s: %s (no more retries)", index.root, fresh.reason)
        return False
    with index.run_lock:
        index.team = fresh
        index.storage = storage_over(fresh, index.local)
    log.info(
        "%s: the team index is back: reading %s@%s; the next full pass trims the local index "
        "to the %d file(s) that differ",
        index.root,
        fresh.repository,
        fresh.sha[:12],
        len(fresh.shadowed),
    )
    return True
