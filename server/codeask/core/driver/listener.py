"""What a face gives a folder's driver: where progress and warnings go (the listener).

The driver never knows which face holds it: the language server maps a `Bar` to `$/progress`
and `warn` to `window/showMessage`; MCP keeps the last event for `index_status`; a quiet pass
(a rescan) reports to a `QuietBar`, which shows nothing. State (`FolderStatus`) is read by the
faces from the driver itself.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol


class Bar(Protocol):
    """One progress session around a pass or a backlog run; always ended with `__exit__`."""

    final_message: str

    def __enter__(self) -> Any: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Any: ...

    def report(self, message: str, percent: int | None = None) -> None:
        """Progress text and percent (never going backwards is the bar's own job)."""
        ...


class QuietBar:
    """A bar that shows nothing: quiet rescans, and faces without a progress view."""

    def __init__(self, title: str = "") -> None:
        self.title = title
        self.final_message = "done"

    def __enter__(self) -> QuietBar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def report(self, message: str, percent: int | None = None) -> None:
        return None


class Listener(Protocol):
    """What a driver needs from the face that holds it (all thread-safe)."""

    def work_done(self, title: str, on_cancel: Callable[[], None] | None) -> Bar:
        """A progress session for a visible pass (`on_cancel`: the user stopped it)."""
        ...

    def warn(self, message: str) -> None:
        """Tell the user (once per distinct text is the face's choice)."""
        ...
