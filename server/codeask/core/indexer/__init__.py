"""The one orchestrator of indexing: discover → chunk → (lexical at once) → embed → store.

Incremental by construction: size+mtime, then the content hash, decide whether a file changed;
chunk vectors come from the content-hash cache when the text was seen before. Lexical search
works as soon as a file is chunked; dense results fill in as embeddings land. Long runs report
progress, can be cancelled between batches, and checkpoint a consistent snapshot.

One module per job; callers import from here:

- `folder`: `FolderIndex`, the façade that owns a folder's state and locks.
- `workspace`: `Workspace`, the folders of one editor window.
- `shared`: `SharedIndexes`, one open index per folder and settings for every session of the
  daemon.
- `location`: where an index lives, which roots are refused, who may write (`Mode`).
- `team`: the team's published revision under the local index (`TeamStorage`); the storage and
  the embedding cache themselves come from the storage factory, core/storage/factory.py.
- `full_pass` and `files`: the full pass, and the lexical pass over files within it.
- `updates`: single-file updates (editor saves, watcher events).
- `vectors`: the static tier and the MiniLM backlog.
- `history`: git history chunks and the uncommitted files.
- `run`: cancel tokens, progress events and reports; `status`: what status bars show.

The names below load with their module on first use (PEP 562): a chunking worker
(`chunk_worker`, a process per core in a large pass) imports this package before its own
module, and loading `folder` and everything under it cost each worker ~0.1 s of its start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from codeask.core.indexer.folder import FolderIndex
    from codeask.core.indexer.location import (
        ALLOW_BROAD_ROOT_ENV,
        IndexBusy,
        Mode,
        OpenOptions,
        RootRefused,
        check_root,
        has_index,
        index_dir_for,
    )
    from codeask.core.indexer.run import (
        Cancelled,
        CancelToken,
        IndexReport,
        Progress,
        ProgressFn,
    )
    from codeask.core.indexer.shared import SharedIndexes
    from codeask.core.indexer.status import IndexStatus
    from codeask.core.indexer.vectors import EMBED_STEP, LOADING, STATIC_STEP
    from codeask.core.indexer.workspace import Workspace

#: Each public name and the module (of this package) that defines it.
_HOMES = {
    "FolderIndex": "folder",
    "ALLOW_BROAD_ROOT_ENV": "location",
    "IndexBusy": "location",
    "Mode": "location",
    "OpenOptions": "location",
    "RootRefused": "location",
    "check_root": "location",
    "has_index": "location",
    "index_dir_for": "location",
    "Cancelled": "run",
    "CancelToken": "run",
    "IndexReport": "run",
    "Progress": "run",
    "ProgressFn": "run",
    "SharedIndexes": "shared",
    "IndexStatus": "status",
    "EMBED_STEP": "vectors",
    "LOADING": "vectors",
    "STATIC_STEP": "vectors",
    "Workspace": "workspace",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # looked up once
    return value


__all__ = [
    "ALLOW_BROAD_ROOT_ENV",
    "EMBED_STEP",
    "LOADING",
    "STATIC_STEP",
    "CancelToken",
    "Cancelled",
    "FolderIndex",
    "IndexBusy",
    "IndexReport",
    "IndexStatus",
    "Mode",
    "OpenOptions",
    "Progress",
    "ProgressFn",
    "RootRefused",
    "SharedIndexes",
    "Workspace",
    "check_root",
    "has_index",
    "index_dir_for",
    "status",
    "team_retry",
]
