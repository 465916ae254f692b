"""`codeask mcp` runs the engine's one index driver per folder (core/driver, the language
server's): a HEAD move re-reads the files git says changed (`changed_between`), one by one,
ahead of the quiet rescan, where MCP's own loop used to only rescan. A real `codeask mcp` over
stdio on a real git repository; the team-base retry is tests/pg/test_pg_mcp_retry.py."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from support import gitrepo
from support import mcp_harness as mcp
from support.mcp_harness import call, wait_for

pytestmark = pytest.mark.slow

MOVED = {
    "src/shop/cache.py": mcp.FILES["src/shop/cache.py"] + "\n\ndef sweep_stale_entries(cache):\n"
    '    """Drop every entry whose time to live ran out."""\n'
    "    return [key for key in list(cache.entries) if cache.get(key) is None]\n",
    "src/shop/invoice.py": '"""Invoices."""\n\n\ndef total_with_vat(amount, rate):\n'
    '    """Add value-added tax to an invoice amount."""\n    return amount * (1 + rate)\n',
}


async def test_a_head_move_rereads_only_the_files_git_says_changed(tmp_path: Path) -> None:
    root = mcp.build_project(tmp_path / "shop")
    repo = pygit2.Repository(str(root))
    async with mcp.mcp_session(root, env=mcp.server_env(), stderr=tmp_path / "mcp.log") as client:
        first = (await mcp.complete(client))["folders"][0]
        assert "last_files_reindexed" not in first  # no update yet: only the first pass ran

        gitrepo.commit(repo, MOVED, "Sweep stale cache entries; invoices", gitrepo.CAROL)

        async def reread() -> list[str] | None:
            folder = (await call(client, "index_status"))["folders"][0]
            return folder.get("last_files_reindexed")

        assert sorted(await wait_for(reread, 60)) == sorted(MOVED)

        async def found() -> bool:
            hits = (await call(client, "search_code", query="sweep_stale_entries"))["results"]
            return any(h["symbol"].endswith("sweep_stale_entries") for h in hits)

        assert await wait_for(found, 60)
        status = (await call(client, "index_status"))["folders"][0]
        assert status["files"] == first["files"] + 1
