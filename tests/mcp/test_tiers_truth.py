"""Item 19: while MiniLM fills in behind a complete static tier, `search_code` and
`get_context` say which tiers answered (lexical + static over every chunk) and how far MiniLM
is, never "results come mostly from lexical search".

A real `codeask index` (first pass: lexical + static vectors) and a real `codeask mcp`, which
starts the MiniLM tier in the background: ~1,800 chunks take it minutes on this machine, the
calls come within seconds of the start, so MiniLM is still partial when they answer."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pygit2

from support import codeask
from support.mcp_harness import build_project, call, gitrepo, mcp_session, server_env

FILES, FUNCTIONS = 300, 6
NOTE = re.compile(
    r"answered by lexical \+ static( \+ MiniLM)? \(static: all (\d+) chunks; "
    r"MiniLM: (\d+) of (\d+) chunks \(\d+%\), filling in\)"
)


def filler() -> dict[str, str]:
    """Look-alike modules, so the MiniLM tier has minutes of work."""
    return {
        f"src/handlers/mod{i}.py": "".join(
            f'def handler_{i}_{j}(request, value):\n    """Handle request {i} {j}."""\n'
            f"    return value * {j} + {i}\n\n\n"
            for j in range(FUNCTIONS)
        )
        for i in range(FILES)
    }


def test_search_code_and_get_context_name_the_tiers_that_answered(tmp_path: Path) -> None:
    project = build_project(tmp_path / "shop")
    gitrepo.commit(pygit2.Repository(str(project)), filler(), "Add handlers", gitrepo.BOB)
    codeask("index", str(project), env=server_env(), check=True)

    async def scenario() -> tuple[dict[str, object], dict[str, object]]:
        async with mcp_session(project) as client:
            found = await call(client, "search_code", query="expiring cache eviction")
            context = await call(client, "get_context", question="how does the cache expire?")
            return found, context

    found, context = asyncio.run(scenario())
    index = found["index"]
    assert isinstance(index, dict)
    assert index["tiers_answered"][:2] == ["lexical", "static"], index
    note = NOTE.search(index["note"])
    assert note, index
    chunks = int(note[2])
    assert int(note[3]) < chunks == int(note[4]), "MiniLM is still filling in"
    assert "mostly" not in str(found)
    context_index = context["index"]
    assert isinstance(context_index, dict) and NOTE.search(context_index["note"]), context_index
    text = str(context["context"])
    assert "## Index\nIndex not complete: search answered by lexical + static" in text, text[:400]
    assert NOTE.search(text) and "mostly" not in text
