"""Blame for hover: cached per chunk and commit, on its own thread, never over a budget."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from codeask.core.git.commits import BlameInfo
from codeask.core.operations import blame_lines

BLAME_CACHE = 4096
BLAME_QUEUE = 8


def _last_commit(root: Path, rel: str, start: int, end: int) -> BlameInfo | None:
    commits = blame_lines(root, rel, start, end)
    return commits[0] if commits else None


class BlameCache:
    """The last commit of a line range; keyed by HEAD and the file's hash so edits invalidate."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="codeask-blame")
        self._entries: dict[tuple[Any, ...], Future[BlameInfo | None]] = {}

    async def last_commit(
        self, root: Path, rel: str, lines: tuple[int, int], head: str, sha: str, budget: float
    ) -> BlameInfo | None:
        """The answer if known within `budget` seconds (it is cached when it lands anyway)."""
        key = (root, rel, *lines, head, sha)
        entry = self._entries.get(key)
        if entry is None:
            if sum(1 for queued in self._entries.values() if not queued.done()) >= BLAME_QUEUE:
                return None  # blame is slow here (big history): do not pile work up
            if len(self._entries) >= BLAME_CACHE:
                for old in list(self._entries)[: BLAME_CACHE // 4]:
                    self._entries.pop(old, None)
            entry = self.pool.submit(_last_commit, root, rel, *lines)
            self._entries[key] = entry
        if not entry.done():
            if budget <= 0:
                return None
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(entry)), budget)
            except TimeoutError:
                return None
        try:
            return entry.result()
        except Exception:
            return None

    def shutdown(self) -> None:
        """Drop queued blames (the process is ending)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
