"""What the daemon's MCP tests share: agents' environments, two repositories, the SDK's stdio
client from tests/mcp (real `codeask mcp` processes), and a look at a process from /proc."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from daemon_helpers import ENABLED, daemon_pid, processes_run_in

from support.mcp_harness import (
    TOOLS,
    RawPipe,
    build_project,
    call,
    complete,
    gitrepo,
    mcp_session,
    tool_error,
)

__all__ = [
    "TOOLS",
    "Agents",
    "RawPipe",
    "agent_env",
    "build_other_project",
    "build_project",
    "call",
    "complete",
    "forwarders",
    "hit_lines",
    "mcp_session",
    "tool_error",
]

#: Static vectors only: rankings do not move while a MiniLM backlog fills or a query model
#: loads, so an answer is right or wrong, never "not yet".
STATIC_ONLY = '["static"]'
#: Modules a forwarder must never load (the engine, the MCP SDK and what they pull in).
HEAVY = ("numpy", "pydantic_core", "onnxruntime", "tree_sitter", "msgspec")

OTHER_FILES = {
    "lib/ledger.py": '''"""Double-entry bookkeeping for the warehouse."""


def post_journal_entry(debit_account, credit_account, amount):
    """Record one balanced journal entry between two accounts."""
    return {"debit": debit_account, "credit": credit_account, "amount": amount}
''',
    "README.md": "# ledger\n\nBookkeeping for the warehouse.\n",
}


def agent_env(daemon_env: dict[str, str], *, enabled: bool = True) -> dict[str, str]:
    """An agent's environment: the test's runtime dir and cache, static vectors only."""
    env = dict(daemon_env, CODEASK_EMBED__TIERS=STATIC_ONLY, PYTHONUNBUFFERED="1")
    env[ENABLED] = "true" if enabled else "false"
    return env


class Agents:
    """Agents of one test's daemon: their environment (`agent_env`), the log their forwarders
    write to, and `two`, the two-session set-up the daemon's MCP tests share."""

    def __init__(self, daemon_env: dict[str, str], log: Path) -> None:
        self.env = agent_env(daemon_env)
        self.log = log

    @asynccontextmanager
    async def two(self, first_root: Path, second_root: Path) -> AsyncIterator[tuple[Any, Any, int]]:
        """Two agents (real `codeask mcp` processes, the SDK's stdio client) on these folders,
        each folder's index complete, both served by one daemon: (first, second, its pid)."""
        async with (
            mcp_session(first_root, env=self.env, stderr=self.log) as first,
            mcp_session(second_root, env=self.env, stderr=self.log) as second,
        ):
            await complete(first)
            if second_root != first_root:
                await complete(second)
            pid = daemon_pid(self.env)
            assert pid, "the agents run through the daemon"
            yield first, second, pid


def build_other_project(root: Path) -> Path:
    """A second repository, sharing no file or word with the first."""
    repo = gitrepo.make_repo(root)
    gitrepo.commit(repo, OTHER_FILES, "Start the ledger", gitrepo.CAROL, gitrepo.EPOCH)
    return root


def hit_lines(answer: dict[str, Any]) -> list[tuple[str, str]]:
    """What makes a search_code answer right: each hit's path and lines, in order."""
    return [(r["path"], r["lines"]) for r in answer["results"]]


def forwarders(env: dict[str, str]) -> list[int]:
    """The `codeask mcp` processes of `env` (this test's runtime dir) other than its daemon."""
    daemon = daemon_pid(env)
    found = []
    for pid in processes_run_in({env["XDG_RUNTIME_DIR"]}):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if pid != daemon and b"mcp" in command:
            found.append(pid)
    return found


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def loaded_heavy(pid: int) -> list[str]:
    """Heavy libraries mapped into `pid` (shared objects of the packages in HEAVY)."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return sorted({name for name in HEAVY if f"/{name}" in maps})
