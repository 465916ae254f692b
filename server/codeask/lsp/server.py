"""The pygls 2 language server: standard features, codeask's custom messages, `run()`.

Threads: the asyncio loop only parses, dispatches and sends; request work runs on a small
thread pool (`in_thread`), indexing on one worker thread per folder (folders.py), blame on its
own thread. Anything a thread sends to the client goes through `call_soon` onto the loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, TypeVar, cast
from urllib.parse import unquote

import attrs
import cattrs
from lsprotocol import types
from pygls.capabilities import get_capability
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCRequestMessage

from codeask import __version__
from codeask.config import Settings, build_settings, read_env
from codeask.core.git.blame import blame_commits
from codeask.core.git.commits import BlameInfo
from codeask.lsp import handlers
from codeask.lsp.features import health
from codeask.lsp.folders import Folders
from codeask.lsp.framing import FramedStdin, Framer, LockedWriter
from codeask.lsp.limits import MAX_CHARS
from codeask.lsp.messages import (
    ANSWER_DELTA,
    ASK_CODE,
    CMD_CANCEL,
    CMD_REINDEX,
    CMD_RELATED,
    CMD_SEARCH,
    CUSTOM_PARAMS,
    INDEX_STATUS,
    SEMANTIC_SEARCH,
    AnswerDelta,
    AskCodeParams,
    IndexStatusParams,
    InvalidParams,
    SemanticSearchParams,
    decode_params,
    to_json,
)
from codeask.lsp.paths import document_text, workspace_path
from codeask.lsp.progress import ProgressValue, WorkDone
from codeask.lsp.settings import SECTION, EditorSettings
from codeask.lsp.window import window

log = logging.getLogger("codeask.lsp")

#: Hover must answer in < 100 ms (p95): the related-code lookup gets HOVER_BUDGET; a blame not
#: cached yet gets BLAME_WAIT more (it is cached when it lands, for the next hover), never
#: past HOVER_TOTAL.
HOVER_BUDGET = 0.075
BLAME_WAIT = 0.025
HOVER_TOTAL = 0.090
#: A client that never sends `initialized` still gets its folders indexed after this long.
INITIALIZED_GRACE = 2.0
CLIENT_TIMEOUT = 5.0
BLAME_CACHE = 4096
BLAME_QUEUE = 8
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
LEVELS["error"] = logging.ERROR

T = TypeVar("T")
#: languageId → file extension, so an untitled buffer still gets its grammar.
EXTENSIONS = {"python": "py", "javascript": "js", "typescript": "ts", "rust": "rs", "ruby": "rb"}


# ---- protocol: typed custom params, InvalidParams with a reason, nothing before initialize --
@attrs.define
class _Rejected:
    """A request whose params did not validate: answered with InvalidParams, never dispatched."""

    id: int | str
    method: str
    reason: str


def _cattrs_reason(method: str, exc: BaseException) -> str:
    cause = exc.__cause__ or exc
    if isinstance(cause, cattrs.ClassValidationError):
        details = "; ".join(e.replace("@ .", "at ") for e in cattrs.transform_error(cause, path=""))
        return f"{method}: {details}"
    return f"{method}: params do not match the LSP type ({cause})"


class CodeaskProtocol(LanguageServerProtocol):
    """pygls' LSP protocol with codeask's message typing and the LSP lifecycle rules."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen_initialize = False

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Custom requests get msgspec-typed params; bad params become `_Rejected`."""
        if "jsonrpc" not in data:
            return data
        method = data.get("method")
        is_request = "id" in data and isinstance(method, str)
        if is_request and method in CUSTOM_PARAMS:
            try:
                params = decode_params(method, data.get("params"))
            except InvalidParams as exc:
                return _Rejected(data["id"], method, str(exc))
            return JsonRPCRequestMessage(
                id=data["id"], method=method, jsonrpc=data["jsonrpc"], params=params
            )
        try:
            return super().structure_message(data)
        except (JsonRpcInvalidParams, JsonRpcInternalError) as exc:
            if is_request:
                return _Rejected(data["id"], str(method), _cattrs_reason(str(method), exc))
            raise

    def handle_message(self, message: Any) -> None:
        """Requests before `initialize` get ServerNotInitialized; a second one InvalidRequest."""
        if isinstance(message, _Rejected):
            log.warning("rejected %s: %s", message.method, message.reason)
            invalid = JsonRpcInvalidParams(message=message.reason)
            self._send_response(message.id, error=invalid.to_response_error())
            return
        method = getattr(message, "method", None)
        is_request = method is not None and hasattr(message, "id")
        if method == types.INITIALIZE and self.seen_initialize:
            again = JsonRpcInvalidRequest(message="initialize: the server is already initialized")
            self._send_response(message.id, error=again.to_response_error())
            return
        if method == types.INITIALIZE:
            self.seen_initialize = True
        elif method is not None and method != types.EXIT and not self.seen_initialize:
            if is_request:
                early = JsonRpcServerNotInitialized(
                    message=f"{method}: the server is not initialized (send initialize first)"
                )
                self._send_response(message.id, error=early.to_response_error())
            return
        super().handle_message(message)


# ---- logging: stderr (root handler) + window/logMessage -----------------------------------
class ClientLogHandler(logging.Handler):
    """Forwards `codeask` log records to the editor as window/logMessage."""

    TYPES: ClassVar[dict[int, types.MessageType]] = {
        logging.ERROR: types.MessageType.Error,
        logging.WARNING: types.MessageType.Warning,
        logging.INFO: types.MessageType.Info,
    }

    def __init__(self, server: CodeaskServer) -> None:
        super().__init__()
        self.server = server
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        """Never raises; dropped until the client can receive notifications."""
        if self.server.loop is None:
            return
        try:
            kind = self.TYPES.get(record.levelno, types.MessageType.Log)
            if record.levelno > logging.ERROR:
                kind = types.MessageType.Error
            params = types.LogMessageParams(type=kind, message=self.format(record))
            self.server.call_soon(self.server.window_log_message, params)
        except Exception:
            self.handleError(record)


# ---- the server ---------------------------------------------------------------------------
class CodeaskServer(LanguageServer):
    """Server state: folders and their workers, settings, thread pools, client plumbing."""

    def __init__(self) -> None:
        super().__init__(
            "codeask",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=CodeaskProtocol,
        )
        self.loop: asyncio.AbstractEventLoop | None = None
        self.folders = Folders(self, watched=lambda: self.watcher_registered)
        self.requests = ThreadPoolExecutor(4, thread_name_prefix="codeask-request")
        self.blame_pool = ThreadPoolExecutor(1, thread_name_prefix="codeask-blame")
        self.init_settings = EditorSettings()
        self.pulled = EditorSettings()
        self.settings = Settings()
        self.initialized_seen = False
        self.watcher_registered = False
        self.shutdown_requested = False
        self.tcp = False
        self._shown: set[str] = set()
        self._blame: dict[tuple[Any, ...], Future[BlameInfo | None]] = {}
        self.log_handler = ClientLogHandler(self)

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

    # ---- settings ----------------------------------------------------------------------
    def editor_settings(self) -> EditorSettings:
        """initializationOptions with the pulled/pushed configuration on top."""
        return self.init_settings.layered(self.pulled)

    def apply_settings(self) -> None:
        """Global settings (log level, debounce) and every folder's; warnings are shown."""
        editor = self.editor_settings()
        self.settings, warnings = build_settings(editor.global_, read_env())
        for warning in warnings:
            self.warn(f"codeask: {warning}")
        set_log_level(self, self.settings.server.log_level)
        for root, worker in list(self.folders.workers.items()):
            for warning in worker.reconfigure(editor.for_folder(root)):
                self.warn(f"codeask: {warning}")

    async def fetch_configuration(self) -> EditorSettings | None:
        """Pull `codeask` settings (global + per folder) when the client supports it."""
        if not self.capability("workspace.configuration", False):
            return None
        roots = list(self.folders.workers)
        items = [types.ConfigurationItem(section=SECTION)] + [
            types.ConfigurationItem(scope_uri=handlers.file_uri(root), section=SECTION)
            for root in roots
        ]
        try:
            answer = await asyncio.wait_for(
                self.workspace_configuration_async(types.ConfigurationParams(items=items)),
                CLIENT_TIMEOUT,
            )
        except Exception as exc:
            log.info("workspace/configuration failed (%s); keeping current settings", exc)
            return None
        answer = list(answer or [])
        pulled = EditorSettings.parse(answer[0] if answer else None, "workspace/configuration")
        for root, value in zip(roots, answer[1:], strict=False):
            scoped = EditorSettings.parse(value, f"workspace/configuration ({root.name})")
            pulled.warnings += scoped.warnings
            if scoped.global_:
                pulled.scoped[root] = scoped.global_
        for warning in pulled.warnings:
            self.warn(f"codeask: {warning}")
        return pulled

    def debounce(self, root: Path | None = None) -> float:
        """Quiet time before a saved file is reindexed (per folder when known)."""
        worker = self.folders.workers.get(root) if root else None
        settings = worker.folder.settings if worker and worker.folder else self.settings
        return max(0, settings.server.debounce_ms) / 1000

    # ---- file watching --------------------------------------------------------------------
    async def register_watcher(self) -> None:
        """Watch `**/*` through the client when it supports dynamic registration."""
        if not self.capability("workspace.did_change_watched_files.dynamic_registration", False):
            log.info("client cannot watch files for us; HEAD polling and rescans cover it")
            return
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
        )
        registration = types.Registration(
            id="codeask-watch",
            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=options,
        )
        try:
            await asyncio.wait_for(
                self.client_register_capability_async(
                    types.RegistrationParams(registrations=[registration])
                ),
                CLIENT_TIMEOUT,
            )
            self.watcher_registered = True
            log.info("registered a file watcher (**/*) with the client")
        except Exception as exc:
            log.info("file watcher registration failed (%s); rescanning periodically", exc)

    def schedule_paths(self, paths: list[Path]) -> None:
        """Saved, opened or changed files → their folder's worker (debounced, coalesced)."""
        by_worker: dict[Path, list[str]] = {}
        for path in paths:
            worker = self.folders.worker_for(path)
            if worker is None:
                log.debug("%s is outside every workspace folder: served read-only", path)
                continue
            if path == worker.root:
                continue  # the folder itself: the idle poll notices if it went away
            rel = path.relative_to(worker.root).as_posix()
            index_dir = worker.folder.folder if worker.folder else worker.root / ".codeask"
            if rel.split("/")[0] == ".git" or path == index_dir or index_dir in path.parents:
                continue  # git internals (HEAD is polled) and our own index files
            by_worker.setdefault(worker.root, []).append(rel)
        for root, rels in by_worker.items():
            self.folders.workers[root].schedule(rels, self.debounce(root))

    # ---- blame, cached, never over the hover budget ------------------------------------------
    async def blame_for(self, plan: handlers.HoverPlan, budget: float) -> BlameInfo | None:
        """The last commit of the hovered chunk, if known within `budget` seconds."""
        folder, rel = plan.folder, plan.rel
        worker = self.folders.worker_for(folder.root) if folder is not None else None
        if folder is None or rel is None or worker is None or not worker.head:
            return None
        record = folder.store.files.get(rel)
        sha = record.sha256 if record else ""
        key = (folder.root, rel, plan.chunk.start_line, plan.chunk.end_line, worker.head, sha)
        entry = self._blame.get(key)
        if entry is None:
            if sum(1 for queued in self._blame.values() if not queued.done()) >= BLAME_QUEUE:
                return None  # blame is slow here (big history): do not pile work up
            if len(self._blame) >= BLAME_CACHE:
                for old in list(self._blame)[: BLAME_CACHE // 4]:
                    self._blame.pop(old, None)
            entry = self.blame_pool.submit(_last_commit, folder.root, rel, *key[2:4])
            self._blame[key] = entry
        if not entry.done():
            if budget <= 0:
                return None
            try:
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(entry)), budget)
            except TimeoutError:
                return None
        try:
            return entry.result()
        except Exception:
            return None


