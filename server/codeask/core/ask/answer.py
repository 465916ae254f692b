"""The one orchestrator of a question: retrieve → editor context → (git history) → prompt → llm.

The CLI (`codeask ask`) and the language server (`workspace/askCode`) both call `ask()`; the
benchmark calls `prepare()` to time prompt assembly alone.

- Retrieval is the same hybrid search as `codeask search` (filters included), with the stems of
  the question's inflected words added ("embedded" → embed; see `lexical.expand_query`). Blocks
  that do not fit the token budget are left out by `build_prompt`, which says so in the prompt.
- The editor adds the code around the cursor (the chunk named by `cursor_symbol` in the current
  file) and code related to the selection (a search with the selected text).
- Git context is added when the question is about history: a `HistoryRouter` (embedding
  similarity, one per embedder, cached) decides, and a commit sha named in the question or a
  "my uncommitted changes" phrasing always counts. It brings recent commits, the diff of the named
  (or latest) commit, history-scope hits and, when asked, the working-tree diff.
- An index still warming up (nothing or part embedded) still answers from what is searchable
  (lexical search) and the prompt says so.
- Multi-root: every folder is searched; the LLM, retrieval and prompt settings are those of the
  first folder (the editor's primary folder). Paths in the prompt are then prefixed with the
  folder's name so two folders' `src/main.py` stay apart.
- Secrets are redacted from the context when the LLM endpoint is not on this machine.
- The prompt is budgeted to the smaller of `llm.context_tokens` and the window the server
  reports (llama.cpp's /props, Ollama's /api/show; asked once per endpoint and model), so a
  server started with a small window is not sent a prompt it refuses. `prompt_only` asks no
  server: its prompt is budgeted to the setting.
- An answer the server ended at its token cap or by a content filter is incomplete, like one a
  cap or the deadline of ours cut.

Retrieval and git work are blocking (SQLite, ONNX, pygit2): `ask()` runs them in a worker
thread so an event loop (the language server) stays responsive. Cancellation: the caller
cancels the task; CancelledError propagates and the HTTP stream is closed on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from codeask.config import LLMSettings, Settings
from codeask.core.ask.prompt import ContextBlock, EditorContext, Prompt, build_prompt
from codeask.core.ask.router import HistoryRouter, keyword_prior
from codeask.core.embedding.embed import CachedEmbedder, EmbedError
from codeask.core.git.commits import SHORT_SHA, recent_commits
from codeask.core.git.diffs import commit_diff, working_tree_diff
from codeask.core.git.repo import open_repo
from codeask.core.llm import (
    ChatUsage,
    EndpointTimeout,
    EndpointUnreachable,
    LLMError,
    ModelNotFound,
    cut_short,
    fit_context,
    is_loopback,
    stream_chat,
)
from codeask.core.llm import resolve as resolve_llm
from codeask.core.records import HISTORY_KINDS, Chunk
from codeask.core.search import tiers
from codeask.core.search.retrieve import Filters, Hit, search
from codeask.core.source.names import display_path

if TYPE_CHECKING:  # type only: the two orchestrators do not import each other at run time
    import pygit2  # loaded with the first repository opened (a prompt may need none)

    from codeask.core.indexer import FolderIndex

log = logging.getLogger(__name__)

#: Failures whose fix is another endpoint or model (AskResult.endpoint_down); a timeout
#: includes `llm.total_timeout` passing before the first word.
ENDPOINT_DOWN = (EndpointUnreachable, EndpointTimeout, ModelNotFound)

#: A commit id as people paste it: 7 to 40 hex digits standing alone.
SHA_TOKEN = re.compile(r"(?<![\w./-])[0-9a-fA-F]{7,40}(?![\w/-])")
#: "What did I change?" phrasings: they want the working-tree diff, not only commits.
MY_CHANGES = re.compile(
    r"\b(uncommitted|not (yet )?committed|unstaged|staged|working (tree|copy)"
    r"|local (changes|edits|modifications)|my (\w+ )?(changes|edits|modifications|diff)"
    r"|what (have|did) (i|we) (just )?(change|modif|edit|touch|add|remov)\w*)",
    re.IGNORECASE,
)
#: Characters of a selection used as a search query (a long selection adds nothing).
SELECTION_QUERY_CHARS = 2000
RECENT_COMMITS = 10
DIFF_LINES = 200
WORKTREE_DIFF_LINES = 300


@dataclass
class AskRequest:
    """One question and where to look for its answer."""

    question: str
    folders: list[FolderIndex]
    editor: EditorContext | None = None
    k: int | None = None
    """Retrieved blocks offered to the budget (default `retrieve.k` of the first folder)."""
    filters: Filters | None = None
    prompt_only: bool = False
    """Assemble the prompt and return it without calling any model."""


@dataclass
class AskResult:
    """The answer and what it was based on."""

    answer: str
    sources: list[Hit]
    """The retrieved hits actually used in the prompt, in prompt order."""
    model: str
    prompt_tokens: int
    """The server's count when it reported one, else our estimate of the prompt."""
    truncated: bool
    """Context was cut to fit the budget (blocks left out or shortened)."""
    error: str | None
    """One clear line when the LLM call failed or was stopped; None otherwise."""
    prompt: Prompt
    incomplete: bool = False
    """The answer was cut short by `error` (a cap, the deadline, a broken stream): `answer`
    holds the part that arrived, which the CLI and the editors show marked incomplete."""
    endpoint_down: bool = False
    """`error` says the endpoint is unreachable, silent, or does not know the model: the fix
    is pointing `llm.base_url` / `llm.provider` / `llm.model` elsewhere (the CLI says how)."""


