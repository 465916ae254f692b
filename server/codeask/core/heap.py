"""glibc's heap, told to give big freed blocks back to the system (issue 29).

glibc serves a block of 128 KiB or more from its own mapping and unmaps it at `free`, but after
the first such free it raises that threshold (up to 32 MiB) to save system calls: from then on
the big temporaries of a BM25 build or a model load come from the heap, and what they free stays
in the process. A language server on sphinx 5.1.1 held 635–709 MB at rest that way, 510 MB with
the threshold fixed at 128 KiB (benchmarks/README.md, "Memory"); the same code, the same answers,
search times within noise. Call `return_large_frees` once, early, in a long-running process.
"""

from __future__ import annotations

import ctypes
import sys

#: mallopt's parameter number of M_MMAP_THRESHOLD (glibc's malloc.h).
M_MMAP_THRESHOLD = -3
#: glibc's own default threshold; fixing it also turns its upward adjustment off.
LARGE_BLOCK = 128 * 1024


def return_large_frees(threshold: int = LARGE_BLOCK) -> bool:
    """Serve every block of `threshold` bytes or more from its own mapping, returned to the
    system at `free`. True when the C library took it (glibc); False elsewhere (macOS, Windows,
    a libc without mallopt), where nothing changes."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, threshold))
