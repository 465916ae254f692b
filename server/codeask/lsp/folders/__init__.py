"""Background indexing: two threads per workspace folder; requests never wait for them.

The worker thread owns the folder's `FolderIndex` and runs, one at a time: single-file
updates (editor saves and opens, watcher events, files a HEAD change touched; debounced and
coalesced), the lexical phase of full passes (`refresh(embed=False)`: the initial index,
`codeask.reindex`, quiet rescans) and a cheap idle poll (folder still there? HEAD moved?).
A due update preempts the lexical phase (cancelled between files, resumed after; the engine
is incremental). The embedding backlog (`embed_pending`) runs on a second thread, so a saved
file is chunked, searchable and embedded at once instead of after the backlog.

The modules, one job each:

- `common`: tunables (`POLL_SECONDS`, ...), `Host`, `serving`; patch tunables there.
- `actions`: the typed units of work (`Update`, `Full`, `Reopen`, `Poll`).
- `schedule`: the queue (debounce, coalescing, priorities) and the lexical cancel token.
- `worker`: `FolderWorker`, the server's handle, the thread loop and the `match` dispatch.
- `indexing`: runs `Update` and `Full`; `poll`: runs `Poll`.
- `slot`: opening, closing and setting aside the folder's index.
- `backlog`: the embedding thread; `reporting`: engine progress → `$/progress`.
- `writer`: the writer lock (follow read-only, take over when free).
- `status`: the fields `indexState` shows; `collection`: `Folders`, all workers.
"""

from codeask.lsp.folders.collection import Folders
from codeask.lsp.folders.common import (
    INDEX_SECTIONS,
    MAX_DELAY_FACTOR,
    MISSING,
    POLL_SECONDS,
    RESCAN_SECONDS,
    SERVER_EMBED_THREADS,
    FullKind,
    Host,
    serving,
)
from codeask.lsp.folders.worker import FolderWorker

__all__ = [
    "INDEX_SECTIONS",
    "MAX_DELAY_FACTOR",
    "MISSING",
    "POLL_SECONDS",
    "RESCAN_SECONDS",
    "SERVER_EMBED_THREADS",
    "FolderWorker",
    "Folders",
    "FullKind",
    "Host",
    "serving",
]
