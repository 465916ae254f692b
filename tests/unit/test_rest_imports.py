"""What a long-lived process holds but its work does not need (issue 29: a language server at
rest on sphinx ≤ 250 MB). The LLM clients (httpx and what it pulls, ~14-20 MB) load when a
question is asked or the health probe runs, not with the code that can answer them. Run in
fresh interpreters: their `sys.modules` say exactly what each step imported."""

from __future__ import annotations

from pathlib import Path

from fresh import last_json, plain_env

from support import codeask

LOADED = """
import json, sys
{code}
print(json.dumps(sorted(name for name in {names!r} if name in sys.modules)))
"""


def loaded_after(code: str, names: list[str], env: dict[str, str] | None = None) -> list[str]:
    """Which of `names` are in `sys.modules` after a fresh interpreter runs `code`."""
    return list(last_json(["-c", LOADED.format(code=code, names=names)], env))


def indexed_project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A one-file project indexed by `codeask index` in its own cache, and that environment."""
    project = tmp_path / "demo"
    project.mkdir()
    (project / "cache.py").write_text("class LRUCache:\n    '''Evicts the oldest entry.'''\n")
    env = dict(plain_env(), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    codeask("index", str(project), env=env, timeout=600, check=True)
    return project, env


def test_the_language_server_imports_no_llm_client() -> None:
    # every feature module, the health report's code included (VS Code may ask for it)
    assert loaded_after("import codeask.lsp.server", ["httpx", "codeask.core.llm"]) == []


def test_the_health_probe_imports_the_llm_client_when_it_runs() -> None:
    probe = (
        "import asyncio\n"
        "from codeask.config import LLMSettings\n"
        "from codeask.core.checks.health import llm_health\n"
        "found = asyncio.run(llm_health(LLMSettings(base_url='http://127.0.0.1:9'), 1.0))\n"
        "assert not found.reachable, found\n"
    )
    # the list above names what the report's code could have loaded
    assert loaded_after(probe, ["httpx", "codeask.core.llm"]) == ["codeask.core.llm", "httpx"]


def test_a_search_with_the_query_model_cached_loads_no_derivation_module(tmp_path: Path) -> None:
    # deriving the int8 query model runs a child in a scratch folder; a search whose model is
    # cached (every search after the first) needs neither module (issue 29: search CPU)
    project, env = indexed_project(tmp_path)
    search = (
        "from codeask.cli import main\n"
        f"code = main(['search', '--no-daemon', '--root', {str(project)!r}, "
        "'--mode', 'hybrid', 'least recently used cache'])\n"
        "assert code == 0, code\n"
    )
    names = ["subprocess", "tempfile"]
    assert loaded_after(search, names, env) == []


def test_a_prompt_only_ask_loads_no_llm_client_and_no_pygit2(tmp_path: Path) -> None:
    # `codeask ask --prompt-only` calls no model (issue 29: ≤ 150 MB before the answer); a
    # folder with no repository needs no git library either
    project, env = indexed_project(tmp_path)
    ask = (
        "import contextlib, io\n"
        "from codeask.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    code = main(['ask', '--prompt-only', '--no-daemon', '--root', {str(project)!r}, "
        "'which cache evicts the oldest entry?'])\n"
        "assert code == 0 and 'LRUCache' in out.getvalue(), (code, out.getvalue())\n"
    )
    assert loaded_after(ask, ["httpx", "pygit2"], env) == []
