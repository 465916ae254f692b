"""Work-done progress for background jobs: begin/report/end, cancellable, always ends.

Used from worker threads. The token is created with `window/workDoneProgress/create` only when
the client declared `window.workDoneProgress`; otherwise every call is a no-op, so callers never
branch on client support. Reports are throttled and never go backwards; `end` is sent in
`__exit__` whatever happened inside the block (pylsp's `report_progress` pattern).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import Protocol

from lsprotocol import types

ProgressValue = (
    types.WorkDoneProgressBegin | types.WorkDoneProgressReport | types.WorkDoneProgressEnd
)


class ProgressClient(Protocol):
    """What the server offers a progress session (thread-safe)."""

    def supports_progress(self) -> bool:
        """The client declared `window.workDoneProgress`."""
        ...

    def create_progress(self, token: str) -> bool:
        """Ask the client to create `token`; blocks the calling (non-loop) thread briefly."""
        ...

    def send_progress(self, token: str, value: ProgressValue) -> None:
        """Send one `$/progress` notification."""
        ...

    def on_progress_cancel(self, token: str, callback: Callable[[], None]) -> None:
        """Call `callback` when the editor cancels `token`."""
        ...

    def forget_progress(self, token: str) -> None:
        """Drop the bookkeeping of an ended token."""
        ...


class WorkDone:
    """One progress session; use as a context manager around a background job."""

    def __init__(
        self,
        client: ProgressClient | None,
        title: str,
        on_cancel: Callable[[], None] | None = None,
        *,
        interval: float = 0.25,
    ) -> None:
        self._client = client
        self.title = title
        self._on_cancel = on_cancel
        self._interval = interval
        self._lock = threading.Lock()
        self.token: str | None = None
        self.cancelled = False
        self.final_message = "done"
        self._percent = 0
        self._last = 0.0

    def __enter__(self) -> WorkDone:
        client = self._client
        if client is None or not client.supports_progress():
            return self
        token = f"codeask-{uuid.uuid4().hex[:12]}"
        if not client.create_progress(token):
            return self
        self.token = token
        client.on_progress_cancel(token, self._cancelled)
        client.send_progress(
            token,
            types.WorkDoneProgressBegin(
                title=self.title,
                cancellable=self._on_cancel is not None,
                message="starting",
                percentage=0,
            ),
        )
        return self

    def _cancelled(self) -> None:
        self.cancelled = True
        if self._on_cancel is not None:
            self._on_cancel()

    def report(self, message: str, percent: int | None = None, *, force: bool = False) -> None:
        """Throttled; the percentage never decreases (clients draw a bar from it)."""
        if self.token is None or self._client is None:
            return
        with self._lock:
            now = time.monotonic()
            if not force and now - self._last < self._interval:
                return
            self._last = now
            if percent is not None:
                self._percent = max(self._percent, min(100, int(percent)))
            value = types.WorkDoneProgressReport(message=message, percentage=self._percent)
        self._client.send_progress(self.token, value)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.token is None or self._client is None:
            return
        if self.cancelled:
            message = "cancelled"
        elif exc is not None:
            message = f"failed: {exc}"
        else:
            message = self.final_message
        self._client.send_progress(self.token, types.WorkDoneProgressEnd(message=message))
        self._client.forget_progress(self.token)
