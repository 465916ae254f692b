"""What a search says answered it is what ranked it (core/search/tiers.py, issue 43/44).

Before, `tiers_answered` named MiniLM whenever a folder had its vectors, even where the model
gate (core/search/model_gate.py) or the typed-question path left it out. Real processes on
git repositories the test makes: `codeask index --full` (every tier filled), then `codeask
search --json` and a real `codeask mcp`'s `search_code` and `get_context`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from test_model_gate import JAVASCRIPT, PYTHON, REPORT

from support import codeask, in_process_env
from support.gitrepo import ALICE, EPOCH, commit, make_repo
from support.mcp_harness import call, mcp_session

TYPED = "retry doubling the delay"


def indexed(tmp_path: Path, files: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """A repository of `files`, indexed with every tier, and the environment that reads it."""
    root = tmp_path / "repo"
    commit(make_repo(root), files, "code", ALICE, EPOCH)
    homes = {f"XDG_{name.upper()}_HOME": str(tmp_path / name) for name in ("config", "cache")}
    env = in_process_env(CODEASK_HISTORY__ENABLED="false", HF_HUB_OFFLINE="1", **homes)
    codeask("index", "--full", str(root), cwd=root, env=env, timeout=600, check=True)
    return root, env


def searched(root: Path, env: dict[str, str], query: str) -> tuple[list[str], set[str]]:
    """`codeask search --json`: the tiers it says answered, and every hit's retrievers."""
    args = ("search", query, "--json", "--root", str(root))
    found = json.loads(codeask(*args, cwd=root, env=env, timeout=600, check=True).stdout)
    assert found["results"], found
    return found["tiers_answered"], {r for hit in found["results"] for r in hit["retrievers"]}


@pytest.mark.slow
def test_a_typed_search_does_not_say_minilm_answered_where_it_did_not_rank(
    tmp_path: Path,
) -> None:
    """Python code, the packaged MiniLM: a typed question is ranked by lexical + static (the
    model tier answers reports), a pasted report by the model tier too; each says so."""
    root, env = indexed(tmp_path, PYTHON)
    tiers, retrievers = searched(root, env, TYPED)
    assert "dense" not in retrievers
    assert tiers == ["lexical", "static"]
    tiers, retrievers = searched(root, env, REPORT)
    assert "dense" in retrievers
    assert tiers == ["lexical", "static", "minilm"]


@pytest.mark.slow
def test_the_model_gate_leaves_minilm_out_of_every_answer_it_kept_it_from(
    tmp_path: Path,
) -> None:
    """JavaScript code (where the packaged model was measured to hurt reports): neither a
    report searched by the CLI nor the MCP tools' answers name MiniLM."""
    root, env = indexed(tmp_path, JAVASCRIPT)
    tiers, retrievers = searched(root, env, REPORT)
    assert "dense" not in retrievers and "static" in retrievers
    assert tiers == ["lexical", "static"]

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with mcp_session(root, env={**env, "PYTHONUNBUFFERED": "1"}) as client:
            found = await call(client, "search_code", query=REPORT)
            context = await call(client, "get_context", question=REPORT)
            return found, context

    found, context = asyncio.run(scenario())
    assert found["index"]["tiers_answered"] == ["lexical", "static"], found["index"]
    assert context["index"]["tiers_answered"] == ["lexical", "static"], context["index"]
