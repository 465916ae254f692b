"""A server with only the static tier (`embed.tiers = ["static"]`) finishes indexing: the
status says ready, 100%, not warming, and the embedding thread ends instead of waiting
forever for MiniLM vectors that tier list never builds (found by a daemon test: such a
server stayed `indexing` with 0 embedded)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.lsp_harness import session, wait_for

pytestmark = pytest.mark.slow


def settled(state: dict[str, Any]) -> bool:
    return state["state"] == "ready" and not state["warming"]


async def test_static_only_server_reports_ready(project: Path, shared_cache: Path) -> None:
    options = {"embed": {"tiers": ["static"]}}
    async with session([project], shared_cache, options=options) as lsp:
        state = await wait_for(lsp.status, settled, 60)
        folder = state["folders"][0]
        assert state["percent"] == 100 and state["chunks"] > 0
        assert folder["tiers"] == ["static"]
        assert folder["staticEmbedded"] == state["chunks"]
        hits = await lsp.search("least recently used cache", filters={"scope": "code"})
        assert any(h["uri"].endswith("app/cache.py") for h in hits)
