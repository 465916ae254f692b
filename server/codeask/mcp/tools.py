"""The tools (their names and arguments are a contract: docs/mcp.md).

Each tool checks its arguments (arguments.py, by the one limits table: core/source/limits.py),
reads the folders' indexes as they are now (never waiting for indexing), calls one operation of
`core.operations`, and answers compact JSON sized by results.py. A bad argument or a refused
path is a tool error (`ToolError`: the agent sees the reason), never a crash.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import msgspec

from codeask.core.indexer import FolderIndex
from codeask.core.operations import (
    Filters,
    answering_tiers,
    blame,
    context_for,
    history,
    not_git_repositories,
    query_words,
    related_at,
    search_now,
)
from codeask.core.operations.paths import PathRefused, read_text, resolve
from codeask.core.source.limits import DEFAULT_MAX_TOKENS, LimitError
from codeask.mcp import arguments, results, status
from codeask.mcp.arguments import KINDS, ArgumentError, check_text
from codeask.mcp.folders import FolderDriver
from codeask.mcp.toolkit import Tool, ToolError

#: How long a tool waits for the folders' indexes to open (snapshot load, not indexing).
OPEN_WAIT = 15.0
DATE = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")
READ_ONLY = {"readOnlyHint": True, "openWorldHint": False}


class Tools:
    """The tools over one set of workspace folders (their drivers)."""

    def __init__(self, drivers: list[FolderDriver]) -> None:
        self.drivers = drivers

    # ---- the folders as they are now -----------------------------------------------------------
    def folders(self) -> list[FolderIndex]:
        """Every open folder index (waiting only for the open itself, bounded); a tool error
        saying why when no folder could be opened (a refused root, an unreadable index)."""
        for driver in self.drivers:
            driver.opened.wait(OPEN_WAIT)
        opened = [d.folder for d in self.drivers if d.folder is not None]
        failed = [d for d in self.drivers if d.phase in ("refused", "error")]
        if not opened and failed:
            raise ArgumentError("; ".join(f"{d.root}: {d.message}" for d in failed))
        return opened

    def searchable(self) -> tuple[list[FolderIndex], bool]:
        """Open folders, and whether MiniLM may answer now (else its query path is being built
        in the background and the other tiers answer)."""
        folders = self.folders()
        ready = [driver.want_query_model() for driver in self.drivers]
        return folders, all(ready)

    def _answer(self, payload: dict[str, Any], tiers: list[str]) -> str:
        payload["index"] = status.summary(self.drivers, tiers)
        return results.dumps(payload)

    # ---- the tools -----------------------------------------------------------------------------
    def search_code(
        self,
        query: str,
        k: int = 10,
        path: str | None = None,
        language: str | None = None,
        kind: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> str:
        """Search the workspace's code (hybrid: keywords, identifiers and meaning; the ranking
        of `codeask search`). Answers at once, even while the index is being built: the
        `index` field says which tiers answered and how complete the index is. Each result is
        `path`, `lines` (start-end), `symbol`, `kind`, `score` and a short snippet around the
        lines that match (`snippet_start` is its first line number)."""
        query = _required("query", query)
        filters = Filters(
            path_glob=_glob(path),
            language=check_text("language", language),
            kind=_kind(kind, KINDS),
        )
        folders, minilm = self.searchable()
        found = search_now(folders, query, k=k, filters=filters, minilm=minilm)
        head = {"query": results.clean(query)}
        answer = results.fit_hits(found.result.hits, query_words(query), head, max_tokens)
        return self._answer(answer, found.tiers)

    def find_related(self, path: str, line: int, k: int = 8) -> str:
        """The code related to a line of a file (what codeask's editor hover lists): the
        definition or chunk at that line, then similar or connected code elsewhere. Only
        files inside the workspace folders can be named."""
        raw = _required("path", path)
        found = resolve(raw, self.folders())
        text = read_text(found.path)
        chunk, hits = related_at(self.folders(), found.folder, found.rel, line, text, k=k)
        payload: dict[str, Any] = {"path": results.shown_path(found.path), "line": line}
        if chunk is not None:
            payload["at"] = {
                "lines": f"{chunk.start_line}-{chunk.end_line}",
                "symbol": results.qualified(chunk),
                "kind": chunk.kind,
            }
        words = query_words(chunk.symbol if chunk is not None else "")
        answer = results.fit_hits(hits, words, payload, DEFAULT_MAX_TOKENS)
        return self._answer(answer, ["related"])

    def get_context(self, question: str, k: int | None = None) -> str:
        """The cited context `codeask ask --prompt-only` would send to a model for this
        question (code blocks as `path:start-end`, git history when the question is about
        it), within codeask's prompt budget, secrets redacted; plus its sources. For agents
        that bring their own model."""
        question = _required("question", question)
        folders, _ = self.searchable()
        if not any(f.storage.chunk_count() for f in folders):
            return self._answer({"question": results.clean(question), "sources": []}, [])
        context = context_for(folders, question, k=k)
        multi = len(folders) > 1
        sources = [
            {
                "path": results.shown_path(hit.abs_path) if hit.path else "",
                "lines": f"{hit.chunk.start_line}-{hit.chunk.end_line}",
                "symbol": results.qualified(hit.chunk),
                "kind": hit.chunk.kind,
            }
            for hit in context.sources
        ]
        payload = {
            "context": context.messages[-1]["content"],
            "instructions": context.messages[0]["content"],
            "sources": sources,
            "prompt_tokens": context.prompt_tokens,
            "truncated": context.truncated,
            "redactions": context.redactions,
        }
        if multi:
            payload["folders"] = [str(f.root) for f in folders]
        return self._answer(payload, answering_tiers(folders, minilm=True))

    def search_history(
        self,
        query: str = "",
        k: int = 10,
        author: str | None = None,
        since: str | None = None,
        until: str | None = None,
        path: str | None = None,
        line: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> str:
        """Search git history: commits and diff hunks (sha, author, date, subject, snippet),
        filtered by author, date and file; with `path` + `line`, also the commits that last
        touched that line (blame)."""
        query = check_text("query", query) or ""
        if line is not None and path is None:
            raise ArgumentError("`line` needs `path`")
        target = resolve(_required("path", path), self.folders()) if path is not None else None
        if not query.strip() and (target is None or line is None):
            raise ArgumentError("`query` is empty (give a query, or `path` and `line` to blame)")
        filters = Filters(
            author=check_text("author", author),
            since=_date("since", since),
            until=_date("until", until),
            path_glob=_literal_glob(target.rel) if target is not None else None,
        )
        payload: dict[str, Any] = {"query": results.clean(query)}
        note = _no_history_note(self.folders())
        if note:
            payload["note"] = note
        tiers: list[str] = []
        hits = []
        if query.strip():
            folders, minilm = self.searchable()
            hits = history(folders, query, k=k, filters=filters, minilm=minilm)
            tiers = answering_tiers(folders, minilm=minilm)
        if target is not None and line is not None:
            payload["blame"] = [
                results.blame_json(b) for b in blame(target.folder, target.rel, line)
            ]
        answer = results.fit_hits(hits, query_words(query), payload, max_tokens)
        return self._answer(answer, tiers)

    def index_status(self) -> str:
        """Per workspace folder: files, chunks, each vector tier done of total, what is running
        (indexing, embedding, following another process), who writes the index, when it was
        last indexed, and why anything is missing; `ignore_note` when ignore rules leave
        (nearly) nothing of the folder to index (which file and line, and the override)."""
        for driver in self.drivers:
            driver.opened.wait(OPEN_WAIT)
        return results.dumps({"folders": [status.folder_status(d) for d in self.drivers]})

    # ---- registration --------------------------------------------------------------------------
    def definitions(self) -> list[Tool]:
        """The tools, each with its arguments type (arguments.py), errors as tool errors."""
        pairs: list[tuple[Callable[..., str], type[msgspec.Struct]]] = [
            (self.search_code, arguments.SearchCode),
            (self.find_related, arguments.FindRelated),
            (self.get_context, arguments.GetContext),
            (self.search_history, arguments.SearchHistory),
            (self.index_status, arguments.IndexStatus),
        ]
        return [
            Tool(
                name=tool.__name__,
                description=" ".join((tool.__doc__ or "").split()),
                arguments=args,
                run=_with_arguments(tool),
                annotations=READ_ONLY,
            )
            for tool, args in pairs
        ]


def _with_arguments(tool: Callable[..., str]) -> Callable[[msgspec.Struct], str]:
    """The tool called with the fields of its validated arguments; a LimitError (ArgumentError
    is one) or a refused path → ToolError (the agent reads the reason as the tool's error text)."""

    @functools.wraps(tool)
    def run(given: msgspec.Struct) -> str:
        try:
            return tool(**msgspec.structs.asdict(given))
        except (LimitError, PathRefused) as exc:
            raise ToolError(str(exc)) from None

    return run


def _no_history_note(folders: list[FolderIndex]) -> str:
    """Why some (or all) folders answer no history: they are not git repositories ('' when
    every folder is one): an empty answer must not read as "no commit matched"."""
    missing = not_git_repositories([folder.root for folder in folders])
    return "; ".join(
        f"{root} is not a git repository: no history to search there" for root in missing
    )


def _required(name: str, value: str | None) -> str:
    checked = check_text(name, value, required=True)
    assert checked is not None
    return checked


def _kind(value: str | None, allowed: tuple[str, ...]) -> str | None:
    kind = check_text("kind", value)
    if kind is not None and kind not in allowed:
        raise ArgumentError(f"`kind` must be one of {', '.join(allowed)} (got {kind!r})")
    return kind


def _date(name: str, value: str | None) -> str | None:
    date = check_text(name, value)
    if date is not None and not DATE.fullmatch(date):
        raise ArgumentError(f"`{name}` must be a date as YYYY, YYYY-MM or YYYY-MM-DD")
    return date


def _glob(value: str | None) -> str | None:
    """The `path` glob, compiled once here so a bad or overlong one is the agent's argument
    error (naming `path`), not a crash of the search."""
    glob = check_text("path", value)
    if glob:
        from codeask.core.source.globs import glob_error  # as the search itself: only when used

        if problem := glob_error(glob):
            raise ArgumentError(f"`path` is not a usable glob: {problem}")
    return glob


def _literal_glob(rel: str) -> str:
    """A path as a gitignore pattern matching only itself (wildcards escaped, anchored)."""
    return "/" + re.sub(r"([\\*?\[\]!#])", r"\\\1", rel)
