"""`codeask ask "question"`: the answer streams to stdout, then its sources as `path:line symbol`.

`--prompt-only` prints the assembled prompt (the chat messages) and the sources without calling
any model; `--json` prints one JSON object instead of streaming. Exit codes (as the rest of the
CLI): 0 answered, 1 a user error (empty question, no index) or an LLM failure before any answer,
3 an incomplete answer: the part that arrived is printed, then `codeask: incomplete answer:
<why>` on stderr (a cap, `llm.total_timeout`, a stream that broke off, or the server's own ending
`length` (its token cap: `llm.max_tokens`) or `content_filter`). Errors are one line
on stderr; after an LLM failure before any answer the sources found are still printed, and when
the endpoint is down, silent or does not know the model, how to point codeask elsewhere follows.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import Any

from codeask.cli.ask_view import print_sources, show_prompt
from codeask.cli.common import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_USER,
    UserError,
    print_json,
    roots,
)
from codeask.config import LLMSettings, user_config_path
from codeask.core.llm import provider_choices, resolve
from codeask.core.operations import Filters, Hit, open_for_reading, searchable
from codeask.core.operations.ask import (
    AskRequest,
    AskResult,
    ask,
    check_question,
    index_note,
    source_path,
)
from codeask.core.operations.index import FolderIndex
from codeask.core.records import HISTORY_KINDS
from codeask.core.source.names import display_text


def run(args: argparse.Namespace) -> int:
    """Open the folders' indexes, ask, print; the folders are closed again either way."""
    try:
        check_question(args.question)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    folders = [open_for_reading(root) for root in roots(args.root)]
    try:
        if args.prompt_only:
            return show_prompt(prompt_data(args, folders), args.json)
        return _ask(args, folders)
    finally:
        for folder in folders:
            folder.storage.close()


def prompt_data(
    call: Any, folders: list[FolderIndex], note: Callable[[str], object] | None = None
) -> dict[str, Any]:
    """`--prompt-only`'s answer as data, here or in the daemon (`call`: the parsed arguments
    or the daemon's `AskCall`; `note`: where the index note goes, stderr by default)."""
    result = _asked(call, folders, note or sys.stderr.write, prompt_only=True)
    multi = len(folders) > 1
    return {
        "payload": _result_json(result, multi, True),
        "sources": [source_line(hit, multi) for hit in result.sources],
    }


def _asked(
    call: Any,
    folders: list[FolderIndex],
    note: Callable[[str], object],
    *,
    prompt_only: bool,
    stream: Callable[[str], None] | None = None,
) -> AskResult:
    """The question asked of the opened folders (a user error when there is no index)."""
    if not searchable(folders):
        raise UserError("no index here yet: run `codeask index` first")
    index_said = index_note(folders)
    if index_said:
        note(f"codeask: {index_said}\n")
    request = AskRequest(
        question=call.question,
        folders=folders,
        k=call.k,
        filters=Filters.from_options(call),
        prompt_only=prompt_only,
    )
    return asyncio.run(ask(request, stream))


def _ask(args: argparse.Namespace, folders: list[FolderIndex]) -> int:
    """Ask with the opened folders; exit code 1 when there is no index or the LLM failed."""
    stream = _Stdout() if not args.json else None
    result = _asked(
        args, folders, sys.stderr.write, prompt_only=False, stream=stream.write if stream else None
    )
    multi = len(folders) > 1
    if args.json:
        print_json(_result_json(result, multi, False))
    else:
        _finish_answer(result, multi, stream)
    if result.incomplete:
        sys.stderr.write(f"codeask: incomplete answer: {result.error}\n")
        return EXIT_INCOMPLETE
    if result.error:
        sys.stderr.write(f"codeask: {result.error}\n")
        if result.endpoint_down and not args.json:
            sys.stderr.write(endpoint_help(folders[0].settings.llm))
        return EXIT_USER
    return EXIT_OK


def endpoint_help(llm: LLMSettings) -> str:
    """After a failed LLM call: the endpoint used, and how to point codeask at another one."""
    llm = resolve(llm)
    return (
        f"  endpoint: llm.provider = {llm.provider}, llm.base_url = {llm.base_url}, "
        f"llm.model = {llm.model}\n"
        f"  to use another, set llm.base_url, llm.provider ({provider_choices()}) and llm.model\n"
        f"    in the [llm] table of {user_config_path()}\n"
        "    (a project's .codeask.toml may set base_url and provider only in a trusted "
        "workspace: see docs/security.md)\n"
        "    or for one run: CODEASK_LLM__BASE_URL=http://host:port CODEASK_LLM__PROVIDER=openai "
        "CODEASK_LLM__MODEL=<name> codeask ask ...\n"
        "  `codeask ask --prompt-only` prints the prompt and the sources without calling a model\n"
    )


class _Stdout:
    """The answer as it streams in, shown at once; remembers whether a line is left open."""

    def __init__(self) -> None:
        self.open_line = False

    def write(self, delta: str) -> None:
        sys.stdout.write(delta)
        sys.stdout.flush()
        self.open_line = not delta.endswith("\n")


def _finish_answer(result: AskResult, multi: bool, stream: _Stdout | None) -> None:
    """After the streamed answer: close its last line, then the sources (also after a failed
    call: what was found is useful without the model; a partial answer cites them)."""
    if stream is not None and stream.open_line:
        sys.stdout.write("\n")
        sys.stdout.flush()
    _print_sources(result.sources, multi)


def _print_sources(sources: list[Hit], multi: bool) -> None:
    """`Sources:` then one `path:line symbol` line per source."""
    print_sources([source_line(hit, multi) for hit in sources])


def source_line(hit: Hit, multi: bool = False) -> str:
    """`path:line symbol`; a commit is `commit <sha> <subject>` (its path may be empty)."""
    chunk = hit.chunk
    if chunk.kind in HISTORY_KINDS:
        subject = chunk.meta.get("subject", "")
        where = f"{source_path(hit, multi)}:{chunk.start_line} " if chunk.kind == "hunk" else ""
        return f"{where}{chunk.kind} {chunk.symbol} {display_text(subject)}".rstrip()
    name = f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol
    return f"{source_path(hit, multi)}:{chunk.start_line} {display_text(name)}".rstrip()


def _result_json(result: AskResult, multi: bool, prompt_only: bool) -> dict[str, Any]:
    """The `--json` object; with `--prompt-only` it also carries the messages."""
    payload: dict[str, Any] = {
        "answer": result.answer,
        "sources": [_source_json(hit, multi) for hit in result.sources],
        "model": result.model,
        "prompt_tokens": result.prompt_tokens,
        "truncated": result.truncated,
        "error": result.error,
        "incomplete": result.incomplete,
    }
    if prompt_only:
        payload["messages"] = result.prompt.messages
    return payload


def _source_json(hit: Hit, multi: bool) -> dict[str, Any]:
    """`path` is absolute (as in `codeask search --json`); the prompt's form is `relative_path`."""
    chunk = hit.chunk
    return {
        "path": str(hit.abs_path) if chunk.path else "",
        "relative_path": source_path(hit, multi),
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "symbol": f"{chunk.parent}.{chunk.symbol}" if chunk.parent else chunk.symbol,
        "kind": chunk.kind,
        "score": round(hit.score, 6),
    }