def _last_commit(root: Path, rel: str, start: int, end: int) -> BlameInfo | None:
    commits = blame_commits(root, rel, start, end)
    return commits[0] if commits else None


def set_log_level(server: CodeaskServer, level: str) -> None:
    """stderr and window/logMessage follow `server.logLevel`."""
    logging.getLogger("codeask").setLevel(LEVELS.get(level, logging.INFO))


# ---- request wrappers: every failure is a JSON-RPC error with a message -----------------
Handler = Callable[..., Awaitable[Any]]


def request(fn: Handler) -> Handler:
    """InvalidParams → -32602 with the reason; anything unexpected → -32603 with a message."""

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


def _doc_text(ls: CodeaskServer, uri: str) -> str | None:
    """Editor-sent text, or a disk read inside a workspace folder (paths.py); None if neither."""
    return document_text(ls.workspace, ls.folders, uri)


def _doc_name(ls: CodeaskServer, uri: str, path: Path | None) -> str:
    if path is not None:
        return path.name
    document = ls.workspace.text_documents.get(unquote(uri))
    language = (document.language_id if document is not None else None) or "text"
    return f"untitled.{EXTENSIONS.get(language, language)}"


def _plan_hover(
    ls: CodeaskServer, uri: str, path: Path | None, line: int, character: int = 0
) -> Any:
    """Off the loop (the text may be read from disk); a huge document is seen through a
    bounded window around the cursor (window.py)."""
    text, name = _doc_text(ls, uri) or "", _doc_name(ls, uri, path)
    return handlers.plan_hover(ls.folders, path, name, window(text, line, character))


