"""The writer lock: one process writes a folder's index, the others follow it read-only.

A read-only worker answers from the writer's snapshots, indexes nothing, and becomes the
writer (with a full pass) as soon as the lock is free.
"""

from __future__ import annotations

import logging

from codeask.core.driver.schedule import Schedule
from codeask.core.driver.status import FolderStatus
from codeask.core.git.repo import head_sha
from codeask.core.indexer import FolderIndex
from codeask.core.storage.writer_lock import holder, take_request

log = logging.getLogger("codeask.driver")


def writable(folder: FolderIndex) -> bool:
    """Whether this server may index now (the writer); read-only workers only follow."""
    return not folder.read_only


def note_read_only(status: FolderStatus, folder: FolderIndex) -> None:
    """Another process writes this index: answer from its snapshots, index nothing (once)."""
    who = holder(folder.folder)
    status.message = (
        f"read-only: {folder.folder} is written by "
        f"{who.describe() if who else 'another process'}; edits are indexed by it, "
        "and this server takes over when it exits"
    )
    log.warning("%s", status.message)


def follow_or_own(status: FolderStatus, folder: FolderIndex, schedule: Schedule) -> bool:
    """Each poll: a reader reloads new snapshots and takes the lock once it is free; the
    writer honours requests other processes left (`codeask index --rebuild`). True when
    this worker is the writer."""
    if folder.read_only:
        if not folder.try_promote():
            if folder.reload_if_changed():
                status.state = "ready" if folder.storage.chunk_count() else "empty"
            return False
        status.message = ""
        log.info("%s: now the writer of its index", status.root)
        status.head = head_sha(status.root)
        schedule.request_full("initial")
    if take_request(folder.folder, "rebuild"):
        log.info("%s: rebuild requested by `codeask index --rebuild`", status.root)
        schedule.request_full("rebuild")
    return True
