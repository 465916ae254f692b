"""Helpers of the MCP tests: a real `codeask mcp` process driven by the SDK's own stdio client,
a raw line pipe for what the SDK client cannot send, and a small real git repository.

Nothing is mocked: the server runs as a subprocess with its own XDG cache (the test's
isolated one), the client is `mcp.Client` over `StdioServerParameters`.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from codeask.mcp.server import build_server

from . import gitrepo
from .cli import PYTHON_M
from .env import in_process_env

#: The tools as the server itself lists them (issue 43: no test keeps its own copy of the list).
TOOLS = tuple(tool["name"] for tool in build_server([]).listing())

#: The project every tool test searches: a parser, a cache, an HTTP client, one file per topic.
FILES: dict[str, str] = {
    "src/shop/parser.py": '''"""Parse arithmetic expressions into tokens."""


def tokenize_expression(text):
    """Split an arithmetic expression into number and operator tokens."""
    tokens = []
    for part in text.replace("(", " ( ").replace(")", " ) ").split():
        tokens.append(part)
    return tokens


class ExpressionParser:
    """Turn tokens into a tree, honouring operator precedence."""

    def parse(self, text):
        tokens = tokenize_expression(text)
        return self.build_tree(tokens)

    def build_tree(self, tokens):
        return {"op": tokens[0], "args": tokens[1:]}
''',
    "src/shop/cache.py": '''"""A least-recently-used cache with expiry."""

import time


class ExpiringCache:
    """Keep values for a number of seconds; evict the least recently used first."""

    def __init__(self, ttl_seconds, capacity=128):
        self.ttl_seconds = ttl_seconds
        self.capacity = capacity
        self.entries = {}

    def get(self, key):
        value, stored_at = self.entries.get(key, (None, 0))
        if time.time() - stored_at > self.ttl_seconds:
            return None
        return value
''',
    "src/shop/calc.py": '''"""The calculator's entry point."""

from shop.parser import ExpressionParser


def evaluate(text):
    """Evaluate an arithmetic expression typed by the user."""
    tree = ExpressionParser().parse(text)
    return tree
''',
    "README.md": "# shop\n\nA calculator with an expiring cache.\n",
}
FIX_CACHE = {
    "src/shop/cache.py": FILES["src/shop/cache.py"].replace(
        "        return value\n",
        "        self.entries[key] = (value, time.time())\n        return value\n",
    )
}


def build_project(root: Path) -> Path:
    """A git repository with two commits: the files, then a fix to the cache's expiry."""
    repo = gitrepo.make_repo(root)
    gitrepo.commit(repo, FILES, "Initial import of the calculator", gitrepo.ALICE, gitrepo.EPOCH)
    gitrepo.commit(
        repo,
        FIX_CACHE,
        "Refresh the expiry timestamp when a cached value is read",
        gitrepo.BOB,
        gitrepo.EPOCH + 86_400,
    )
    return root


def server_env(**extra: str) -> dict[str, str]:
    """The server's environment: the test's private XDG cache, the offline model."""
    env = in_process_env()
    env.update(HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", **extra)
    return env


def mcp_command(*paths: Path | str, flags: tuple[str, ...] = ()) -> list[str]:
    """`codeask [flags] mcp [paths]` as this test run's Python runs it."""
    return [*PYTHON_M, *flags, "mcp", *map(str, paths)]


@asynccontextmanager
async def mcp_session(
    cwd: Path,
    *paths: Path | str,
    env: dict[str, str] | None = None,
    mode: str = "legacy",
    stderr: Path | None = None,
) -> AsyncIterator[Client]:
    """`codeask mcp [paths]` started in `cwd`, driven by the SDK's stdio client."""
    command = mcp_command(*paths)
    params = StdioServerParameters(
        command=command[0], args=command[1:], env=env or server_env(), cwd=cwd
    )
    with (stderr or cwd.parent / "mcp-stderr.log").open("a") as log:
        transport = stdio_client(params, errlog=log)
        async with Client(transport, mode=mode, read_timeout_seconds=120) as client:  # type: ignore[arg-type]
            yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's answer, decoded (a tool error fails the test with its text)."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, f"{tool} failed: {text}"
    return json.loads(text)


async def tool_error(client: Client, tool: str, **arguments: Any) -> str:
    """The text of a tool error (fails the test when the call succeeded)."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error, f"{tool} should have failed, answered {text[:300]}"
    return text


async def wait_for(probe: Callable[[], Any], timeout: float, step: float = 0.3) -> Any:
    """Await `probe()` until it returns something truthy."""
    import anyio

    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {probe}")
        await anyio.sleep(step)


async def complete(client: Client, timeout: float = 120) -> dict[str, Any]:
    """Wait until index_status says every folder is ready with every tier complete."""

    async def done() -> dict[str, Any] | None:
        status = await call(client, "index_status")
        folders = status["folders"]
        ready = all(
            f["state"] == "ready"
            and all(t["done"] == t["total"] for t in f.get("tiers", {}).values())
            and f.get("chunks", 0) > 0
            for f in folders
        )
        return status if ready else None

    return await wait_for(done, timeout)


class RawPipe:
    """`codeask mcp` over raw JSON lines: for messages the SDK client refuses to send."""

    def __init__(
        self,
        cwd: Path,
        env: dict[str, str],
        *paths: Path | str,
        flags: tuple[str, ...] = (),
        stderr: Path | None = None,
    ) -> None:
        self.stderr = stderr or cwd.parent / "mcp-raw-stderr.log"
        with self.stderr.open("ab") as log:  # a file: a full pipe would block the server
            self.proc = subprocess.Popen(
                mcp_command(*paths, flags=flags),
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )
        self._ids = 0

    def send_line(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed stdout"
        return json.loads(line)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        self.send_line(
            json.dumps(
                {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
            ).encode()
        )
        return self.read()

    def start(self) -> RawPipe:
        """The 2025-era handshake."""
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"},
        }
        answer = self.request("initialize", init)
        assert "result" in answer, answer
        self.send_line(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        return self

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(30)
