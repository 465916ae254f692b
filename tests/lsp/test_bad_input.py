"""The issue's bad-input list, each against the real server over stdio."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from support.lsp_harness import (
    NEW_FUNCTION,
    build_project,
    init_params,
    raw_request,
    raw_send,
    session,
    wait_for,
)

pytestmark = pytest.mark.slow


async def _error(coro: object) -> JsonRpcException:
    """The JSON-RPC error a request ends with (fails if it succeeds)."""
    with pytest.raises(JsonRpcException) as caught:
        await coro  # type: ignore[misc]
    return caught.value


async def test_lifecycle_unknown_methods_and_malformed_params(
    project: Path, shared_cache: Path
) -> None:
    async with session([project], shared_cache, initialize=False) as lsp:
        client = lsp.client
        # before initialize: ServerNotInitialized (-32002), notifications dropped silently
        early = await _error(raw_request(client, "workspace/semanticSearch", {"query": "x"}))
        assert early.code == -32002 and "not initialized" in early.message
        await raw_send(client, {"method": "textDocument/didSave", "params": {"textDocument": {}}})
        await client.initialize_session(init_params([project]))

        # a second initialize is an invalid request
        again = await _error(raw_request(client, "initialize", {"capabilities": {}}))
        assert again.code == -32600

        # unknown request → MethodNotFound; unknown notification → ignored
        unknown = await _error(raw_request(client, "codeask/noSuchThing", {}))
        assert unknown.code == -32601
        client.protocol.notify("codeask/noSuchNotification", {"a": 1})

        # malformed params → InvalidParams whose message says what is wrong
        cases = [
            ("workspace/semanticSearch", {"query": 5}, "Expected `str`, got `int` - at `$.query`"),
            ("workspace/semanticSearch", {"query": "x", "k": 0}, "Expected `int` >= 1"),
            ("workspace/semanticSearch", {}, "missing required field `query`"),
            ("workspace/semanticSearch", ["x"], "params must be an object"),
            ("workspace/semanticSearch", {"query": "x", "filters": {"kind": "fn"}}, "$.filters"),
            (  # an invalid glob: said, not a crash of the search (-32603 without a reason)
                "workspace/semanticSearch",
                {"query": "x", "filters": {"pathGlob": "!"}},
                "filters.pathGlob is not a usable glob: Invalid git pattern: '!'",
            ),
            ("workspace/askCode", {"question": 3}, "$.question"),
            ("workspace/askCode", {"question": "   "}, "empty question"),
            (
                "textDocument/hover",
                {"textDocument": {"uri": lsp.uri("app/net.py")}, "position": {"line": "x"}},
                "position",
            ),
            ("workspace/executeCommand", {"command": "codeask.search", "arguments": [5]}, "query"),
            ("workspace/executeCommand", {"command": "codeask.nope", "arguments": []}, "nope"),
            ("workspace/executeCommand", {"command": "codeask.related", "arguments": [1]}, "uri"),
        ]
        for method, params, reason in cases:
            error = await _error(raw_request(client, method, params))
            assert error.code == -32602, (method, params, error)
            assert reason in error.message, (method, params, error.message)

        # the server is fine afterwards, and indexStatus takes null and [] (Lua's `{}`) too
        status = await raw_request(client, "codeask/indexStatus", None)
        assert status["folders"][0]["root"] == str(project)
        status = await raw_request(client, "codeask/indexStatus", [])
        assert status["folders"][0]["root"] == str(project)
        await lsp.wait_ready()
        assert (await lsp.search("is this number prime"))[0]["symbol"] == "is_prime"


async def test_document_outside_every_folder(
    project: Path, tmp_path: Path, shared_cache: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    loose = outside / "scratch.py"
    text = (
        "def download_with_retries(url):\n"
        '    """Fetch an HTTP URL, trying again when the network fails."""\n'
        "    return url\n"
    )
    loose.write_text(text)
    async with session([project], shared_cache) as lsp:
        await lsp.wait_ready()
        lsp.open(loose.as_uri(), text)
        lsp.save(loose.as_uri())
        hover = None
        for _ in range(10):
            hover = await lsp.hover(loose.as_uri(), 1)
            if hover is not None:
                break
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        assert "app/net.py" in hover.contents.value  # served from the workspace's index
        assert "Last changed" not in hover.contents.value  # no blame for foreign files
        await asyncio.sleep(1.0)  # past the debounce: nothing may have been indexed
        assert await lsp.symbols("download_with_retries") == []
        status = await lsp.status()
        assert status["folders"][0]["updates"] == 0
        assert not (outside / ".codeask").exists()


async def test_workspace_folder_disappears(tmp_path: Path, shared_cache: Path) -> None:
    first = build_project(tmp_path / "first")
    second = build_project(tmp_path / "second")
    async with session([first, second], shared_cache) as lsp:
        await lsp.wait_ready()
        shutil.rmtree(second)
        lsp.save(second.joinpath("app/net.py").as_uri())
        lsp.watched(
            (second.joinpath("app/net.py").as_uri(), types.FileChangeType.Deleted),
            (second.as_uri(), types.FileChangeType.Deleted),
        )

        async def second_state() -> dict[str, object]:
            status = await lsp.status()
            return next(f for f in status["folders"] if f["root"] == str(second))

        gone = await wait_for(second_state, lambda f: f["state"] == "error", 10)
        assert gone["message"] == "folder no longer exists"
        assert any("no longer exists" in m.message for m in lsp.client.messages)
        hits = await lsp.search("is this number prime")
        assert hits[0]["symbol"] == "is_prime" and str(first) in hits[0]["uri"]
        hover = None
        for _ in range(10):
            hover = await lsp.hover(first.joinpath("app/cache.py").as_uri(), 13)
            if hover is not None:
                break
        assert hover is not None
        await asyncio.sleep(2.5)  # a poll or two later: the folder was not recreated
        assert not second.exists()

        # it comes back: indexed again
        build_project(second)
        back = await wait_for(second_state, lambda f: f["state"] == "ready", 60)
        assert back["chunks"] > 0


async def test_save_storm_reindexes_once(project: Path, shared_cache: Path) -> None:
    """Saves closer together than the debounce are one reindex. The debounce is 2 s here and the
    saves come ~20 ms apart: a loaded machine slows the loop (it asserted the 50 saves took
    < 1.8 s in all) but cannot space two saves past the debounce."""
    options = {"server": {"debounceMs": 2000}}
    async with session([project], shared_cache, options=options) as lsp:
        await lsp.wait_ready()
        target = project / "app/text.py"
        target.write_text(target.read_text() + NEW_FUNCTION)
        uri = lsp.uri("app/text.py")
        last, widest = time.monotonic(), 0.0
        for _ in range(50):  # 50 saves in about one second
            lsp.save(uri)
            await asyncio.sleep(0.02)
            now = time.monotonic()
            last, widest = now, max(widest, now - last)
        assert widest < 2.0, f"two saves {widest:.2f} s apart: past the debounce"

        async def updates() -> int:
            return int((await lsp.status())["folders"][0]["updates"])

        assert await wait_for(updates, lambda n: n >= 1, 30) == 1
        await asyncio.sleep(1.0)
        assert await updates() == 1
        assert len(lsp.log_lines("reindexed app/text.py")) == 1
        hits = await lsp.search("reverse the order of words", k=3)
        assert "reverse_words" in [h["symbol"] for h in hits]


async def test_client_never_sends_initialized(project: Path, shared_cache: Path) -> None:
    async with session([project], shared_cache, initialize=False) as lsp:
        client = lsp.client
        params = init_params([project])
        client.capabilities = params.capabilities
        await client.initialize_async(params)  # and no `initialized` notification follows
        status = await lsp.status()  # answered at once
        assert status["state"] in ("empty", "indexing", "ready")
        assert isinstance(await lsp.search("prime"), list)
        await lsp.wait_ready()  # indexing started anyway after a grace period
        assert (await lsp.search("is this number prime"))[0]["symbol"] == "is_prime"
        assert lsp.log_lines("no `initialized` from the client")
        await client.shutdown_async(None)
        client.exit(None)


async def test_cancel_requests_mid_flight(project: Path, shared_cache: Path) -> None:
    async with session([project], shared_cache) as lsp:
        await lsp.wait_ready()
        protocol = lsp.client.protocol
        outcomes: list[str] = []
        for n in range(20):
            msg_id = f"cancel-me-{n}"
            params = {"query": "download a web page with retries " * 40}
            future = protocol.send_request("workspace/semanticSearch", params, msg_id=msg_id)
            protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            try:
                await asyncio.wait_for(asyncio.wrap_future(future), 10)
                outcomes.append("answered")
            except JsonRpcException as exc:
                assert exc.code == -32800, exc  # RequestCancelled
                outcomes.append("cancelled")
        assert len(outcomes) == 20  # every request got exactly one response
        assert "cancelled" in outcomes
        assert (await lsp.search("is this number prime"))[0]["symbol"] == "is_prime"