# ---- lifecycle ----------------------------------------------------------------------------
def on_initialize(ls: CodeaskServer, params: types.InitializeParams) -> None:
    """Settings from initializationOptions; one worker (index) per workspace folder."""
    ls.loop = asyncio.get_running_loop()
    ls.init_settings = EditorSettings.parse(params.initialization_options, "initializationOptions")
    editor = ls.editor_settings()
    ls.settings, warnings = build_settings(editor.global_, read_env())
    set_log_level(ls, ls.settings.server.log_level)
    for warning in ls.init_settings.warnings + warnings:
        ls.call_soon(ls.warn, f"codeask: {warning}")
    roots: list[Path] = []
    for folder in params.workspace_folders or []:
        path = handlers.uri_path(folder.uri)
        if path is not None:
            roots.append(path)
    if not roots and (params.root_uri or params.root_path):
        path = (
            handlers.uri_path(params.root_uri) if params.root_uri else Path(params.root_path or "")
        )
        if path is not None:
            roots.append(path.resolve())
    for root in roots:
        ls.folders.add(root, editor.for_folder(root.resolve()))
    ls.loop.call_later(INITIALIZED_GRACE, _initialized_fallback, ls)


def _initialized_fallback(ls: CodeaskServer) -> None:
    if not ls.folders.indexing_started and not ls.shutdown_requested:
        log.warning("no `initialized` from the client; indexing anyway")
        ls.folders.start_indexing()


