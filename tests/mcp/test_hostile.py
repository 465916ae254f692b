"""Issue 27, trust: what an agent (or text it read) may send `codeask mcp`, and what it gets.

Paths outside the workspace (`..`, absolute, a symlink out, a credential file) are tool errors;
oversized, NUL and unpaired-surrogate text are clear tool errors and the server goes on
answering; a refused root says why; a project file's protected settings are refused; stdout
carries nothing but the protocol.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.mcp_harness import (
    RawPipe,
    build_project,
    call,
    mcp_session,
    server_env,
    tool_error,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = build_project(tmp_path / "shop")
    outside = tmp_path / "outside.py"
    outside.write_text("def private_thing():\n    return 'not yours'\n", encoding="utf-8")
    (root / "src" / "link_out.py").symlink_to(outside)
    (root / ".env").write_text("API_TOKEN=abc\n", encoding="utf-8")
    return root


async def test_paths_outside_the_workspace_are_tool_errors(project: Path) -> None:
    async with mcp_session(project) as client:
        for path in ("../../etc/passwd", "/etc/passwd", "src/../../outside.py", "src/link_out.py"):
            text = await tool_error(client, "find_related", path=path, line=1)
            assert "outside every workspace folder" in text, (path, text)
        assert "not indexed here" in await tool_error(client, "find_related", path=".env", line=1)
        text = await tool_error(client, "search_history", query="x", path="/etc/passwd", line=1)
        assert "outside every workspace folder" in text
        text = await tool_error(client, "find_related", path="src/\x00shop.py", line=1)
        assert "NUL" in text
        answer = await call(client, "find_related", path="src/shop/calc.py", line=1)
        assert answer["path"] == str(project / "src/shop/calc.py")  # still answering


async def test_bounded_and_well_formed_arguments(project: Path) -> None:
    """A 1 MB query, NUL, out-of-range numbers, unknown kinds, bad dates: tool errors that
    name the argument; the server answers the next call."""
    async with mcp_session(project) as client:
        huge = await tool_error(client, "search_code", query="x" * 1_000_000)
        assert "query" in huge and "20000" in huge.replace(",", "")
        assert "NUL" in await tool_error(client, "search_code", query="parse\x00tokens")
        assert "NUL" in await tool_error(client, "get_context", question="why\x00")
        assert "k" in await tool_error(client, "search_code", query="parse", k=0)
        assert "k" in await tool_error(client, "search_code", query="parse", k=10_000)
        kind = await tool_error(client, "search_code", query="parse", kind="bogus")
        assert "`kind` must be one of" in kind
        date = await tool_error(client, "search_history", query="cache", since="yesterday")
        assert "`since` must be a date" in date
        assert "empty" in await tool_error(client, "search_code", query="   ")
        assert "`line` needs `path`" in await tool_error(
            client, "search_history", query="cache", line=3
        )
        assert "question" in await tool_error(client, "get_context", question="q" * 60_000)
        answer = await call(client, "search_code", query="expiring cache")
        assert "results" in answer


def test_unpaired_surrogates_and_runaway_lines_are_answered(project: Path) -> None:
    """What the SDK client cannot send: an unpaired surrogate escape (valid JSON, invalid
    text) and a 9 MB line. Each request gets an answer naming the problem; the server then
    answers the next request; every line on stdout is JSON-RPC."""
    pipe = RawPipe(project, server_env()).start()
    try:
        call = {
            "jsonrpc": "2.0",
            "id": 41,
            "method": "tools/call",
            "params": {"name": "search_code", "arguments": {"query": "PLACEHOLDER"}},
        }
        line = json.dumps(call).replace("PLACEHOLDER", "cache \\ud800 eviction")
        pipe.send_line(line.encode())
        answer = pipe.read()
        assert answer["id"] == 41
        assert answer["result"]["isError"] is True
        assert "`query` contains an unpaired surrogate" in answer["result"]["content"][0]["text"]

        list_call = '{"jsonrpc":"2.0","id":42,"method":"tools/list","params":{"cursor":"\\udfff"}}'
        pipe.send_line(list_call.encode())
        refused = pipe.read()
        assert refused["id"] == 42 and refused["error"]["code"] == -32602

        runaway = (
            b'{"jsonrpc":"2.0","id":43,"method":"tools/call","params":{"name":"search_code","arguments":{"query":"'
            + b"y" * (9 * 1024 * 1024)
            + b'"}}}'
        )
        pipe.send_line(runaway)
        refused = pipe.read()
        assert refused["id"] == 43 and "refused" in refused["error"]["message"]

        ok = pipe.request("tools/call", {"name": "index_status", "arguments": {}})
        assert ok["result"].get("isError") is not True
        assert json.loads(ok["result"]["content"][0]["text"])["folders"]
    finally:
        assert pipe.close() == 0


async def test_a_refused_root_says_why(tmp_path: Path) -> None:
    """`codeask mcp` in a home folder (the same root rule as `codeask index`): every tool is
    an error saying why and how to opt in; nothing is indexed there."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.py").write_text("def remember():\n    pass\n", encoding="utf-8")
    env = server_env(HOME=str(home))
    async with mcp_session(home, env=env) as client:
        text = await tool_error(client, "search_code", query="remember")
        assert "refusing to index" in text and "--allow-broad-root" in text
        status = await call(client, "index_status")
        assert status["folders"][0]["state"] == "refused"
    assert not (home / ".codeask").exists()


async def test_protected_project_settings_are_refused(project: Path, tmp_path: Path) -> None:
    """A cloned repository's .codeask.toml may not move the index out of the workspace nor
    turn secret skipping off (config.py's trust rules; the MCP server never trusts)."""
    elsewhere = tmp_path / "elsewhere"
    (project / ".codeask.toml").write_text(
        f'[index]\nlocation = "{elsewhere}"\nskip_secrets = false\n', encoding="utf-8"
    )
    async with mcp_session(project) as client:
        status = await call(client, "index_status")
        folder = status["folders"][0]
        assert folder["index_dir"] == str(project / ".codeask")
        refused = " ".join(folder["settings_refused"])
        assert "index.location" in refused and "index.skip_secrets" in refused
        assert "not indexed here" in await tool_error(client, "find_related", path=".env", line=1)
    assert not elsewhere.exists()


def test_stdout_carries_only_the_protocol(project: Path) -> None:
    """With verbose logging on, while the index is built, every stdout line is JSON-RPC."""
    log = project.parent / "verbose.log"
    pipe = RawPipe(project, server_env(), flags=("-vv",), stderr=log).start()
    try:
        for query in ("cache", "parser", "evaluate"):
            answer = pipe.request(
                "tools/call", {"name": "search_code", "arguments": {"query": query}}
            )
            assert answer["jsonrpc"] == "2.0" and "result" in answer
    finally:
        assert pipe.close() == 0
    assert pipe.proc.stdout is not None
    assert pipe.proc.stdout.read() == b""  # nothing after the last answer
    assert "DEBUG" in log.read_text(errors="replace")  # the log went to stderr
