"""Loading a folder's MiniLM query path, the one way for every face (issue 43).

Loading the model and building its query path (`prepare_queries`: the int8 copy is derived the
first time on a machine) takes ~1-2 s, ~5 s more the first time: no search waits for it. The
language server's backlog and the MCP driver build it when their backlog is done (`load`, in
their own background thread); a search that finds it missing starts it (`start`: one background
thread per folder at a time, at background priority). What a face does meanwhile stays its own
policy (docs/architecture.md, "Operations"): lexical, or the static tier.
"""

from __future__ import annotations

import logging
import threading
import weakref

from codeask.core.indexer import FolderIndex
from codeask.core.runtime import background

log = logging.getLogger(__name__)

_lock = threading.Lock()
_loading: weakref.WeakKeyDictionary[FolderIndex, threading.Thread] = weakref.WeakKeyDictionary()
_built: weakref.WeakSet[FolderIndex] = weakref.WeakSet()


def load(folder: FolderIndex) -> None:
    """Load the model and build its query path now, in the calling thread (raises what the
    load raises); afterwards `built(folder)` is true."""
    folder.embedder.prepare_queries()
    with _lock:
        _built.add(folder)


def built(folder: FolderIndex) -> bool:
    """Whether `load` finished for this folder (in any thread)."""
    with _lock:
        return folder in _built


def loading(folder: FolderIndex) -> bool:
    """Whether a background load of this folder runs now."""
    with _lock:
        thread = _loading.get(folder)
        return thread is not None and thread.is_alive()


def start(folder: FolderIndex) -> threading.Thread | None:
    """Load in a background thread unless one runs or the load is done (a failure is logged;
    the next `start` tries again). The thread started, None when none was."""
    with _lock:
        thread = _loading.get(folder)
        if folder in _built or (thread is not None and thread.is_alive()):
            return None
        thread = background.start(_load_logged, folder, name=f"codeask-model-{folder.root.name}")
        _loading[folder] = thread
        return thread


def _load_logged(folder: FolderIndex) -> None:
    try:
        load(folder)
    except Exception:
        log.exception("loading the query model of %s failed", folder.root)
