"""`codeask mcp` on a folder past `embed.model_full_pass_chunks` (here 0): its writer runs no
model backlog (the folder is `ready`, nothing reported missing), `index_status` says what the
model tier covers, and a pasted report is ranked by the model tier on demand once its query
model is loaded (before that, lexical + static answer at once, as for a full tier)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.mcp_harness import build_project, call, mcp_session, server_env, wait_for

pytestmark = pytest.mark.slow

REPORT = (
    "Cached prices are never evicted\n"
    "After the expiry time has passed, the cache still returns the old value instead of "
    "dropping it and computing a fresh one; the least recently used entry also stays.\n"
    "Expected: an expired entry is gone on the next read.\n"
    "Seen in the shop since the last upgrade.\n"
)


async def test_index_status_says_the_model_tier_is_on_demand(tmp_path: Path) -> None:
    root = build_project(tmp_path / "shop")
    env = server_env(  # every report ranked by the model (on demand the gate is C++ only)
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        CODEASK_EMBED__MODEL_FULL_PASS_CHUNKS="0",
        CODEASK_RETRIEVE__MODEL_TIER_FOR="reports",
    )
    async with mcp_session(root, env=env, stderr=tmp_path / "mcp.log") as client:

        async def ready() -> dict[str, Any] | None:
            folder: dict[str, Any] = (await call(client, "index_status"))["folders"][0]
            return folder if folder["state"] == "ready" else None

        folder = await wait_for(ready, 120)
        assert folder["tiers"]["minilm"]["done"] == 0
        assert folder["model_tier"] == "on demand: 0 chunks cached, 0 of opened or changed files"
        assert not any("minilm" in line for line in folder.get("missing", []))

        async def with_model() -> dict[str, Any] | None:
            # the first searches answer with lexical + static while the query model loads
            answer = await call(client, "search_code", query=REPORT)
            return answer if "minilm" in answer["index"]["tiers_answered"] else None

        answer = await wait_for(with_model, 120)
        assert answer["results"]
        folder = (await call(client, "index_status"))["folders"][0]  # its candidates were kept
        assert not folder["model_tier"].startswith("on demand: 0 "), folder