async def on_initialized(ls: CodeaskServer, params: types.InitializedParams) -> None:
    """Pull configuration, register the file watcher, then start indexing."""
    ls.initialized_seen = True
    pulled = await ls.fetch_configuration()
    if pulled is not None:
        ls.pulled = pulled
        ls.apply_settings()
    await ls.register_watcher()
    if not ls.folders.indexing_started:
        ls.folders.start_indexing()


def on_exit(ls: CodeaskServer, params: None) -> None:
    """Over TCP pygls keeps serving after `exit`; close the listener so `serve` returns."""
    if ls.tcp:
        ls.shutdown()


def on_shutdown(ls: CodeaskServer, params: None) -> None:
    """Stop the workers (each within one file or one batch) and save the indexes."""
    ls.shutdown_requested = True
    ls.folders.stop()


async def on_did_change_configuration(
    ls: CodeaskServer, params: types.DidChangeConfigurationParams
) -> None:
    """Pushed settings, then (when supported) the pulled ones on top."""
    ls._shown.clear()
    pushed = EditorSettings.parse(params.settings, "didChangeConfiguration")
    for warning in pushed.warnings:
        ls.warn(f"codeask: {warning}")
    pulled = await ls.fetch_configuration()
    ls.pulled = pushed.layered(pulled) if pulled is not None else pushed
    ls.apply_settings()


