"""`CodeaskServer`: the server's state and the plumbing every feature uses.

Threads: the asyncio loop only parses, dispatches and sends; request work runs on a small
thread pool (`in_thread`), indexing on worker threads per folder (folders.py), blame on its
own thread (blame.py). Anything a thread sends to the client goes through `call_soon`.

Features (features/) import this module; it imports none of them (server.py wires them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from cattrs import Converter
from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCRequestMessage, default_converter

from codeask import __version__
from codeask.config import Settings
from codeask.core.driver import SharedDrivers
from codeask.lsp.blame import BlameCache
from codeask.lsp.folders import Folders
from codeask.lsp.logs import ClientLogHandler
from codeask.lsp.progress import ProgressValue, WorkDone
from codeask.lsp.settings import EditorSettings

log = logging.getLogger("codeask.lsp")

#: How long a request to the client (configuration, progress token, registration) may take.
CLIENT_TIMEOUT = 5.0
T = TypeVar("T")


def converter() -> Converter:
    """pygls' converter, but custom requests keep their params as plain JSON (pygls' default
    turns them into namedtuples); a request without params gets None."""
    base = default_converter()

    def raw_params(obj: dict[str, Any], cls: type[JsonRPCRequestMessage]) -> Any:
        return cls(
            id=obj["id"], method=obj["method"], jsonrpc=obj["jsonrpc"], params=obj.get("params")
        )

    base.register_structure_hook(JsonRPCRequestMessage, raw_params)
    return base


class CodeaskServer(LanguageServer):
    """Server state: folders and their workers, settings, thread pools, client plumbing."""

    def __init__(self, drivers: SharedDrivers | None = None) -> None:
        super().__init__(
            "codeask",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            converter_factory=converter,
        )
        self.loop: asyncio.AbstractEventLoop | None = None
        self.folders = Folders(self, watched=lambda: self.watcher_registered, drivers=drivers)
        self.requests = ThreadPoolExecutor(4, thread_name_prefix="codeask-request")
        self.blame = BlameCache()
        self.init_settings = EditorSettings()
        self.pulled = EditorSettings()
        self.settings = Settings()
        self.initialized_seen = False
        self.watcher_registered = False
        self.shutdown_requested = False
        self._shown: set[str] = set()
        self.log_handler = ClientLogHandler(lambda p: self.call_soon(self.window_log_message, p))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Requests are answered already; a malformed notification is logged, not shown."""
        if source is FeatureRequestError:
            return
        if isinstance(error, JsonRpcInvalidParams | JsonRpcInternalError) and (
            source is JsonRpcException
        ):
            log.warning("ignored a malformed message (%s)", error)
            return
        log.error("server error: %s", error)
        if self.loop is not None and self.initialized_seen:
            params = types.ShowMessageParams(
                type=types.MessageType.Error, message=f"codeask: {error}"
            )
            self.window_show_message(params)

    # ---- thread-safe plumbing -----------------------------------------------------------
    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn` on the event loop (all sends to the client go through here)."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(fn, *args)

    def notify(self, method: str, params: Any) -> None:
        """Send a notification from any thread."""
        self.call_soon(self.protocol.notify, method, params)

    def warn(self, message: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        """window/showMessage once per distinct text (and the log)."""
        if message in self._shown:
            return
        self._shown.add(message)
        log.warning("%s", message)
        self.call_soon(
            self.window_show_message, types.ShowMessageParams(type=kind, message=message)
        )

    def forget_warnings(self) -> None:
        """New settings: a warning shown before may be shown again."""
        self._shown.clear()

    async def in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """Run request work off the loop; a cancelled request stops waiting at once."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.requests, fn, *args)

    def capability(self, field: str, default: Any = None) -> Any:
        """A client capability by dotted path (snake_case), `default` when absent."""
        try:
            return get_capability(self.client_capabilities, field, default)
        except Exception:
            return default

    def editor_settings(self) -> EditorSettings:
        """initializationOptions with the pulled/pushed configuration on top."""
        return self.init_settings.layered(self.pulled)

    # ---- progress (folders.Host, progress.ProgressClient) --------------------------------
    def work_done(self, title: str, on_cancel: Callable[[], None] | None) -> WorkDone:
        """A `$/progress` session for a worker thread."""
        return WorkDone(self, title, on_cancel)

    def supports_progress(self) -> bool:
        """The client declared `window.workDoneProgress`."""
        return bool(self.capability("window.work_done_progress", False)) and self.loop is not None

    def create_progress(self, token: str) -> bool:
        """`window/workDoneProgress/create`, awaited from a worker thread."""
        if self.loop is None:
            return False
        future = asyncio.run_coroutine_threadsafe(
            self.work_done_progress.create_async(token), self.loop
        )
        try:
            future.result(CLIENT_TIMEOUT)
            return True
        except Exception as exc:
            log.info("client refused progress token (%s); indexing without progress", exc)
            return False

    def send_progress(self, token: str, value: ProgressValue) -> None:
        """One `$/progress` notification."""
        self.notify(types.PROGRESS, types.ProgressParams(token=token, value=value))

    def on_progress_cancel(self, token: str, callback: Callable[[], None]) -> None:
        """The editor's cancel button → `callback`."""
        future = self.work_done_progress.tokens.get(token)
        if future is not None:
            future.add_done_callback(lambda f: callback() if f.cancelled() else None)

    def forget_progress(self, token: str) -> None:
        """Drop an ended token."""
        self.call_soon(self.work_done_progress.tokens.pop, token, None)