@dataclass
class Prepared:
    """Everything decided before the model is called."""

    prompt: Prompt
    sources: list[Hit]
    settings: Settings
    index_note: str = ""
    history: bool = False
    """Whether git context was added (the question was routed to history)."""


@dataclass
class _Gathered:
    """Hits in priority order (best first) and extra prompt sections."""

    hits: list[Hit] = field(default_factory=list)
    sections: list[tuple[str, str]] = field(default_factory=list)
    history: bool = False


# ---------------------------------------------------------------- public API


async def ask(request: AskRequest, on_delta: Callable[[str], None] | None = None) -> AskResult:
    """Answer a question: context in a worker thread, then the streamed LLM answer.

    Raises ValueError("empty question") for a blank question. LLM failures are not raised:
    they come back as `AskResult.error`, with the part of the answer that arrived before the
    failure (then `incomplete` is set) and the sources.
    """
    check_question(request.question)
    llm = None if request.prompt_only else await _fitted_llm(request)
    prepared = await asyncio.to_thread(prepare, request, llm)
    result = _result(prepared)
    if request.prompt_only:
        return result
    answer, usage, failure = await _generate(prepared.settings.llm, prepared.prompt, on_delta)
    failure = failure or cut_short(usage, prepared.settings.llm)
    result.answer, result.incomplete = answer, bool(failure and answer)
    if failure is not None:
        result.error = failure.message
        result.endpoint_down = isinstance(failure, ENDPOINT_DOWN)
    if usage.prompt_tokens:
        result.prompt_tokens = usage.prompt_tokens
    return result


def check_question(question: str) -> None:
    """ValueError for a blank question (the LSP answers InvalidParams, the CLI exits 1)."""
    if not question.strip():
        raise ValueError("empty question")


def prepare(request: AskRequest, llm: LLMSettings | None = None) -> Prepared:
    """Retrieve, add editor and git context, and build the prompt (blocking; no model call).

    `llm` replaces the first folder's LLM settings (`ask` passes them fitted to the server's
    context window); without it they are resolved as configured.
    """
    check_question(request.question)
    settings = _settings(request)
    settings = msgspec.structs.replace(settings, llm=llm or resolve_llm(settings.llm))
    gathered, note = _gather(request, settings)
    multi = len(request.folders) > 1
    pairs = [
        (_block(hit, rank, len(gathered.hits), multi), hit)
        for rank, hit in enumerate(gathered.hits)
    ]
    prompt = build_prompt(
        request.question,
        [block for block, _ in pairs],
        settings.llm,
        editor=request.editor,
        extra_sections=gathered.sections,
        redact=not is_loopback(settings.llm.base_url),
        index_note=note,
    )
    return Prepared(prompt, _used_hits(prompt.sources, pairs), settings, note, gathered.history)


