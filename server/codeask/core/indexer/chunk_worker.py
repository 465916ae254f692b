"""`python -m codeask.core.indexer.chunk_worker`: one chunking worker of a large pass
(chunk_pool.py). Reads msgpack frames on stdin, answers on stdout, ends when stdin closes."""

from __future__ import annotations

import os
import signal
import sys
from contextlib import suppress

from codeask.core.indexer.chunk_pool import serve

#: Added to the worker's nice value: a pass runs a worker per core, and the editor's requests
#: (hover, search, served by the indexing process) must not wait behind them for a core.
WORKER_NICENESS = 5


def main() -> None:
    """Ctrl-C is for the indexing process, which cancels the pass and stops its workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(os, "nice"):
        with suppress(OSError):  # not allowed here: the worker keeps its parent's priority
            os.nice(WORKER_NICENESS)
    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
