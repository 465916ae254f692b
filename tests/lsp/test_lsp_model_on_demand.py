"""The editor's folder state says what the model tier covers when a folder is past
`embed.model_full_pass_chunks` (here 0: every folder on demand): the real `codeask serve`
embeds no backlog, counts the tier as covering what it ranks (not warming forever), embeds a
file the user saves, and a pasted report's candidates are kept and counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.lsp_harness import session, wait_for

pytestmark = pytest.mark.slow

#: every report ranked by the model (the packaged model's gate on demand is C++ only)
ON_DEMAND = {
    "CODEASK_EMBED__MODEL_FULL_PASS_CHUNKS": "0",
    "CODEASK_RETRIEVE__MODEL_TIER_FOR": "reports",
}
REPORT = (
    "The retry helper gives up after the first failure\n"
    "When fetching a URL fails once, retry returns the error at once instead of waiting and "
    "trying again with a longer delay each time.\n"
    "Expected: it keeps trying until the attempts run out.\n"
    "Seen on every request since the last upgrade.\n"
)


def folder_of(state: dict[str, Any]) -> dict[str, Any]:
    folders: list[dict[str, Any]] = state["folders"]
    return folders[0]


async def test_index_status_says_the_model_tier_is_on_demand(
    project: Path, shared_cache: Path
) -> None:
    async with session([project], shared_cache, env=ON_DEMAND) as lsp:
        state = await lsp.wait_ready()  # ready and not warming: nothing fills in
        folder = folder_of(state)
        assert folder["embedded"] == 0
        assert folder["modelTier"] == "on demand: 0 chunks cached, 0 of opened or changed files"
        assert state["embedded"] == state["chunks"]

        path = project / "app" / "cache.py"
        path.write_text(path.read_text() + "\n\ndef clear(cache):\n    cache.items.clear()\n")
        lsp.save(lsp.uri("app/cache.py"))  # a file the user changes is embedded at once

        def saved(state: dict[str, Any]) -> bool:
            return folder_of(state)["embedded"] > 0

        folder = folder_of(await wait_for(lsp.status, saved, 60))
        embedded = folder["embedded"]
        assert folder["modelTier"].endswith(f", {embedded} of opened or changed files")

        assert await lsp.search(REPORT)
        cached = folder_of(await lsp.status())["modelTier"]
        assert cached.startswith("on demand: ") and not cached.startswith("on demand: 0 "), cached
