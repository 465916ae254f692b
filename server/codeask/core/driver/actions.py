"""The worker's units of work: typed values, so the dispatch is a `match` mypy can check.

The schedule picks one (`Schedule.next_action`); the worker's thread runs it. Each is a
plain value: what to do and its argument, nothing that runs by itself.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from codeask.core.driver.common import FullKind


@dataclass(frozen=True)
class Update:
    """Reindex these files now (their debounce ran out): saves, opens, watcher events."""

    rels: tuple[str, ...]


@dataclass(frozen=True)
class Full:
    """A full pass: the initial index, `codeask.reindex` (rebuild) or a quiet rescan."""

    kind: FullKind


@dataclass(frozen=True)
class Reopen:
    """Index-relevant settings changed: close the index and open it with these."""

    editor: dict[str, Any]


@dataclass(frozen=True)
class Poll:
    """The idle check: folder still there, HEAD moved, writer lock free, rescan due."""


@dataclass(frozen=True)
class Run:
    """A job a face asked to run on the worker's thread, between the other actions (the
    pass `codeask index` sends the daemon); its outcome or its error goes to `future`."""

    job: Callable[[], Any]
    future: Future[Any]


Action = Update | Full | Reopen | Poll | Run