def _settings(request: AskRequest) -> Settings:
    """The settings of a question: the first folder's (the editor's primary folder)."""
    return request.folders[0].settings if request.folders else Settings()


async def _fitted_llm(request: AskRequest) -> LLMSettings:
    """The LLM settings with `context_tokens` no larger than the server's window (asked once
    per endpoint and model, bounded; the setting as is when the server does not say)."""
    llm = _settings(request).llm
    try:
        return await fit_context(llm)
    except LLMError:  # an unknown provider: the chat call reports it
        return resolve_llm(llm)


def source_path(hit: Hit, multi_root: bool) -> str:
    """A hit's path as the prompt shows it: workspace-relative, prefixed by the folder in
    multi-root workspaces ('' for a commit that touched no file of the folder). Escaped: a
    control character in a file name must not forge lines of the prompt or of `path:line`."""
    if not hit.path:
        return ""
    return display_path(f"{hit.root.name}/{hit.path}" if multi_root else hit.path)


# ---------------------------------------------------------------- gathering context


def _gather(request: AskRequest, settings: Settings) -> tuple[_Gathered, str]:
    """All candidate hits in priority order, the extra sections, and the index note.

    Priority: the chunk under the cursor, then the ranked lists taken in turns: history hits
    (only for history questions), hits for the question, code related to the selection.
    """
    folders = request.folders
    k = request.k or settings.retrieve.k
    filters = request.filters or Filters()
    question_hits = search(folders, request.question, k=k, filters=filters).hits
    cursor, related = _editor_hits(folders, request.editor, filters, k)
    past = _history_context(folders, request.question, filters, k)
    hits = _dedupe([*cursor, *_interleave([past.hits, question_hits, related])])
    return _Gathered(hits, past.sections, past.history), index_note(folders)