def on_did_change_folders(ls: CodeaskServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    """Folders added get an index (and a first pass); removed ones are saved and closed."""
    editor = ls.editor_settings()
    for folder in params.event.removed:
        path = handlers.uri_path(folder.uri)
        if path is not None:
            ls.folders.remove(path)
    for folder in params.event.added:
        path = handlers.uri_path(folder.uri)
        if path is not None:
            ls.folders.add(path, editor.for_folder(path))


# ---- documents and files ------------------------------------------------------------------
def on_did_open(ls: CodeaskServer, params: types.DidOpenTextDocumentParams) -> None:
    """An opened file is re-checked and its chunks embedded first (inside a folder only)."""
    path = workspace_path(ls.folders, params.text_document.uri)
    if path is not None:
        ls.schedule_paths([path])


def on_did_save(ls: CodeaskServer, params: types.DidSaveTextDocumentParams) -> None:
    """A saved file is reindexed after `server.debounceMs` of quiet (inside a folder only)."""
    path = workspace_path(ls.folders, params.text_document.uri)
    if path is not None:
        ls.schedule_paths([path])


def on_watched_files(ls: CodeaskServer, params: types.DidChangeWatchedFilesParams) -> None:
    """Edits outside the editor, creates, deletes, renames (delete + create)."""
    paths = [workspace_path(ls.folders, change.uri) for change in params.changes]
    ls.schedule_paths([p for p in paths if p is not None])


# ---- features -------------------------------------------------------------------------------
@request
async def on_hover(ls: CodeaskServer, params: types.HoverParams) -> types.Hover | None:
    """Related code at the cursor, under a 100 ms budget; null when nothing is ready."""
    started = time.monotonic()
    uri = params.text_document.uri
    path = workspace_path(ls.folders, uri)
    worker = ls.folders.worker_for(path) if path is not None else None
    settings = worker.folder.settings if worker and worker.folder else ls.settings
    if not settings.server.hover or not ls.folders.ready():
        return None
    try:
        plan = await asyncio.wait_for(
            ls.in_thread(
                _plan_hover, ls, uri, path, params.position.line, params.position.character
            ),
            HOVER_BUDGET,
        )
    except TimeoutError:
        log.debug("hover: related code not ready within %.0f ms", 1000 * HOVER_BUDGET)
        return None
    if plan is None:
        return None
    wait = min(BLAME_WAIT, HOVER_TOTAL - (time.monotonic() - started))
    blame = await ls.blame_for(plan, wait)
    formats = ls.capability("text_document.hover.content_format", None) or []
    kind = (
        types.MarkupKind.Markdown
        if not formats or types.MarkupKind.Markdown in formats
        else types.MarkupKind.PlainText
    )
    value = handlers.hover_markdown(plan, blame)
    return types.Hover(contents=types.MarkupContent(kind=kind, value=value))


@request
async def on_code_lens(ls: CodeaskServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    """`N related` lenses (off unless `server.codeLens`)."""
    uri = params.text_document.uri
    path = workspace_path(ls.folders, uri)
    return await ls.in_thread(handlers.code_lenses, ls.folders, path, uri)


@request
async def on_workspace_symbol(
    ls: CodeaskServer, params: types.WorkspaceSymbolParams
) -> list[types.SymbolInformation]:
    """Symbols from the chunk index."""
    return await ls.in_thread(handlers.workspace_symbols, ls.folders, params.query)


@request
async def on_semantic_search(ls: CodeaskServer, params: SemanticSearchParams) -> Any:
    """`workspace/semanticSearch`."""
    return await ls.in_thread(handlers.semantic_search, ls.folders, params)


@request
async def on_index_status(ls: CodeaskServer, params: IndexStatusParams) -> Any:
    """`codeask/indexStatus`."""
    return to_json(handlers.index_state(ls.folders))


@request
async def on_ask_code(ls: CodeaskServer, params: AskCodeParams) -> Any:
    """`workspace/askCode`: core's orchestrator, streamed as `codeask/answerDelta`.

    The request's task is the generation: `$/cancelRequest` cancels it, which closes the
    LLM stream inside `ask`, and the client gets RequestCancelled.
    """
    try:
        from codeask.core.ask import AskRequest, ask, check_question
    except ImportError as exc:
        raise JsonRpcInternalError(message=f"codeask: askCode is unavailable ({exc})") from None
    try:
        check_question(params.question)
    except ValueError as exc:
        raise InvalidParams(f"{ASK_CODE}: {exc}") from None
    text = await ls.in_thread(_doc_text, ls, params.uri) if params.uri else None
    editor = await ls.in_thread(handlers.editor_context, ls.folders, params, text)
    token = params.stream_token

    def on_delta(delta: str) -> None:
        assert token is not None  # on_delta is passed only when the client gave a token
        ls.notify(ANSWER_DELTA, to_json(AnswerDelta(stream_token=token, delta=delta)))

    ask_request = AskRequest(
        question=params.question,
        folders=ls.folders.opened(),
        editor=editor,
        k=params.k,
        filters=handlers.to_filters(params.filters),
    )
    result = await ask(ask_request, on_delta=on_delta if token is not None else None)
    return handlers.ask_result(result, ls.folders)


# ---- commands ---------------------------------------------------------------------------------
@request
async def cmd_search(ls: CodeaskServer, *args: Any) -> Any:
    """`codeask.search` [query, k?] | [{query, k?, filters?}]."""
    params = handlers.search_command_params(args)
    return await ls.in_thread(handlers.semantic_search, ls.folders, params)


@request
async def cmd_reindex(ls: CodeaskServer, *args: Any) -> Any:
    """`codeask.reindex` [uri?]: full rebuild (vectors come back from the cache)."""
    target = workspace_path(ls.folders, args[0]) if args and isinstance(args[0], str) else None
    worker = ls.folders.worker_for(target) if target is not None else None
    for each in [worker] if worker else list(ls.folders.workers.values()):
        each.request_full("rebuild")
    return to_json(handlers.index_state(ls.folders))


@request
async def cmd_cancel(ls: CodeaskServer, *args: Any) -> Any:
    """`codeask.cancelIndexing`: stop full passes, keep what is done."""
    for worker in list(ls.folders.workers.values()):
        worker.cancel_indexing()
    return to_json(handlers.index_state(ls.folders))


@request
async def cmd_related(ls: CodeaskServer, *args: Any) -> Any:
    """`codeask.related` [uri, line]: the hover's links as result items (code lens target)."""
    if len(args) != 2 or not isinstance(args[0], str) or not isinstance(args[1], int):
        raise InvalidParams("codeask.related: arguments must be [uri, line]")
    uri, line = args
    if len(uri) > MAX_CHARS["uri"] or line < 0:
        raise InvalidParams(
            f"codeask.related: uri must be at most {MAX_CHARS['uri']} characters, line >= 0"
        )
    path = workspace_path(ls.folders, uri)
    return await ls.in_thread(_related, ls, uri, path, line)


def _related(ls: CodeaskServer, uri: str, path: Path | None, line: int) -> Any:
    text, name = _doc_text(ls, uri) or "", _doc_name(ls, uri, path)
    return handlers.related_items(ls.folders, path, name, window(text, line, 0))


def build_server() -> CodeaskServer:
    """A server with every feature registered."""
    ls = CodeaskServer()
    features: list[tuple[str, Callable[..., Any], Any]] = [
        (types.INITIALIZE, on_initialize, None),
        (types.INITIALIZED, on_initialized, None),
        (types.SHUTDOWN, on_shutdown, None),
        (types.EXIT, on_exit, None),
        (types.WORKSPACE_DID_CHANGE_CONFIGURATION, on_did_change_configuration, None),
        (types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, on_did_change_folders, None),
        (types.TEXT_DOCUMENT_DID_OPEN, on_did_open, None),
        (types.TEXT_DOCUMENT_DID_SAVE, on_did_save, types.SaveOptions(include_text=False)),
        (types.WORKSPACE_DID_CHANGE_WATCHED_FILES, on_watched_files, None),
        (types.TEXT_DOCUMENT_HOVER, on_hover, None),
        (
            types.TEXT_DOCUMENT_CODE_LENS,
            on_code_lens,
            types.CodeLensOptions(resolve_provider=False),
        ),
        (types.WORKSPACE_SYMBOL, on_workspace_symbol, None),
        (SEMANTIC_SEARCH, on_semantic_search, None),
        (INDEX_STATUS, on_index_status, None),
        (ASK_CODE, on_ask_code, None),
    ]
    for name, fn, options in features:
        ls.feature(name, options)(fn)
    for name, fn in (
        (CMD_SEARCH, cmd_search),
        (CMD_REINDEX, cmd_reindex),
        (CMD_CANCEL, cmd_cancel),
        (CMD_RELATED, cmd_related),
    ):
        ls.command(name)(fn)
    health.register(ls)
    return ls


def _setup_logging(ls: CodeaskServer) -> None:
    """stderr (the CLI's root handler, or ours) + window/logMessage; pygls kept quiet."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    logging.getLogger("pygls").setLevel(logging.WARNING)
    logger = logging.getLogger("codeask")
    logger.setLevel(logging.INFO)
    logger.addHandler(ls.log_handler)


def run(tcp_port: int | None = None) -> int:
    """`codeask serve`: stdio (stdout carries only LSP) or TCP; returns the exit code."""
    ls = build_server()
    _setup_logging(ls)
    try:
        if tcp_port:
            ls.tcp = True
            ls.start_tcp("127.0.0.1", tcp_port)
        else:
            stdout = LockedWriter(os.fdopen(os.dup(sys.stdout.fileno()), "wb"))
            os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints/C output → stderr
            sys.stdout = sys.stderr
            # framing.py: bounded, resynchronising reader; broken messages answered there
            stdin = FramedStdin(Framer(sys.stdin.buffer, stdout))
            ls.start_io(cast(BinaryIO, stdin), cast(BinaryIO, stdout))
    finally:
        ls.folders.stop()
        ls.requests.shutdown(wait=False, cancel_futures=True)
        ls.blame_pool.shutdown(wait=False, cancel_futures=True)
        logging.getLogger("codeask").removeHandler(ls.log_handler)
    return 0 if ls.shutdown_requested else 1
