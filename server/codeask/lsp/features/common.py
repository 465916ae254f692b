"""What every feature shares: error mapping, typed custom params, documents and positions."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
from pygls.uris import from_fs_path, to_fs_path

from codeask.config import load_settings
from codeask.core.operations.paths import read_text, refusal
from codeask.core.records import Chunk
from codeask.core.source.languages import suffix_for_language
from codeask.core.source.limits import max_chars
from codeask.lsp.base import CodeaskServer
from codeask.lsp.folders import Folders
from codeask.lsp.messages import InvalidParams, Position, Range, decode_params

log = logging.getLogger("codeask.lsp")

Handler = Callable[..., Awaitable[Any]]


def request(fn: Handler) -> Handler:
    """InvalidParams → -32602 with the reason; anything unexpected → -32603 with a message.

    pygls sends a JsonRpcException raised by a handler as that request's error (its public
    handler path), so the reason reaches the editor without touching pygls internals.
    """

    @functools.wraps(fn)
    async def wrapped(ls: CodeaskServer, *args: Any) -> Any:
        try:
            return await fn(ls, *args)
        except (JsonRpcException, asyncio.CancelledError):
            raise
        except InvalidParams as exc:
            raise JsonRpcInvalidParams(message=str(exc)) from None
        except Exception as exc:
            log.exception("%s failed", fn.__name__)
            raise JsonRpcInternalError(message=f"codeask: {type(exc).__name__}: {exc}") from None

    return wrapped


def custom_request(method: str) -> Callable[[Handler], Handler]:
    """A custom request's handler receives its params decoded into the msgspec type of
    `messages.CUSTOM_PARAMS` (pygls hands custom params over as raw JSON, see server.py)."""

    def decorate(fn: Handler) -> Handler:
        @functools.wraps(fn)
        async def typed(ls: CodeaskServer, raw: Any = None) -> Any:
            return await fn(ls, decode_params(method, raw))

        return request(typed)

    return decorate


# ---- documents --------------------------------------------------------------------------------
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


def doc_text(ls: CodeaskServer, uri: str) -> str | None:
    """What the editor sent for `uri` (any scheme, any place: the user opened it), else the disk
    copy the one path guard allows (core/operations/paths.py); None when neither exists."""
    document = ls.workspace.text_documents.get(unquote(uri))
    if document is not None:
        return str(document.source)
    path = workspace_path(ls.folders, uri)
    worker = ls.folders.worker_for(path) if path is not None else None
    if path is None or worker is None:
        return None
    folder = worker.folder
    settings = folder.settings if folder is not None else load_settings(worker.root)[0]
    why = refusal(worker.root, path, settings.index)
    if why is not None:
        rel = path.relative_to(worker.root).as_posix()
        log.info("%s is not read from disk: %s (the index skips it too)", rel, why)
        return None
    return read_text(path)


def doc_name(ls: CodeaskServer, uri: str, path: Path | None) -> str:
    """The file name the chunker sees (untitled buffers get one from their language)."""
    if path is not None:
        return path.name
    document = ls.workspace.text_documents.get(unquote(uri))
    language = (document.language_id if document is not None else None) or "text"
    return untitled_name(language)


def untitled_name(language_id: str) -> str:
    """A file name for a buffer that has none, so the chunker still picks its grammar: the
    suffix of `language_id` from core/source/languages.py (every chunked language, and editor ids
    like `typescriptreact`); an id no grammar knows keeps itself (`untitled.markdown`)."""
    return f"untitled{suffix_for_language(language_id) or '.' + language_id}"


# ---- paths and positions ----------------------------------------------------------------------
def file_uri(path: Path) -> str:
    """An absolute path as a file URI."""
    return from_fs_path(str(path)) or path.as_uri()


def chunk_range(chunk: Chunk) -> Range:
    """The LSP range of a chunk (0-based lines, end at the end of its last line)."""
    last = chunk.text.rsplit("\n", 1)[-1] if chunk.text else ""
    start = max(0, chunk.start_line - 1)
    end = max(start, chunk.end_line - 1)
    return Range(Position(start, 0), Position(end, len(last)))


def qualified(chunk: Chunk) -> str:
    """`Class.method` or `function`."""
    return f"{chunk.parent}.{chunk.symbol}" if chunk.parent and chunk.symbol else chunk.symbol
