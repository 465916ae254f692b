"""When to try an unreachable team database again: a doubling backoff with an injectable clock.

Its own module (team_retry.py applies it, team.py's `TeamBase.retry` holds one): `TeamBase`
naming `BaseRetry` from team_retry.py, which imports `TeamBase`, was an import circle.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: The first retry after an unreachable database, and the longest wait between two.
FIRST_RETRY_SECONDS = 30.0
MAX_RETRY_SECONDS = 600.0


class BaseRetry:
    """When to try the team database again: `first` s after the failure, doubling up to
    `maximum`; `clock` (monotonic seconds) is injectable for tests."""

    def __init__(
        self,
        first: float = FIRST_RETRY_SECONDS,
        maximum: float = MAX_RETRY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.maximum = maximum
        self.clock = clock
        self.delay = first
        self.next_at = clock() + first
        self.attempts = 0

    def due(self) -> bool:
        """Whether the next try is due now."""
        return self.clock() >= self.next_at

    def seconds_left(self) -> float:
        """Seconds until the next try (0 when due)."""
        return max(0.0, self.next_at - self.clock())

    def failed(self) -> None:
        """Another try failed: wait twice as long (at most `maximum`)."""
        self.attempts += 1
        self.delay = min(self.maximum, self.delay * 2)
        self.next_at = self.clock() + self.delay
