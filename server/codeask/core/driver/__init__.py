"""The one index driver per folder (issue 43): whichever process holds a folder (the daemon's
sessions, or a face in its own process) runs one `FolderWorker` for it, and every face
subscribes to it instead of writing its own loop.

Two threads per folder; requests never wait for them. The worker thread owns the folder's
`FolderIndex` and runs, one at a time: single-file updates (saves, opens, watcher events,
files a HEAD move touched: `changed_between`; debounced and coalesced), the lexical phase of
full passes (`refresh(embed=False)`: the initial index, a reindex, quiet rescans) and a cheap
idle poll (folder still there? HEAD moved? writer lock free? team base back?). A due update
preempts the lexical phase (cancelled between files, resumed after; the engine is
incremental). The embedding backlog (`embed_pending`) runs on a second thread at background
priority, then warms the query model (core/operations/query_model.py).

The modules, one job each:

- `common`: tunables (`POLL_SECONDS`, ...), `serving`; patch tunables there.
- `listener`: what a face gives the driver (`Listener`: progress bars, warnings; `QuietBar`).
- `actions`: the typed units of work (`Update`, `Full`, `Reopen`, `Poll`).
- `schedule`: the queue (debounce, coalescing, priorities) and the lexical cancel token.
- `worker`: `FolderWorker`, the face's handle, the thread loop and the `match` dispatch.
- `indexing`: runs `Update` and `Full`; `poll`: runs `Poll`.
- `slot`: opening, closing and setting aside the folder's index.
- `backlog`: the embedding thread; `reporting`: engine progress → the listener's bar.
- `writer`: the writer lock (follow read-only, take over when free).
- `status`: the fields a face's status shows.
- `shared`: `SharedDrivers`, the process's one registry: every session holding a folder
  subscribes to its one worker (`Subscription`); `fanout`: the listener that passes the
  worker's bars and warnings on to each subscribed session's own.
- `index_op`: `run_pass`, `codeask index` on the folder's one driver (the daemon's `index`
  operation; `passes`: what it answers); `hold`: the drivers the daemon keeps after a pass;
  `keep_current`: the pass and hold the daemon starts after a search.
"""

from codeask.core.driver.common import (
    INDEX_SECTIONS,
    MAX_DELAY_FACTOR,
    MISSING,
    POLL_SECONDS,
    RESCAN_SECONDS,
    SERVER_EMBED_THREADS,
    FullKind,
    serving,
)
from codeask.core.driver.index_op import long_and_unheld, run_pass
from codeask.core.driver.keep_current import KeepCurrent
from codeask.core.driver.listener import Bar, Listener, QuietBar
from codeask.core.driver.passes import PassBusy, PassDone, PassRefused
from codeask.core.driver.shared import SharedDrivers, Subscription, finish
from codeask.core.driver.status import FolderStatus
from codeask.core.driver.worker import FolderWorker

__all__ = [
    "INDEX_SECTIONS",
    "MAX_DELAY_FACTOR",
    "MISSING",
    "POLL_SECONDS",
    "RESCAN_SECONDS",
    "SERVER_EMBED_THREADS",
    "Bar",
    "FolderStatus",
    "FolderWorker",
    "FullKind",
    "KeepCurrent",
    "Listener",
    "PassBusy",
    "PassDone",
    "PassRefused",
    "QuietBar",
    "SharedDrivers",
    "Subscription",
    "finish",
    "long_and_unheld",
    "run_pass",
    "serving",
]
