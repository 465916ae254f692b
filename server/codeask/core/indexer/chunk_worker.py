"""`python -m codeask.core.indexer.chunk_worker`: one chunking worker of a large pass
(chunk_pool.py). Reads msgpack frames on stdin, answers on stdout, ends when stdin closes.

A worker that grew past its bound (chunk_pool.RECYCLE_RSS_BYTES) replaces itself between two
frames with a fresh interpreter (`os.execv`: the same process id, the same pipes), handed its
settings on the command line; the pass sees nothing but a smaller process.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import suppress

import msgspec

from codeask.core.indexer.chunk_pool import WORKER_MODULE, WorkerSettings, read_settings, serve

#: Added to the worker's nice value: a pass runs a worker per core, and the editor's requests
#: (hover, search, served by the indexing process) must not wait behind them for a core.
WORKER_NICENESS = 5
#: The argument a recycled worker gets its settings in (hex msgpack).
RESUME = "--resume"


def main() -> None:
    """Ctrl-C is for the indexing process, which cancels the pass and stops its workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # unbuffered: nothing read ahead is lost when this worker starts afresh
    stdin = os.fdopen(sys.stdin.fileno(), "rb", buffering=0, closefd=False)
    if len(sys.argv) == 3 and sys.argv[1] == RESUME:
        settings = msgspec.msgpack.decode(bytes.fromhex(sys.argv[2]), type=WorkerSettings)
    else:
        if hasattr(os, "nice"):  # once: a recycled worker keeps its niceness
            with suppress(OSError):  # not allowed here: the worker keeps its parent's priority
                os.nice(WORKER_NICENESS)
        settings = read_settings(stdin)
    again = serve(stdin, sys.stdout.buffer, settings)
    if again is not None:
        sys.stdout.flush()
        encoded = msgspec.msgpack.encode(again).hex()
        os.execv(sys.executable, [sys.executable, "-P", "-m", WORKER_MODULE, RESUME, encoded])


if __name__ == "__main__":
    main()
