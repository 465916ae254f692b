"""Background threads yield the CPU to the editor's requests.

On 2 cores an index build, embedding and an in-memory table build all want both cores while a
hover must answer in < 100 ms. Linux schedules each thread on its own, so a background thread
lowers its own priority (nice 10): requests then win every contended core. Elsewhere
`setpriority` would lower the whole process, so this does nothing there.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

BACKGROUND_NICE = 10


def lower_this_thread() -> None:
    """Nice the calling thread (Linux only; a failure only costs speed)."""
    if sys.platform != "linux":
        return
    try:
        tid = threading.get_native_id()
        current = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, max(current, BACKGROUND_NICE))
    except OSError as exc:
        log.debug("could not lower a background thread's priority: %s", exc)


def start(target: Callable[..., Any], *args: Any, name: str) -> threading.Thread:
    """A daemon thread running `target(*args)` at background priority."""

    def run() -> None:
        lower_this_thread()
        target(*args)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread
