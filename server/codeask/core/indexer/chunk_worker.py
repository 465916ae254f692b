"""`python -m codeask.core.indexer.chunk_worker`: one chunking worker of a large pass
(chunk_pool.py). Reads msgpack frames on stdin, answers on stdout, ends when stdin closes."""

from __future__ import annotations

import signal
import sys

from codeask.core.indexer.chunk_pool import serve


def main() -> None:
    """Ctrl-C is for the indexing process, which cancels the pass and stops its workers."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    main()
