"""`codeask/health` from the real `codeask serve`: typed fields, the settings in effect, a dead
endpoint answered quickly, credentials never sent back."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from codeask import __version__
from support.lsp_harness import raw_request, session, wait_for
from support.models_endpoint import closed_port, models_endpoint

pytestmark = pytest.mark.slow

LLM_KEYS = {
    "provider", "endpoint", "modelsUrl", "model", "reachable", "modelPresent", "models",
    "loopback", "error",
}  # fmt: skip
INDEX_KEYS = {
    "state", "warming", "percent", "files", "chunks", "embedded", "folders", "tiersAnswered",
    "tiersNote",
}  # fmt: skip


async def test_health_reports_the_endpoint_the_model_tiers_and_index(
    project: Path, shared_cache: Path
) -> None:
    with models_endpoint(["stand-in", "other"]) as seen:
        options = {
            "llm": {
                "provider": "openai",
                "baseUrl": f"http://127.0.0.1:{seen.port}",
                "model": "stand-in",
            },
            "embed": {"tiers": ["static"]},
        }
        async with session([project], shared_cache, options=options) as lsp:

            async def health() -> dict[str, Any]:
                return await lsp.request("codeask/health", {})

            # once the folder is open its settings are the ones reported (and askCode's)
            report = await wait_for(health, lambda h: h["indexState"]["folders"][0]["model"], 60)
            assert set(report) == {"version", "python", "llm", "embedding", "indexState"}
            assert report["version"] == __version__ and report["python"][0].isdigit()
            llm = report["llm"]
            assert set(llm) == LLM_KEYS
            assert llm["provider"] == "openai" and llm["model"] == "stand-in"
            assert llm["endpoint"] == f"http://127.0.0.1:{seen.port}"
            assert llm["modelsUrl"] == f"http://127.0.0.1:{seen.port}/v1/models"
            assert llm["reachable"] is True and llm["modelPresent"] is True
            assert llm["models"] == 2 and llm["error"] == "" and llm["loopback"] is True
            assert "/v1/models" in seen.paths
            embedding = report["embedding"]
            assert embedding["model"] == "codeask/all-MiniLM-L6-v2-int8"
            assert [(t["name"], t["available"]) for t in embedding["tiers"]] == [("static", True)]
            state = report["indexState"]
            assert set(state) == INDEX_KEYS
            assert state["folders"][0]["root"] == str(project)
            assert state["folders"][0]["tiers"] == ["static"]

            # null params as Lua sends them, like codeask/indexStatus
            again = await raw_request(lsp.client, "codeask/health", [])
            assert again["llm"]["reachable"] is True
            with pytest.raises(JsonRpcException) as bad:
                await raw_request(lsp.client, "codeask/health", "all of it")
            assert bad.value.code == -32602 and "params must be an object" in str(bad.value)

            # settings change: a dead endpoint with credentials in its URL
            port = closed_port()
            dead = {"baseUrl": f"http://alice:s3cr3t@127.0.0.1:{port}", "model": "stand-in"}
            lsp.client.set_configuration({"llm": {"provider": "openai", **dead}}, section="codeask")
            lsp.client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings={"codeask": None})
            )
            report = await wait_for(health, lambda h: not h["llm"]["reachable"], 30)
            started = time.monotonic()
            report = await health()
            assert time.monotonic() - started < 2.5  # bounded probe, never a hang
            llm = report["llm"]
            assert llm["endpoint"] == f"http://***@127.0.0.1:{port}"
            assert llm["modelPresent"] is False and "refused" in llm["error"]
            assert "s3cr3t" not in str(report) and "alice" not in str(report)
