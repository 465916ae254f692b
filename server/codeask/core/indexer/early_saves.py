"""Snapshots saved early in a long pass, so the other processes (`codeask search`, the daemon,
an agent) can search part of a big tree within seconds instead of after the whole first pass
(issue 42: "searchable partially within 10 s of the start"; the kernel's first pass takes
minutes).

A save writes the base so far, so the saves are spaced geometrically (a fifth of
`index.checkpoint_seconds` after the files are listed, 2 s by default: the kernel's listing
takes ~4 s and a search ~1-3 s, so it answers within 10 s of the start; then four times the time
elapsed at the previous one) and made only while the pass is in its first quarter: their total
stays a small fraction of the final save's, which writes the whole.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: The first early save comes after this share of `index.checkpoint_seconds`.
FIRST_SHARE = 0.2
#: Each early save waits this many times the time elapsed at the previous one.
GROWTH = 4.0
#: Early saves stop once this share of the pass's files is stored (the final save follows).
LAST_SHARE = 0.25


class EarlySaves:
    """When a first pass saves what it has stored so far (`due`, asked as files are stored)."""

    def __init__(
        self, checkpoint_seconds: float, files: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        self._started = clock()
        self._next_at = checkpoint_seconds * FIRST_SHARE
        self._files = files
        self.saves = 0
        """How many early saves were due (tests and the report read it)."""

    def due(self, stored: int) -> bool:
        """Whether to save now, `stored` files of the pass being in the index."""
        if stored <= 0 or stored > self._files * LAST_SHARE:
            return False
        elapsed = self._clock() - self._started
        if elapsed < self._next_at:
            return False
        self._next_at = elapsed * GROWTH
        self.saves += 1
        return True
