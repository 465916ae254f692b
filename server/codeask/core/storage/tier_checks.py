"""The hash of the big vector tiers an open only size-checked (snapshot.Deferred).

Why (issue 42): on the kernel the static tier's hash is ~2 CPU-s. A reader starts it at the
open; a writer holds it until its first pass is saved, so it does not race a one-file edit's
pass for the second core of a 2-core machine. A save that rewrites a held tier (a fold) checks
it first, inline: a damaged base is dropped, never copied into a new base under a fresh hash.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection

from codeask.core.runtime import background
from codeask.core.storage.snapshot import Deferred, check_deferred

#: What the store does with a damaged tier: (the tier's name, why).
Drop = Callable[[str, str], None]


class TierChecks:
    """The deferred hashes of one loaded snapshot: held, running in a thread, or done."""

    def __init__(self, items: list[Deferred] | None = None) -> None:
        #: Hashes not started yet (`release` starts them).
        self.held: list[Deferred] = list(items or [])
        #: The thread hashing the released ones, if any.
        self.verifier: threading.Thread | None = None

    def release(self, drop: Drop) -> None:
        """Hash the held tiers in a background thread; once. `drop` is passed, not kept: a
        store keeping its own bound method is a cycle only the collector frees (a daemon's
        replaced reader kept ~110 MB of the kernel's index)."""
        held, self.held = self.held, []
        if held:
            self.verifier = background.start(_check, held, drop, name="codeask-verify-index")

    def before_fold(self, folding: Collection[str], drop: Drop) -> None:
        """Check here the held tiers a save is about to rewrite."""
        now = [item for item in self.held if item.name in folding]
        if now:
            self.held = [item for item in self.held if item not in now]
            _check(now, drop)


def _check(items: list[Deferred], drop: Drop) -> None:
    for item in items:
        why = check_deferred(item)
        if why:
            drop(item.name, why)
