"""Cited context: the prompt `codeask ask --prompt-only` builds, redacted for a model we do not
know. The ask orchestrator is imported when asked for (the language server starts without it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from codeask.core.indexer import FolderIndex
from codeask.core.search.retrieve import Hit
from codeask.core.source.redact_outbound import redact_path, redact_secrets, unredact_path
from codeask.core.storage.lexical.index import expand_query, query_terms

__all__ = [
    "Context",
    "context_for",
    "query_words",
    "redact_path",
    "redact_secrets",
    "unredact_path",
]


def query_words(query: str) -> frozenset[str]:
    """The code-aware terms of a query (with the stems of its prose words), lower-cased: what a
    snippet of a hit is cut around."""
    return frozenset(query_terms(expand_query(query)))


@dataclass
class Context:
    """What `codeask ask --prompt-only` would send, redacted as for a remote endpoint."""

    messages: list[dict[str, str]]
    sources: list[Hit]
    prompt_tokens: int
    truncated: bool
    index_note: str
    redactions: int = 0


def context_for(folders: Sequence[FolderIndex], question: str, *, k: int | None = None) -> Context:
    """The prompt `codeask ask --prompt-only` builds (same retrieval, history routing and
    budget), every message redacted as for a non-loopback endpoint: whoever asks for context
    sends it to a model we do not know."""
    from codeask.core.ask.answer import AskRequest, prepare
    from codeask.core.source.redact_outbound import redact_secrets

    prepared = prepare(AskRequest(question=question, folders=list(folders), k=k, prompt_only=True))
    prompt = prepared.prompt
    messages: list[dict[str, str]] = []
    redactions = prompt.redactions
    for message in prompt.messages:
        clean, count = redact_secrets(message["content"])
        redactions += count
        messages.append({"role": message["role"], "content": clean})
    return Context(
        messages=messages,
        sources=prepared.sources,
        prompt_tokens=prompt.prompt_tokens,
        truncated=prompt.truncated or prompt.left_out > 0,
        index_note=prepared.index_note,
        redactions=redactions,
    )
