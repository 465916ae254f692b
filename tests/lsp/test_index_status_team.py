"""`codeask/indexStatus` from the real `codeask serve` carries each folder's team state: the
local backend says so; with `index.backend = "postgres"` and a database nobody answers at, the
folder is indexed locally, searchable, and the status says why there is no base and when the
server tries again (never the DSN's password)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.lsp_harness import session, wait_for
from support.models_endpoint import closed_port

pytestmark = pytest.mark.slow

DSN_ENV = "TEAMSTATE_TEST_DSN"  # not CODEASK_*: the harness passes it on to the server


@pytest.fixture
def dead_dsn(monkeypatch: pytest.MonkeyPatch) -> str:
    """A DSN (with a password) of a port nothing listens on, in the server's environment."""
    dsn = f"postgresql://dev:pw-Zq81x@127.0.0.1:{closed_port()}/team"
    monkeypatch.setenv(DSN_ENV, dsn)
    return dsn


def folder_loaded(state: dict[str, Any]) -> bool:
    return bool(state["folders"] and state["folders"][0].get("team") and state["chunks"])


async def test_local_backend_reports_itself(project: Path, shared_cache: Path) -> None:
    options = {"embed": {"tiers": ["static"]}}
    async with session([project], shared_cache, options=options) as lsp:
        state = await wait_for(lsp.status, folder_loaded, 60)
        assert state["folders"][0]["team"] == {"backend": "local"}


async def test_unreachable_team_database_in_the_status(
    project: Path, shared_cache: Path, dead_dsn: str
) -> None:
    options = {
        "embed": {"tiers": ["static"]},
        "index": {"backend": "postgres", "dsnEnv": DSN_ENV},
    }
    async with session([project], shared_cache, options=options) as lsp:
        # the first idle poll (2 s) starts the backoff: the status then says when it retries
        state = await wait_for(
            lsp.status, lambda s: folder_loaded(s) and "retryIn" in s["folders"][0]["team"], 60
        )
        team = state["folders"][0]["team"]
        assert team["backend"] == "postgres" and team["kind"] == "unreachable"
        assert 0 < team["retryIn"] <= 30
        assert "cannot connect to the team database dev@127.0.0.1" in team["reason"]
        assert "pw-Zq81x" not in str(state)
        assert "base" not in team and "queryError" not in team
        # indexed locally in full: lexical search answers
        hits = await lsp.search("least recently used cache", filters={"scope": "code"})
        assert any(h["uri"].endswith("app/cache.py") for h in hits)
