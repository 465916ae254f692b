"""The providers by name: the one list of `llm.provider` values.

`LLMSettings.provider`, the VS Code enum and Neovim's health check must name the same providers;
tests/test_provider_registry.py holds them to this list.
"""

from __future__ import annotations

from codeask.core.llm import ollama, openai
from codeask.core.llm.errors import LLMError
from codeask.core.llm.protocol import ChatProvider

#: Name → provider, in the order people are offered them (the first is the default).
PROVIDERS: dict[str, ChatProvider] = {p.name: p for p in (ollama.PROVIDER, openai.PROVIDER)}


def names() -> tuple[str, ...]:
    """The registered `llm.provider` values."""
    return tuple(PROVIDERS)


def choices() -> str:
    """The names as a hint says them: `ollama or openai`."""
    *rest, last = names()
    return f"{', '.join(rest)} or {last}" if rest else last


def get(name: str) -> ChatProvider:
    """The provider registered as `name`; LLMError naming the known ones otherwise."""
    try:
        return PROVIDERS[name]
    except KeyError:
        known = ", ".join(PROVIDERS)
        raise LLMError(f"unknown llm.provider '{name}' (known: {known})") from None
