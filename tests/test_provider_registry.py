"""The LLM provider registry is the one list of providers: everything else that names them agrees.

The settings schema (`LLMSettings.provider` is a Literal: config.py is below the engine and
cannot import it) and VS Code's setting enum each hold a copy of the names; these tests fail as
soon as a copy drifts from the registry. The default endpoint and model live in the provider
modules only (the settings say "" for "the provider's"). Neovim's health check holds none: it
asks the server (`codeask/health`), and a test below keeps it that way.
"""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

import pytest

from codeask.config import LLMSettings
from codeask.core.llm import (
    ChatProvider,
    LineStreamProvider,
    LLMError,
    chat_url,
    get_provider,
    resolve,
)
from codeask.core.llm.registry import PROVIDERS, get, names

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_JSON = ROOT / "editor-clients" / "vscode" / "package.json"
HEALTH_LUA = ROOT / "editor-clients" / "neovim" / "lua" / "codeask" / "health.lua"


def vscode_setting(key: str) -> dict[str, typing.Any]:
    """One `codeask.*` setting's schema from the extension's manifest."""
    manifest = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    setting: dict[str, typing.Any] = manifest["contributes"]["configuration"]["properties"][key]
    return setting


def test_the_settings_literal_names_the_registered_providers() -> None:
    provider_type = typing.get_type_hints(LLMSettings)["provider"]
    assert typing.get_args(provider_type) == names()


@pytest.mark.parametrize("name", names())
def test_the_server_default_endpoint_is_the_provider_modules(name: str) -> None:
    """Choosing only `llm.provider` talks to that provider's default endpoint and model, which
    live in its module only: the settings hold no copy (empty means "the provider's")."""
    chosen = LLMSettings(provider=name)  # type: ignore[arg-type]
    assert (chosen.base_url, chosen.model) == ("", "")
    provider = get_provider(chosen)
    used = resolve(chosen)
    assert (used.base_url, used.model) == (provider.default_base_url, provider.default_model)
    assert provider.chat_url(used) == chat_url(chosen)
    mine = resolve(LLMSettings(provider=name, base_url="http://h:1", model="m"))  # type: ignore[arg-type]
    assert (mine.base_url, mine.model) == ("http://h:1", "m")


def test_every_provider_is_registered_under_its_own_name_and_satisfies_the_protocol() -> None:
    methods = [m for m in vars(ChatProvider) if not m.startswith("_")]
    members = [*ChatProvider.__annotations__, *methods]
    for name, provider in PROVIDERS.items():
        assert provider.name == name
        missing = [m for m in members if not hasattr(provider, m)]
        assert not missing, f"{name} lacks {missing}"
        if isinstance(provider, LineStreamProvider):
            assert provider.chat_path.startswith("/") and provider.models_path.startswith("/")


def test_an_unknown_provider_is_a_clear_llm_error() -> None:
    with pytest.raises(LLMError, match=r"unknown llm.provider 'nope' \(known: ollama, openai"):
        get("nope")


def test_vscode_enum_and_defaults_match_the_registry() -> None:
    setting = vscode_setting("codeask.llm.provider")
    assert tuple(setting["enum"]) == names()
    assert len(setting["enumDescriptions"]) == len(names())
    assert setting["default"] == LLMSettings().provider
    # no copy of the provider's endpoint or model: empty means "the provider's default"
    assert vscode_setting("codeask.llm.baseUrl")["default"] == ""
    assert vscode_setting("codeask.llm.model")["default"] == ""


def test_neovim_health_holds_no_copy_of_the_providers() -> None:
    """health.lua renders the server's `codeask/health` answer: no default URL, no model-list
    path, no probe of its own (the copies that drifted before the server was asked)."""
    text = HEALTH_LUA.read_text(encoding="utf-8")
    assert "protocol.HEALTH" in text
    copies = {p.default_base_url for p in PROVIDERS.values()}
    for name, provider in PROVIDERS.items():
        settings = LLMSettings(provider=name, base_url="")  # type: ignore[arg-type]
        copies.add(provider.models_url(settings))
    found = sorted(c for c in copies if c in text)
    assert not found, f"health.lua holds a copy of {found}; render the server's answer instead"
    assert not re.search(r"\b(curl|new_tcp|getaddrinfo)\b", text), "health.lua probes by itself"
