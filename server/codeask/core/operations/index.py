"""Index: a folder's index opened as its one writer, refreshed or rebuilt, cancelled between
batches; a running owner asked to rebuild; the team base retried. The indexer does the work."""

from codeask.core.embedding.static import load_static_embedder
from codeask.core.indexer import (
    CancelToken,
    FolderIndex,
    IndexBusy,
    IndexReport,
    IndexStatus,
    RootRefused,
)
from codeask.core.indexer.team_retry import retry_base
from codeask.core.storage.writer_lock import request as request_from_owner

__all__ = [
    "CancelToken",
    "FolderIndex",
    "IndexBusy",
    "IndexReport",
    "IndexStatus",
    "RootRefused",
    "load_static_embedder",
    "request_from_owner",
    "retry_base",
]
