"""`codeask mcp` retries an unreachable team database (`retry_base`, the engine's one index
driver per folder: core/driver) and reads its base once it answers; MCP's own loop never
retried. A real `codeask mcp` over stdio, a real git clone of a published repository, the
embedded PostgreSQL behind a TCP relay that is down at the start and then comes up. The first
retry is due 30 s after the first poll (core/indexer/backoff.py), so this test takes ~40 s."""

from __future__ import annotations

from pathlib import Path

import pytest
from tcp_relay import Relay
from test_pg_team_overlay import DSN_ENV
from test_pg_team_retry import publish, relay, via

from support.mcp_harness import call, mcp_session, server_env, wait_for

pytestmark = pytest.mark.slow
__all__ = ["relay"]  # the fixture, shared with test_pg_team_retry


async def test_mcp_retries_an_unreachable_team_database_and_reads_its_base(
    pg_dsn: str, relay: Relay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone, sha = publish(pg_dsn, tmp_path, monkeypatch)
    env = server_env(
        **{
            DSN_ENV: via(relay, pg_dsn),  # the relay is down: nothing answers there yet
            "CODEASK_INDEX__BACKEND": "postgres",
            "CODEASK_INDEX__DSN_ENV": DSN_ENV,
            "CODEASK_HISTORY__ENABLED": "false",
        }
    )
    async with mcp_session(clone, env=env, stderr=tmp_path / "mcp.log") as client:

        async def team() -> str:
            return (await call(client, "index_status"))["folders"][0].get("team", "")

        async def retrying() -> str:
            line = await team()
            return line if "retrying in" in line else ""

        down = await wait_for(retrying, 60)
        assert down.startswith("no team base: database unreachable, indexed locally"), down
        assert "sup3r" not in down and "@" not in down.split(";")[0]

        relay.up()

        async def based() -> str:
            line = await team()
            return line if line.startswith("team base ") else ""

        up = await wait_for(based, 120)
        assert up.startswith(f"team base github.com/acme/shop@{sha[:12]}"), up
        hits = (await call(client, "search_code", query="shipping_fee"))["results"]
        assert hits and hits[0]["path"].endswith("shop/shipping.py")
