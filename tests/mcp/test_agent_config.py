"""Item 21: `codeask mcp --print-config CLIENT` prints a line an agent can run as printed: its
executable is a full path that exists, and the command it holds starts a real `codeask mcp`
that the MCP SDK's stdio client lists the five tools of. And `search_history` on a folder that
is not a git repository says why it has no history instead of answering a silent `[]`."""

from __future__ import annotations

import asyncio
import json
import shlex
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from support import codeask
from support.mcp_harness import FILES, TOOLS, build_project, call, mcp_session, server_env

CLIENTS = ("claude", "codex", "cursor", "gemini", "vscode")


def printed(client: str, *paths: Path, cwd: Path) -> tuple[str, str]:
    """(stdout, stderr) of `codeask mcp --print-config CLIENT [paths]`, run from `cwd`."""
    done = codeask(
        "mcp", "--print-config", client, *map(str, paths), cwd=cwd, env=server_env(), timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def server_of(client: str, text: str, workspace: Path) -> list[str]:
    """The server command line inside a client's printed config, as that client reads it."""
    if client in ("claude", "codex"):
        words = shlex.split(text)
        assert words[:4] == [client, "mcp", "add", "codeask"], text
        return words[words.index("--") + 1 :]
    if client == "gemini":
        words = shlex.split(text)
        assert words[:3] == ["gemini", "mcp", "add"], text
        return words[words.index("codeask") + 1 :]
    if client == "vscode":
        words = shlex.split(text)
        assert words[:2] == ["code", "--add-mcp"], text
        server = json.loads(words[2])
    else:
        server = json.loads(text)["mcpServers"]["codeask"]
    args = [a.replace("${workspaceFolder}", str(workspace)) for a in server["args"]]
    return [server["command"], *args]


async def listed_tools(command: list[str], cwd: Path) -> list[str]:
    """The tools a real server started by `command` lists (the SDK's stdio client)."""
    params = StdioServerParameters(command=command[0], args=command[1:], env=server_env(), cwd=cwd)
    with (cwd.parent / "mcp-stderr.log").open("a") as log:
        async with Client(stdio_client(params, errlog=log), read_timeout_seconds=120) as client:  # type: ignore[arg-type]
            return sorted(tool.name for tool in (await client.list_tools()).tools)


@pytest.mark.parametrize("client", CLIENTS)
def test_printed_config_starts_codeask_mcp(client: str, tmp_path: Path) -> None:
    project = build_project(tmp_path / "shop")
    elsewhere = tmp_path / "elsewhere"  # the agent's own folder: not the project, no codeask
    elsewhere.mkdir()
    text, notes = printed(client, project, cwd=elsewhere)
    command = server_of(client, text.strip(), project)
    executable = Path(command[0])
    assert executable.is_absolute() and executable.is_file(), command
    assert command[1:] == ["mcp", str(project.resolve())] or command[1:4] == [
        "-m",
        "codeask",
        "mcp",
    ]
    assert asyncio.run(listed_tools(command, elsewhere)) == sorted(TOOLS)
    if client == "gemini":
        assert "trust" in notes, "Gemini keeps an untrusted folder's servers disabled"


def test_printed_config_without_folders_serves_the_workspace(tmp_path: Path) -> None:
    """No folder named: Claude Code starts the server in the project, which it then serves."""
    project = build_project(tmp_path / "shop")
    text, _ = printed("claude", cwd=project)
    command = server_of("claude", text.strip(), project)
    assert Path(command[0]).is_file() and command[-1] == "mcp"
    assert asyncio.run(listed_tools(command, project)) == sorted(TOOLS)


def test_search_history_outside_git_says_why(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    for rel, text in FILES.items():
        (plain / rel).parent.mkdir(parents=True, exist_ok=True)
        (plain / rel).write_text(text)

    async def scenario() -> dict[str, object]:
        async with mcp_session(plain) as client:
            return await call(client, "search_history", query="expiry timestamp refresh")

    answer = asyncio.run(scenario())
    assert answer["results"] == []
    assert answer["note"] == f"{plain} is not a git repository: no history to search there"


def test_search_history_in_git_has_no_note(tmp_path: Path) -> None:
    project = build_project(tmp_path / "shop")

    async def scenario() -> dict[str, object]:
        async with mcp_session(project) as client:
            return await call(client, "search_history", query="expiry timestamp refresh")

    assert "note" not in asyncio.run(scenario())
