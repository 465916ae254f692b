"""A long-lived writer (`codeask mcp`) whose embedding server was down when it opened the index
fills the model tier once the server answers, without a restart.

Real processes: `codeask mcp` (the SDK's stdio client) with `embed.provider = "openai"` pointing
at a loopback /v1/embeddings (tests/support/embed_endpoint.py) that is down at first. Lexical and
static answer from the start; the server comes up, a commit moves HEAD (the writer's next pass),
and the model tier fills in (the writer's embedding thread learns the size at its next run):
every chunk embedded, the new file too, a search answered by the model tier too. Before, the
writer kept saying "did not answer when this index opened" until it was restarted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pygit2
import pytest

from support.embed_endpoint import Endpoint
from support.mcp_harness import build_project, call, gitrepo, mcp_session, server_env, wait_for

pytestmark = pytest.mark.slow

NEW_FILE = {
    "src/shop/invoice.py": '"""Invoices."""\n\n\ndef total_with_vat(amount, rate):\n'
    '    """Add value-added tax to an invoice amount."""\n    return amount * (1 + rate)\n'
}


async def test_the_model_tier_fills_in_once_the_server_answers_without_a_restart(
    tmp_path: Path,
) -> None:
    root = build_project(tmp_path / "shop")
    endpoint = Endpoint()  # down: nothing listens at its address yet
    env = server_env(
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        CODEASK_EMBED__PROVIDER="openai",
        CODEASK_EMBED__ENDPOINT=endpoint.url,
        CODEASK_EMBED__MODEL="code-model",
        CODEASK_EMBED__REQUEST_TIMEOUT="3",
    )
    try:
        async with mcp_session(root, env=env, stderr=tmp_path / "mcp.log") as client:

            async def first_pass() -> dict[str, Any] | None:
                folder = (await call(client, "index_status"))["folders"][0]
                return folder if folder.get("tiers", {}).get("static", {}).get("done") else None

            folder = await wait_for(first_pass, 120)
            assert folder["tiers"]["minilm"]["done"] == 0
            files = folder["files"]
            hits = (await call(client, "search_code", query="expiring cache eviction"))["results"]
            assert hits and hits[0]["path"].endswith("src/shop/cache.py")

            endpoint.start()
            repo = pygit2.Repository(str(root))
            gitrepo.commit(repo, NEW_FILE, "Add invoices", gitrepo.ALICE, gitrepo.EPOCH + 172_800)

            async def filled() -> dict[str, Any] | None:
                folder = (await call(client, "index_status"))["folders"][0]
                minilm = folder["tiers"]["minilm"]
                whole = folder["files"] == files + 1 and minilm["done"] == minilm["total"]
                # `ready`: the backlog is done and the model's query path built (mcp/folders.py
                # `phase`); between the last vector and that, searches use lexical + static
                ready = folder["state"] == "ready"
                return folder if whole and ready else None  # the new file in, every chunk embedded

            await wait_for(filled, 120)
            answer = await call(client, "search_code", query="value-added tax on an invoice")
            assert "minilm" in answer["index"]["tiers_answered"]
            paths = [hit["path"] for hit in answer["results"]]  # the stand-in's vectors carry
            assert any(p.endswith("src/shop/invoice.py") for p in paths), answer
    finally:
        endpoint.close()
    assert endpoint.requests > 0
