"""glibc's heap, told to give big freed blocks back to the system (issue 29).

glibc serves a block of 128 KiB or more from its own mapping and unmaps it at `free`, but after
the first such free it raises that threshold (up to 32 MiB) to save system calls: from then on
the big temporaries of a BM25 build or a model load come from the heap, and what they free stays
in the process. A language server on sphinx 5.1.1 held 635–709 MB at rest that way, 510 MB with
the threshold fixed at 128 KiB (benchmarks/README.md, "Memory"); the same code, the same answers,
search times within noise. A long-running process calls `return_large_frees` once, early, and
`trim_periodically` (two jobs, two names).

Blocks under the threshold still come from the heap, and what a big build, searches or a rescan
free between live blocks stays resident; `give_back_freed` (glibc's `malloc_trim`) returns those
pages: after the BM25 copy's build (a server on sphinx at rest 313 -> 307 MB), and every
TRIM_EVERY_S seconds in the processes that call `trim_periodically` (one trim: 0.8-2.4 ms).
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time

#: mallopt's parameter number of M_MMAP_THRESHOLD (glibc's malloc.h).
M_MMAP_THRESHOLD = -3
#: glibc's own default threshold; fixing it also turns its upward adjustment off.
LARGE_BLOCK = 128 * 1024
#: Seconds between two trims of a long-running process's heap (one took 0.8-2.4 ms in a server
#: on sphinx 5.1.1, and gave back ~22 MB at rest: 298.8 -> 276.9 MB).
TRIM_EVERY_S = 30.0


def return_large_frees(threshold: int = LARGE_BLOCK) -> bool:
    """Serve every block of `threshold` bytes or more from its own mapping, returned to the
    system at `free`. True when the C library took it (glibc); False elsewhere (macOS,
    Windows, a libc without mallopt), where nothing changes."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, threshold))


def trim_periodically(every: float = TRIM_EVERY_S) -> bool:
    """Return the heap's freed pages every `every` seconds from one daemon thread per process
    (`give_back_freed`; a second call keeps the first thread and its period). True when the
    thread runs (glibc); False elsewhere, where there is nothing to trim."""
    if not sys.platform.startswith("linux") or every <= 0:
        return False
    _start_trimming(every)
    return True


_trimmer: threading.Thread | None = None
_trimmer_lock = threading.Lock()


def _start_trimming(every: float) -> None:
    global _trimmer
    with _trimmer_lock:
        if _trimmer is not None:
            return
        _trimmer = threading.Thread(
            target=_trim_forever, args=(every,), name="codeask-heap-trim", daemon=True
        )
        _trimmer.start()


def _trim_forever(every: float) -> None:
    while True:
        time.sleep(every)
        give_back_freed()


def give_back_freed() -> bool:
    """Return the heap's free pages to the system now (glibc's `malloc_trim(0)`): what a big
    build freed in the middle of the heap stays resident otherwise. A few milliseconds; True
    when glibc released something. Elsewhere a no-op (False)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return bool(trim(0))
