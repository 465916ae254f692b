"""Tool answers sized to be read: hits with trimmed snippets, under a token cap, redacted.

An agent pays for every token it reads, so a hit carries its place (`path:start-end`),
symbol, kind and score, and a snippet of at most `SNIPPET_LINES` lines cut around the lines
that match the query (the chunk's first lines when none does: its signature and docstring).
An answer over `max_tokens` gets shorter snippets first, then fewer hits, and says so.

Everything sent is redacted as for a remote endpoint (`source.redact_outbound`): a tool result
goes to the agent's model, wherever that runs. Paths too: a token used as a file name is shown
as its placeholder (`keys/«redacted:github-pat».txt`), which the tools taking a path accept.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from codeask.core.git.commits import BlameInfo
from codeask.core.operations import Hit, redact_path, redact_secrets
from codeask.core.records import HISTORY_KINDS, Chunk

#: Snippet lines per hit at most, and the shorter snippets an answer over its cap falls to.
SNIPPET_LINES = 12
SHRINK_STEPS = (12, 6, 3, 1)
#: Lines of context kept above the best-matching line.
LINES_ABOVE = 2
#: A snippet line is cut to this many characters (minified code, data blobs).
LINE_CHARS = 240
CHARS_PER_TOKEN = 4


def snippet(chunk: Chunk, words: frozenset[str], lines: int) -> tuple[int, str]:
    """(first line number, text) of at most `lines` lines of `chunk` around its best match."""
    body = chunk.text.split("\n")
    if len(body) <= lines:
        start = 0
    else:
        lowered = [line.lower() for line in body]
        scores = [sum(word in line for word in words) for line in lowered]
        best = max(range(len(body)), key=lambda i: (scores[i], -i))
        start = 0 if scores[best] == 0 else max(0, min(best - LINES_ABOVE, len(body) - lines))
    kept = [line[:LINE_CHARS] for line in body[start : start + lines]]
    text, _ = redact_secrets("\n".join(kept))
    return chunk.start_line + start, text


def qualified(chunk: Chunk) -> str:
    """`Class.method`, or the symbol alone."""
    return f"{chunk.parent}.{chunk.symbol}" if chunk.parent and chunk.symbol else chunk.symbol


def hit_json(hit: Hit, words: frozenset[str], lines: int) -> dict[str, Any]:
    """One hit as the agent reads it (history hits carry their commit facts)."""
    chunk = hit.chunk
    first, text = snippet(chunk, words, lines)
    item: dict[str, Any] = {
        "path": shown_path(hit.abs_path if chunk.path else hit.root),
        "lines": f"{chunk.start_line}-{chunk.end_line}",
        "symbol": qualified(chunk),  # from text redacted when indexed (names hold no literal)
        "kind": chunk.kind,
        "score": round(hit.score, 4),
        "snippet_start": first,
        "snippet": text,
    }
    if chunk.kind in HISTORY_KINDS:
        item |= commit_facts(chunk.meta)
    if hit.uncommitted:
        item["uncommitted"] = True
    return item


def commit_facts(meta: dict[str, str]) -> dict[str, str]:
    """sha, author, date, subject of a history chunk (redacted: messages can hold secrets)."""
    keys = ("sha", "author", "date", "subject")
    return {key: clean(meta[key]) for key in keys if meta.get(key)}


def blame_json(info: BlameInfo) -> dict[str, str]:
    """A commit behind a line."""
    return {
        "sha": info.sha,
        "author": clean(info.author),
        "date": info.date,
        "subject": clean(info.subject),
    }


def shown_path(path: object) -> str:
    """A path as an agent sees it: a token used as a file or folder name redacted."""
    return redact_path(str(path))


def clean(text: str) -> str:
    """`text` redacted as for a remote endpoint."""
    return redact_secrets(text)[0]


def fit_hits(
    hits: Sequence[Hit], words: frozenset[str], head: dict[str, Any], max_tokens: int
) -> dict[str, Any]:
    """`head` plus as many hits as fit `max_tokens` (snippets shortened first); `truncated`
    says how many hits were left out or shortened."""
    for lines in SHRINK_STEPS:
        items = [hit_json(hit, words, lines) for hit in hits]
        answer = head | {"results": items}
        if tokens(answer) <= max_tokens:
            if lines < SNIPPET_LINES:
                answer["truncated"] = f"snippets cut to {lines} lines to fit max_tokens"
            return answer
    kept: list[dict[str, Any]] = []
    for item in items:
        if tokens(head | {"results": [*kept, item]}) > max_tokens:
            break
        kept.append(item)
    answer = head | {"results": kept}
    answer["truncated"] = f"{len(items) - len(kept)} hits left out to fit max_tokens"
    return answer


def dumps(payload: dict[str, Any]) -> str:
    """The text an agent reads: compact JSON (no indentation: tokens are the currency)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def tokens(payload: dict[str, Any]) -> int:
    """The tokens of an answer as sent, estimated as characters / 4 (the measure agents'
    token budgets and benchmarks/mcp_tokens.py use; prompt.estimate_tokens is ~10x slower)."""
    return -(-len(dumps(payload)) // CHARS_PER_TOKEN)