def _editor_hits(
    folders: Sequence[FolderIndex], editor: EditorContext | None, filters: Filters, k: int
) -> tuple[list[Hit], list[Hit]]:
    """(the chunk the cursor is in, code related to the selection or to the cursor symbol)."""
    if editor is None:
        return [], []
    cursor = _cursor_chunks(folders, editor)
    query = editor.selection.strip()[:SELECTION_QUERY_CHARS]
    if not query and editor.cursor_symbol:
        query = f"`{editor.cursor_symbol}`"  # backticks: the symbol retriever takes it as a name
    if not query:
        return cursor, []
    related = search(folders, query, k=max(2, k // 2), filters=filters).hits
    return cursor, related


def _cursor_chunks(folders: Sequence[FolderIndex], editor: EditorContext) -> list[Hit]:
    """The chunks of the current file named by the cursor symbol (`Class.method` or `name`)."""
    if not editor.path or not editor.cursor_symbol:
        return []
    hits: list[Hit] = []
    for folder in folders:
        rel = _relative(folder, editor.path)
        chunks = folder.storage.chunks_of(rel) if rel else []
        for chunk in chunks:
            if editor.cursor_symbol in (_qualified(chunk), chunk.symbol):
                hits.append(Hit(folder.root, chunk, 1.0, ["editor"]))
        if hits:  # a relative path names a file of the first folder that has it
            return hits
    return hits


def _relative(folder: FolderIndex, path: str) -> str | None:
    """The editor's path (workspace-relative or absolute) relative to this folder."""
    candidate = Path(path)
    if not candidate.is_absolute():
        return candidate.as_posix()
    try:
        return candidate.resolve().relative_to(folder.root).as_posix()
    except ValueError:
        return None


def _qualified(chunk: Chunk) -> str:
    return f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol


def _interleave(lists: Iterable[Sequence[Hit]]) -> list[Hit]:
    """Round-robin over ranked lists, so each source of context gets its best hits in."""
    pending = [list(hits) for hits in lists if hits]
    out: list[Hit] = []
    for depth in range(max((len(hits) for hits in pending), default=0)):
        out.extend(hits[depth] for hits in pending if depth < len(hits))
    return out


def _dedupe(hits: Iterable[Hit]) -> list[Hit]:
    """First occurrence of each chunk wins (same folder and chunk id)."""
    seen: set[tuple[Path, int]] = set()
    out: list[Hit] = []
    for hit in hits:
        key = (hit.root, hit.chunk.id)
        if key not in seen:
            seen.add(key)
            out.append(hit)
    return out


def index_note(folders: Sequence[FolderIndex]) -> str:
    """What to tell the model (and the user) when the index is not complete; '' when it is.
    It names the retrievers that answer (`core/search/tiers.py`): with the static tier
    complete, search is already dense for every chunk, only MiniLM fills in behind."""
    chunks = sum(folder.storage.counts().chunks for folder in folders)
    if chunks == 0:
        return (
            "The code index is empty or still warming up: no code could be searched, so the "
            "context below may miss what the question needs. Say so if it does."
        )
    said = tiers.describe(tiers.answered(folders, "hybrid"), tiers.counts(folders))
    if not said:
        return ""
    return f"Index not complete: search {said}; code related only in meaning may be missed."


# ---------------------------------------------------------------- git history


def _history_context(
    folders: Sequence[FolderIndex], question: str, filters: Filters, k: int
) -> _Gathered:
    """Commits, diffs and history hits when the question is about history; empty otherwise."""
    repos = [f for f in folders if open_repo(f.root) is not None]
    if not repos:
        return _Gathered()
    named = _named_commits(repos, question)
    mine = bool(MY_CHANGES.search(question))
    if not (named or mine or _routed_to_history(repos[0], question)):
        return _Gathered()
    gathered = _Gathered(history=True)
    multi = len(folders) > 1
    for folder in repos:
        gathered.sections.extend(_history_sections(folder, named.get(folder.root), mine, multi))
    if filters.scope == "code":
        scoped = replace(filters, scope="history", language=None, kind=None)
        gathered.hits = search(folders, question, k=max(3, k // 2), filters=scoped).hits
    return gathered


def _history_sections(
    folder: FolderIndex, named: list[str] | None, mine: bool, multi: bool
) -> list[tuple[str, str]]:
    """Most specific first (`build_prompt` cuts the last section when short of room)."""
    where = f" in {folder.root.name}" if multi else ""
    rules = folder.settings.index  # the user's skip rules bind diffs as they bind the index
    sections: list[tuple[str, str]] = []
    if mine:
        diff = working_tree_diff(folder.root, max_lines=WORKTREE_DIFF_LINES, index=rules)
        sections.append((f"Uncommitted changes{where} (diff of HEAD to the working tree)", diff))
    for sha in named or []:
        diff = commit_diff(folder.root, sha, max_lines=DIFF_LINES, index=rules)
        sections.append((f"Commit {sha[:SHORT_SHA]}{where}", diff))
    commits = recent_commits(folder.root, RECENT_COMMITS)
    if commits:
        lines = [f"- {c.sha[:SHORT_SHA]} {c.date[:10]} {c.author}: {c.subject}" for c in commits]
        sections.append((f"Recent commits{where} (newest first)", "\n".join(lines)))
    if not named and not mine and commits:
        diff = commit_diff(folder.root, "HEAD", max_lines=DIFF_LINES, index=rules)
        sections.append((f"Latest commit{where}", diff))
    return sections


def _named_commits(folders: Sequence[FolderIndex], question: str) -> dict[Path, list[str]]:
    """Folder root → full shas of the commits the question names (sha-like tokens that resolve)."""
    tokens = list(dict.fromkeys(m.group().lower() for m in SHA_TOKEN.finditer(question)))
    found: dict[Path, list[str]] = {}
    for folder in folders if tokens else []:
        repo = open_repo(folder.root)
        shas = [sha for sha in (_resolve(repo, t) for t in tokens) if sha] if repo else []
        if shas:
            found[folder.root] = shas
    return found


def _resolve(repo: pygit2.Repository, token: str) -> str:
    """The full sha of the commit `token` abbreviates; '' when it names none (or several)."""
    import pygit2  # loaded already: `repo` is open

    try:
        sha = str(repo.revparse_single(token).peel(pygit2.Commit).id)
    except (pygit2.GitError, KeyError, ValueError, OSError, pygit2.InvalidSpecError):
        return ""
    return sha if sha.startswith(token) else ""


_routers: weakref.WeakKeyDictionary[CachedEmbedder, HistoryRouter] = weakref.WeakKeyDictionary()
_routers_lock = threading.Lock()


def router_for(embedder: CachedEmbedder) -> HistoryRouter:
    """One router per embedder: its prototype questions are embedded once, on first use."""
    with _routers_lock:
        router = _routers.get(embedder)
        if router is None:
            router = _routers[embedder] = HistoryRouter(embedder.embed)
        return router


def _routed_to_history(folder: FolderIndex, question: str) -> bool:
    """The router's verdict; the keyword prior alone when the embedding model cannot load."""
    try:
        return router_for(folder.embedder).is_history_question(question)
    except EmbedError as exc:
        log.warning("history routing by keywords only: %s", exc)
        return keyword_prior(question) > 0


# ---------------------------------------------------------------- prompt blocks and sources


def _block(hit: Hit, rank: int, total: int, multi: bool) -> ContextBlock:
    """A hit as a prompt block; its score is the priority rank (best first), not the hit's."""
    chunk = hit.chunk
    return ContextBlock(
        path=source_path(hit, multi),
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        language=chunk.language,
        symbol=_qualified(chunk),
        kind=chunk.kind,
        text=chunk.text,
        score=1.0 - rank / (total + 1),
    )


def _covers(shown: ContextBlock, offered: ContextBlock) -> bool:
    """Whether a block of the prompt shows (the start of) an offered block: history blocks are
    never merged; code blocks may be merged with neighbours or cut at the end."""
    if shown.path != offered.path:
        return False
    if shown.kind in HISTORY_KINDS or offered.kind in HISTORY_KINDS:
        same = (shown.kind, shown.symbol, shown.start_line)
        return same == (offered.kind, offered.symbol, offered.start_line)
    return shown.start_line <= offered.start_line <= shown.end_line


def _used_hits(
    shown: Sequence[ContextBlock], offered: Sequence[tuple[ContextBlock, Hit]]
) -> list[Hit]:
    """The hits behind the prompt's blocks, in prompt order (priority order within a block)."""
    used: list[Hit] = []
    taken: set[int] = set()
    for block in shown:
        for candidate, hit in offered:
            if id(hit) not in taken and _covers(block, candidate):
                taken.add(id(hit))
                used.append(hit)
    return used


def _result(prepared: Prepared) -> AskResult:
    """The result before (or instead of) the model's answer."""
    prompt = prepared.prompt
    return AskResult(
        answer="",
        sources=prepared.sources,
        model=prepared.settings.llm.model,
        prompt_tokens=prompt.prompt_tokens,
        truncated=prompt.truncated or prompt.left_out > 0,
        error=None,
        prompt=prompt,
    )


# ---------------------------------------------------------------- the model


async def _generate(
    settings: LLMSettings, prompt: Prompt, on_delta: Callable[[str], None] | None
) -> tuple[str, ChatUsage, LLMError | None]:
    """(answer, usage, the failure): streams deltas to `on_delta` as they arrive."""
    usage = ChatUsage()
    parts: list[str] = []
    try:
        # stream_chat is an async generator; aclosing closes it (and the HTTP stream) even
        # when on_delta raises.
        stream = stream_chat(settings, prompt.messages, usage=usage)
        async with contextlib.aclosing(stream) as deltas:
            async for delta in deltas:
                parts.append(delta)
                if on_delta is not None:
                    on_delta(delta)
    except LLMError as exc:
        return "".join(parts), usage, exc
    return "".join(parts), usage, None
