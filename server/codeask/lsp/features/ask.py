"""`workspace/askCode`: core's ask orchestrator, its answer streamed as `codeask/answerDelta`."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcInternalError

from codeask.core.operations import enclosing_chunk
from codeask.core.source.limits import LimitError
from codeask.lsp.base import CodeaskServer
from codeask.lsp.features.common import (
    chunk_range,
    custom_request,
    doc_text,
    file_uri,
    qualified,
    uri_path,
    workspace_path,
)
from codeask.lsp.features.index import index_state
from codeask.lsp.features.search import to_filters
from codeask.lsp.folders import Folders
from codeask.lsp.messages import (
    ANSWER_DELTA,
    ASK_CODE,
    AnswerDelta,
    AskCodeParams,
    AskCodeResult,
    AskSource,
    InvalidParams,
    Range,
    to_json,
)
from codeask.lsp.window import slice_range


def _selection(text: str, rng: Range) -> str:
    try:
        return slice_range(
            text, (rng.start.line, rng.start.character), (rng.end.line, rng.end.character)
        )
    except LimitError as exc:
        raise InvalidParams(f"{ASK_CODE}: {exc}") from None


def editor_context(folders: Folders, params: AskCodeParams, text: str | None) -> Any:
    """The editor state of an askCode request as core's EditorContext (None without a uri).

    `text` is what paths.document_text allowed (editor-sent, or a guarded disk read); a
    range over a document the server may not read is InvalidParams, never a disk read.
    """
    from codeask.core.operations.ask import EditorContext

    if not params.uri:
        return None
    if text is None and params.range is not None:
        raise InvalidParams(
            f"{ASK_CODE}: `uri` is neither open in the editor nor a file the server may "
            "read (inside a workspace folder and not skipped by its ignore or secret-file rules); "
            "its text cannot be used as the selection"
        )
    shown = uri_path(params.uri)
    path = workspace_path(folders, params.uri)
    worker = folders.worker_for(path) if path is not None else None
    folder = worker.folder if worker is not None else None
    rel = folder.relative(path) if folder is not None and path is not None else None
    line = params.range.start.line if params.range else 0
    chunk = enclosing_chunk(folder, rel, line + 1) if folder is not None and rel else None
    selection = _selection(text, params.range) if text and params.range else ""
    return EditorContext(
        path=str(shown) if shown is not None else "",
        selection=selection,
        selection_start_line=line + 1 if selection else 0,
        cursor_symbol=qualified(chunk) if chunk else "",
    )


def endpoint_hint() -> str:
    """After an endpoint that cannot be reached (or lacks the model): where an editor user fixes
    it. Imported here, like askCode's engine: the server runs without the LLM client."""
    from codeask.core.llm import provider_choices

    return (
        f" To use another endpoint, set llm.baseUrl, llm.provider ({provider_choices()}) and"
        " llm.model in the editor's codeask settings (VS Code: codeask.llm.*; Neovim:"
        " settings.codeask.llm) or in the [llm] table of ~/.config/codeask/config.toml."
    )


def ask_result(result: Any, folders: Folders) -> Any:
    """core's AskResult → the askCode result (LLM errors are data, not request errors)."""
    sources = [
        AskSource(
            uri=file_uri(hit.abs_path),
            range=chunk_range(hit.chunk),
            symbol=qualified(hit.chunk),
            score=round(hit.score, 6),
        )
        for hit in result.sources
    ]
    return to_json(
        AskCodeResult(
            answer=result.answer,
            sources=sources,
            model=result.model,
            prompt_tokens=result.prompt_tokens,
            truncated=result.truncated,
            index_state=index_state(folders),
            error=(result.error + endpoint_hint() if result.endpoint_down else result.error)
            or None,
            incomplete=result.incomplete,
        )
    )


@custom_request(ASK_CODE)
async def on_ask_code(ls: CodeaskServer, params: AskCodeParams) -> Any:
    """The request's task is the generation: `$/cancelRequest` cancels it, which closes the
    LLM stream inside `ask`, and the client gets RequestCancelled."""
    try:
        from codeask.core.operations.ask import AskRequest, ask, check_question
    except ImportError as exc:
        raise JsonRpcInternalError(message=f"codeask: askCode is unavailable ({exc})") from None
    try:
        check_question(params.question)
    except ValueError as exc:
        raise InvalidParams(f"{ASK_CODE}: {exc}") from None
    text = await ls.in_thread(doc_text, ls, params.uri) if params.uri else None
    await ls.in_thread(ls.folders.wait_open)  # the index on disk, not "nothing indexed"
    editor = await ls.in_thread(editor_context, ls.folders, params, text)
    token = params.stream_token

    def on_delta(delta: str) -> None:
        assert token is not None  # on_delta is passed only when the client gave a token
        ls.notify(ANSWER_DELTA, to_json(AnswerDelta(stream_token=token, delta=delta)))

    ask_request = AskRequest(
        question=params.question,
        folders=ls.folders.opened(),
        editor=editor,
        k=params.k,
        filters=to_filters(params.filters),
    )
    result = await ask(ask_request, on_delta=on_delta if token is not None else None)
    return ask_result(result, ls.folders)


def register(ls: CodeaskServer) -> None:
    """`workspace/askCode`."""
    ls.feature(ASK_CODE)(on_ask_code)
