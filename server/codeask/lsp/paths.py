"""The one path guard: which files a request may read from disk.

A request names a document by URI. The server may use the text the editor itself sent for an
open document (any scheme, any place: the user opened it), but it reads from disk only a
`file:` URI whose real path (symlinks and `..` resolved) lies inside a workspace folder (also
resolved, by `Folders.add`). Everything else, e.g. `file:///etc/shadow`, a `../` escape or an
in-workspace symlink to `/etc/passwd`, yields no content and is never indexed. A disk read also
obeys the folder's discovery rules (ignore files, `index.exclude`, credential file names, binary
and size caps): what the index would skip, a request cannot read either (e.g. a `.env`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import unquote

from pygls.uris import to_fs_path
from pygls.workspace import Workspace

from codeask.config import load_settings
from codeask.core.source.discover import SourceFile, check_file
from codeask.core.source.limits import MAX_DISK_READ, max_chars
from codeask.core.source.safe_read import read_regular_text
from codeask.lsp.folders import Folders

log = logging.getLogger("codeask.lsp")


def uri_path(uri: str) -> Path | None:
    """A file URI as an absolute real path; None for other schemes or unusable URIs."""
    if not uri.startswith("file:") or len(uri) > max_chars("lsp", "uri"):
        return None
    try:
        fs = to_fs_path(uri)
        return Path(fs).resolve() if fs else None
    except (ValueError, OSError):  # NUL in the path, symlink loops, ...
        return None


def workspace_path(folders: Folders, uri: str) -> Path | None:
    """The real path of `uri` when it lies inside a workspace folder; None otherwise."""
    path = uri_path(uri)
    if path is None:
        return None
    if folders.worker_for(path) is None:
        log.debug("%s is outside every workspace folder: not read, not indexed", path)
        return None
    return path


def discovery_allows(folders: Folders, path: Path) -> bool:
    """Whether discovery would index `path`: the index's skip rules bind disk reads too."""
    worker = folders.worker_for(path)
    if worker is None:
        return False
    folder = worker.folder
    settings = folder.settings if folder is not None else load_settings(worker.root)[0]
    rel = path.relative_to(worker.root).as_posix()
    verdict = check_file(worker.root, rel, settings.index)
    if isinstance(verdict, SourceFile):
        return True
    reason = verdict.reason if verdict is not None else "ignored"
    log.info("%s is not read from disk: %s (the index skips it too)", rel, reason)
    return False


def read_inside(path: Path) -> str:
    """A regular file's text ('' when missing, too large or a symlink swapped in since)."""
    return read_regular_text(path, MAX_DISK_READ)


def document_text(workspace: Workspace, folders: Folders, uri: str) -> str | None:
    """What the editor sent for `uri`, else the guarded disk copy; None when neither exists."""
    document = workspace.text_documents.get(unquote(uri))
    if document is not None:
        return str(document.source)
    path = workspace_path(folders, uri)
    if path is None or not discovery_allows(folders, path):
        return None
    return read_inside(path)
